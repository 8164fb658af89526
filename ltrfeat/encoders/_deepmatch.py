"""DeepMatch (Lu & Li 2013): an interaction model that scores a (query, document) pair directly.

Construction (paper section 3)
------------------------------
* **Parallel-text topics.** Every positive training pair becomes one joint document whose words come
  from two vocabularies (``q:hotel`` != ``d:hotel``); scikit-learn's online
  ``LatentDirichletAllocation`` is fitted on them at two resolutions (``topics=(fine, coarse)``). A
  topic trimmed to its ``patch_words`` most probable words on each side is a *patch*.
* **DAG.** Each coarse patch is linked to the fine patches sharing the most words with it: every one
  with a shared word, most-overlapping first, up to ``max_links``, and never fewer than ``min_links``
  (the paper's m). A fine patch left without a parent is linked to its most-overlapping coarse patch,
  so every fine patch reaches the output.

Network (section 3.4)
---------------------
* p-layer I: per fine patch p, ``K1`` local decisions ``f(x_p' Lx_p Ly_p' y_p + b)`` with low-rank
  factors of latent dimension ``latent``; x_p / y_p are the binary bags of the patch's query / document
  words. A patch is *active* only when both texts contain at least one of its words (Definition 3.1);
  inactive patches output exactly 0.
* p-layer II: per coarse patch, ``K2`` units over the decisions of its linked fine patches; a coarse
  unit is active when at least one of its fine patches is.
* A fully connected committee layer and one logistic output unit: the match score in (0, 1).
* Units: in each layer the first ``K // 2`` units are linear and the rest sigmoid (the paper's mix).

Only active (pair, patch) combinations are computed: the batch's words are expanded to the patch slots
they occupy, and the low-rank projections are summed with ``index_add`` over those slots, so an
inactive patch costs nothing and gets no gradient.

Training (section 4): large-margin loss ``max(0, m + s(x, y-) - s(x, y+))`` with ``m = 0.1`` on
(q, d+, d-) triples, d- drawn at random from the training documents (and optionally the same query's
lower-labelled documents), Adam, early stopping on validation NDCG@10 of the score -- samples,
negatives and the validation split are those of :func:`ltrfeat.encoders.training.train_encoder`.

Checkpoints are those of ``train_encoder`` too (an ``.ltrenc`` file of kind ``checkpoint`` rewritten
after every epoch): the network's state holds the patches and the DAG as buffers, so a resumed run
takes the fitted LDA patches from the checkpoint instead of refitting them, and equals the
uninterrupted run bit for bit.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from torch import nn

from ltrfeat.core.analysis import Analyzer
from ltrfeat.encoders.bundle import build_checked, read_bundle, write_bundle
from ltrfeat.encoders.config import DeepMatchConfig
from ltrfeat.encoders.encoder import check_texts, distinct
from ltrfeat.encoders.checkpoints import read_checkpoint_bundle
from ltrfeat.encoders.epochs import Loop
from ltrfeat.encoders.losses.hinge import HingeLoss
from ltrfeat.encoders.negatives import Sampler
from ltrfeat.encoders.trainer import Resumable, train_loop, trained_record, training_session
from ltrfeat.encoders.training_pairs import training_data, validate_pairs
from ltrfeat.encoders.validation import ndcg_at
from ltrfeat.core.errors import ModelFileError, ParameterError, TextTableError
from ltrfeat.encoders.hashing import TokenizedTexts
from ltrfeat.core.logs import show_progress

ARCHITECTURE = "deepmatch"
DEFAULT_ANALYZER = Analyzer(stopwords="english", stemmer="english")


# -- vocabularies and bags -------------------------------------------------------------------
def build_vocab(token_lists, *, min_df: int, max_size: int) -> list[str]:
    """Words in at least ``min_df`` texts, most frequent first (ties alphabetical), at most ``max_size``."""
    df = Counter(w for tokens in token_lists for w in set(tokens))
    words = sorted((w for w, n in df.items() if n >= min_df), key=lambda w: (-df[w], w))
    return words[:max_size]


def bags(token_lists, vocab: dict) -> TokenizedTexts:
    """Each text's distinct in-vocabulary word ids (sorted), as ragged arrays."""
    ids = [np.unique(np.fromiter((vocab[w] for w in tokens if w in vocab), dtype=np.int64)) for tokens in token_lists]
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in ids], out=offsets[1:])
    return TokenizedTexts(np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64), offsets)


def _indicator(bag: TokenizedTexts, n_cols: int) -> sp.csr_matrix:
    data = np.ones(len(bag.words), dtype=np.float64)
    return sp.csr_matrix((data, bag.words, bag.offsets), shape=(len(bag), n_cols))


# -- patches and the DAG ------------------------------------------------------------------------
def fit_topics(
    q_bag: TokenizedTexts,
    d_bag: TokenizedTexts,
    *,
    n_q: int,
    n_d: int,
    n_topics: int,
    patch_words: int,
    max_iter: int = 10,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """LDA over joint (query, document) word bags; each topic's top words per side, (T, N) ids, -1 padded."""
    from sklearn.decomposition import LatentDirichletAllocation

    joint = sp.hstack([_indicator(q_bag, n_q), _indicator(d_bag, n_d)], format="csr")
    lda = LatentDirichletAllocation(
        n_components=n_topics, learning_method="online", max_iter=max_iter, batch_size=1024, random_state=seed, n_jobs=1
    )
    lda.fit(joint)
    return (_top_words(lda.components_[:, :n_q], patch_words), _top_words(lda.components_[:, n_q:], patch_words))


def _top_words(weights: np.ndarray, n: int) -> np.ndarray:
    order = np.argsort(-weights, axis=1, kind="stable")[:, :n]
    if order.shape[1] < n:
        order = np.pad(order, ((0, 0), (0, n - order.shape[1])), constant_values=-1)
    return order.astype(np.int64)


def _membership(words: np.ndarray, n_vocab: int) -> np.ndarray:
    """(P, N) padded word ids -> bool (P, n_vocab)."""
    out = np.zeros((len(words), n_vocab), dtype=bool)
    rows, cols = np.nonzero(words >= 0)
    out[rows, words[rows, cols]] = True
    return out


def patch_overlap(
    coarse: tuple[np.ndarray, np.ndarray], fine: tuple[np.ndarray, np.ndarray], *, n_q: int, n_d: int
) -> np.ndarray:
    """Shared words (query side + document side) of every coarse and fine patch, (C, F)."""
    out = np.zeros((len(coarse[0]), len(fine[0])), dtype=np.int64)
    for c, f, n in ((coarse[0], fine[0], n_q), (coarse[1], fine[1], n_d)):
        out = out + _membership(c, n).astype(np.int64) @ _membership(f, n).astype(np.int64).T
    return out


def link_patches(overlap: np.ndarray, *, min_links: int, max_links: int) -> np.ndarray:
    """Fine patches under each coarse patch, (C, W) with -1 padding (see the module docstring)."""
    n_coarse, n_fine = overlap.shape
    if not 1 <= min_links <= max_links or min_links > n_fine:
        raise ValueError(
            f"need 1 <= min_links <= max_links and min_links <= {n_fine} fine patches "
            f"(got min_links={min_links}, max_links={max_links})"
        )
    order = np.argsort(-overlap, axis=1, kind="stable")
    n_take = np.clip((overlap > 0).sum(1), min_links, max_links)
    children = [list(order[c, : n_take[c]]) for c in range(n_coarse)]
    linked = np.zeros(n_fine, dtype=bool)
    for kids in children:
        linked[kids] = True
    for f in np.flatnonzero(~linked):
        children[int(np.argmax(overlap[:, f]))].append(int(f))
    width = max(len(k) for k in children)
    return np.array([k + [-1] * (width - len(k)) for k in children], dtype=np.int64)


# -- the network ------------------------------------------------------------------------------
def _mixed(x: torch.Tensor) -> torch.Tensor:
    """First ``K // 2`` units of the last axis linear, the rest sigmoid."""
    n_lin = x.shape[-1] // 2
    return torch.cat([x[..., :n_lin], torch.sigmoid(x[..., n_lin:])], dim=-1)


@dataclass
class PairBatch:
    """Active (pair, patch) structure of a batch of pairs (built by :meth:`DeepMatchNet.batch`)."""

    n_pairs: int
    active: np.ndarray  # active (pair, fine patch) keys pair * P + patch, sorted
    q_rows: np.ndarray  # per query-side slot entry: row in ``active``
    q_slots: np.ndarray  # its flat slot patch * N + position
    d_rows: np.ndarray
    d_slots: np.ndarray
    active2: np.ndarray  # active (pair, coarse patch) keys pair * C + patch, sorted


class DeepMatchNet(nn.Module):
    """p-layer I, p-layer II, committee layer and logistic output over fixed patches and links.

    The patches (``fine_q``, ``fine_d``, ``coarse_q``, ``coarse_d``: padded word ids) and the DAG
    (``links``) are buffers, so they travel with the state dict.
    """

    def __init__(self, config: dict):
        super().__init__()
        self.config = config
        n_fine, n_coarse, n = config["n_fine"], config["n_coarse"], config["patch_words"]
        k1, k2 = config["units"]
        latent, width = config["latent"], config["link_width"]
        for name, rows in (("fine_q", n_fine), ("fine_d", n_fine), ("coarse_q", n_coarse), ("coarse_d", n_coarse)):
            self.register_buffer(name, torch.full((rows, n), -1, dtype=torch.int64))
        self.register_buffer("links", torch.full((n_coarse, width), -1, dtype=torch.int64))
        self.lx = nn.Parameter(torch.randn(n_fine * n, k1 * latent) * 0.3)
        self.ly = nn.Parameter(torch.randn(n_fine * n, k1 * latent) * 0.3)
        self.b1 = nn.Parameter(torch.zeros(n_fine, k1))
        self.w2 = nn.Parameter(torch.randn(n_coarse, width, k1, k2) / np.sqrt(width * k1))
        self.b2 = nn.Parameter(torch.zeros(n_coarse, k2))
        self.committee = nn.Linear(n_coarse * k2, config["committee"])
        self.out = nn.Linear(config["committee"], 1)
        self._tables = None

    def set_structure(self, fine, coarse, links) -> None:
        """Install the patches ((q, d) padded id arrays) and the DAG."""
        for name, value in (
            ("fine_q", fine[0]),
            ("fine_d", fine[1]),
            ("coarse_q", coarse[0]),
            ("coarse_d", coarse[1]),
            ("links", links),
        ):
            getattr(self, name).copy_(torch.as_tensor(value))
        self._tables = None

    def _slot_tables(self):
        """Per side: word id -> flat patch slots holding it (CSR), and the link mask."""
        if self._tables is None:
            tables = []
            sides = ((self.fine_q, self.config["n_query_words"]), (self.fine_d, self.config["n_doc_words"]))
            for words, n_vocab in sides:
                flat = words.numpy().ravel()
                slots = np.flatnonzero(flat >= 0)
                order = np.argsort(flat[slots], kind="stable")
                slots = slots[order]
                indptr = np.zeros(n_vocab + 1, dtype=np.int64)
                np.cumsum(np.bincount(flat[slots], minlength=n_vocab), out=indptr[1:])
                tables.append((indptr, slots))
            links = self.links.numpy()
            self._tables = (tables, links.clip(min=0), links >= 0)
        return self._tables

    def load_state_dict(self, *args, **kwargs):
        self._tables = None
        return super().load_state_dict(*args, **kwargs)

    def batch(self, q_bag: TokenizedTexts, d_bag: TokenizedTexts) -> PairBatch:
        """The active structure of aligned query / document bags (numpy, no autograd)."""
        (q_table, d_table), links, link_mask = self._slot_tables()
        n_pairs, n_fine, n = len(q_bag), self.config["n_fine"], self.config["patch_words"]
        q_pair, q_slots = _expand(q_bag, *q_table)
        d_pair, d_slots = _expand(d_bag, *d_table)
        q_keys, d_keys = q_pair * n_fine + q_slots // n, d_pair * n_fine + d_slots // n
        active = np.intersect1d(q_keys, d_keys)
        keep_q, keep_d = np.isin(q_keys, active), np.isin(d_keys, active)
        fine_on = np.zeros((n_pairs, n_fine), dtype=bool)
        fine_on.ravel()[active] = True
        coarse_on = (fine_on[:, links] & link_mask).any(axis=2)
        return PairBatch(
            n_pairs,
            active,
            np.searchsorted(active, q_keys[keep_q]),
            q_slots[keep_q],
            np.searchsorted(active, d_keys[keep_d]),
            d_slots[keep_d],
            np.flatnonzero(coarse_on),
        )

    def forward(self, b: PairBatch) -> torch.Tensor:
        """Match scores (n_pairs,) in (0, 1)."""
        cfg = self.config
        n_fine, n_coarse = cfg["n_fine"], cfg["n_coarse"]
        k1, k2 = cfg["units"]
        _, links, link_mask = self._slot_tables()
        t = torch.from_numpy
        n_active = len(b.active)
        ux = torch.zeros(n_active, self.lx.shape[1]).index_add(0, t(b.q_rows), self.lx[t(b.q_slots)])
        uy = torch.zeros(n_active, self.ly.shape[1]).index_add(0, t(b.d_rows), self.ly[t(b.d_slots)])
        pot1 = (ux * uy).view(n_active, k1, cfg["latent"]).sum(-1) + self.b1[t(b.active % n_fine)]
        s1 = torch.zeros(b.n_pairs * n_fine, k1).index_copy(0, t(b.active), _mixed(pot1)).view(b.n_pairs, n_fine, k1)
        pair2, coarse2 = b.active2 // n_coarse, b.active2 % n_coarse
        phi = s1[t(pair2)[:, None], t(links[coarse2])] * t(link_mask[coarse2]).unsqueeze(-1)  # (A2, W, K1)
        pot2 = torch.einsum("awk,awkj->aj", phi, self.w2[t(coarse2)]) + self.b2[t(coarse2)]
        s2 = torch.zeros(b.n_pairs * n_coarse, k2).index_copy(0, t(b.active2), _mixed(pot2))
        hidden = _mixed(self.committee(s2.view(b.n_pairs, n_coarse * k2)))
        return torch.sigmoid(self.out(hidden)).squeeze(-1)


def _expand(bag: TokenizedTexts, indptr: np.ndarray, slots: np.ndarray):
    """(pair index, flat slot) for every patch slot holding one of each text's words."""
    words = bag.words
    pair = np.repeat(np.arange(len(bag)), bag.lengths)
    starts = indptr[words]
    counts = indptr[words + 1] - starts
    ends = np.cumsum(counts)
    pos = np.repeat(starts - ends + counts, counts) + np.arange(int(ends[-1]) if len(ends) else 0)
    return np.repeat(pair, counts), slots[pos]


# -- the trained model ------------------------------------------------------------------------
class DeepMatch:
    """A trained DeepMatch model: analyzer, two vocabularies, patch network, training record.

    It scores pairs (:meth:`similarity`); there are no per-text vectors to cache.
    """

    def __init__(
        self, *, analyzer: Analyzer, query_vocab: list, doc_vocab: list, net: DeepMatchNet, training: dict | None = None
    ):
        self.analyzer = analyzer
        self.query_vocab = list(query_vocab)
        self.doc_vocab = list(doc_vocab)
        self.net = net
        self.training = training or {}
        self._index = ({w: i for i, w in enumerate(self.query_vocab)}, {w: i for i, w in enumerate(self.doc_vocab)})

    def bags(self, texts, side: str) -> TokenizedTexts:
        """Distinct in-vocabulary word ids of each text on one side (``"query"`` or ``"doc"``)."""
        return bags(self.analyzer.analyze(texts), self._index[0 if side == "query" else 1])

    def similarity(self, queries, docs, *, batch_size: int = 4096) -> np.ndarray:
        """Match score of each aligned (query, doc) pair, float32 (n,)."""
        queries, docs = check_texts(queries, "query"), check_texts(docs, "doc")
        if len(queries) != len(docs):
            raise ValueError(f"{len(queries)} queries but {len(docs)} documents: the lists must be aligned")
        uq, qi = distinct(queries)
        ud, di = distinct(docs)
        return score_rows(self.net, self.bags(uq, "query"), self.bags(ud, "doc"), qi, di, batch_size=batch_size)

    def header(self) -> dict:
        return {
            "model": self.net.config,
            "analyzer": self.analyzer.to_json(),
            "vocab": {"query": self.query_vocab, "doc": self.doc_vocab},
            "training": self.training,
        }

    def save(self, path) -> None:
        """Write the ``.ltrenc`` bundle (atomically; JSON header + safetensors, no pickle)."""
        write_bundle(path, kind="encoder", header=self.header(), tensors=self.net.state_dict())

    @classmethod
    def from_parts(cls, header: dict, tensors: dict, *, path=None) -> "DeepMatch":
        config = header.get("model") or {}
        if config.get("architecture") != ARCHITECTURE:
            raise ModelFileError(
                f"the bundle holds a {config.get('architecture')} encoder, not {ARCHITECTURE}",
                path=path,
                fix=f"write {config.get('architecture')}={path}",
            )
        try:
            net = build_checked(DeepMatchNet, config, tensors, path=path, what="DeepMatch")
            net.load_state_dict(tensors, strict=True)
            model = cls(
                analyzer=Analyzer.from_json(header["analyzer"]),
                query_vocab=header["vocab"]["query"],
                doc_vocab=header["vocab"]["doc"],
                net=net,
                training=header.get("training") or {},
            )
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            problem = " ".join(str(exc).split())[:300]
            raise ModelFileError(
                f"DeepMatch bundle does not match its model config: {problem}",
                path=path,
                fix="the file is damaged or from an incompatible ltrfeat; retrain it",
            ) from None
        in_range = (
            int(net.fine_q.max()) < len(model.query_vocab)
            and int(net.fine_d.max()) < len(model.doc_vocab)
            and int(net.links.max()) < config["n_fine"]
        )
        if (len(model.query_vocab), len(model.doc_vocab)) != (
            config["n_query_words"],
            config["n_doc_words"],
        ) or not in_range:
            raise ModelFileError(
                "vocabulary, patches and model input size disagree", path=path, fix="the file is damaged; retrain it"
            )
        net.eval()
        return model

    @classmethod
    def load(cls, path) -> "DeepMatch":
        """Read a DeepMatch ``.ltrenc`` bundle; never unpickles."""
        header, tensors = read_bundle(path, kind="encoder")
        return cls.from_parts(header, tensors, path=path)


def score_rows(
    net: DeepMatchNet, q_bags: TokenizedTexts, d_bags: TokenizedTexts, q_rows, d_rows, *, batch_size: int = 4096
) -> np.ndarray:
    """Scores of the pairs (q_bags[q_rows[i]], d_bags[d_rows[i]]) without autograd."""
    out = np.zeros(len(q_rows), dtype=np.float32)
    was_training = net.training
    net.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(q_rows), batch_size):
                q, d = q_rows[start : start + batch_size], d_rows[start : start + batch_size]
                out[start : start + len(q)] = net(net.batch(q_bags.take(q), d_bags.take(d))).numpy()
    finally:
        net.train(was_training)
    return out


# -- training -------------------------------------------------------------------------------
def train_deepmatch(
    pairs: pd.DataFrame,
    config: DeepMatchConfig | None = None,
    *,
    analyzer: Analyzer | None = None,
    threads: int | None = None,
    checkpoint=None,
    resume=None,
    progress: bool | None = None,
    **options,
) -> tuple[DeepMatch, list[dict]]:
    """Fit patches, DAG and network on judged pairs; returns the model (best validation epoch) and history.

    Parameters
    ----------
    pairs : DataFrame with ``query``, ``doc``, ``label`` and optionally ``qid`` (as for ``train_encoder``).
    config : a :class:`~ltrfeat.encoders.config.DeepMatchConfig` (default: its defaults).
    **options : settings of the config to replace, e.g. ``epochs=5``, checked like the config itself (each one
        described in :class:`~ltrfeat.encoders.config.DeepMatchConfig`).
    analyzer : word analyzer (default: lowercase, English stopwords, Porter2 stemming).
    threads : torch threads (default: the cores available to the process).
    checkpoint : path rewritten after every epoch (a resumable ``.ltrenc`` checkpoint with the LDA
        patches, the DAG, weights, optimizer and random states).
    resume : a checkpoint of a run with the same pairs and parameters to continue from (LDA is not
        refitted); the result equals an uninterrupted run.
    progress : show progress bars (default: stderr is a terminal and ``CI`` is unset).
    """
    cfg = DeepMatchConfig.build(config, options)
    min_df, max_vocab, seed = cfg.min_df, cfg.max_vocab, cfg.seed
    if progress is None:
        progress = show_progress()
    analyzer = analyzer or DEFAULT_ANALYZER
    pairs = validate_pairs(pairs)
    if "weight" in pairs:
        raise ParameterError(
            "DeepMatch takes no sample weights (the training table has a weight column)",
            fix="train a clsm or dssm encoder, or drop the weights",
        )
    params = {"model": ARCHITECTURE, **cfg.to_dict(), "analyzer": analyzer.to_json()}
    loss = HingeLoss(margin=cfg.margin)  # the paper's large-margin loss
    data_sha, data, rows = training_data(pairs, cfg, loss)
    tr = np.flatnonzero(data.train)
    q_tokens, d_tokens = analyzer.analyze(data.queries), analyzer.analyze(data.docs)
    q_vocab = build_vocab([q_tokens[i] for i in np.unique(data.q_idx[tr])], min_df=min_df, max_size=max_vocab)
    d_vocab = build_vocab([d_tokens[i] for i in np.unique(data.d_idx[tr])], min_df=min_df, max_size=max_vocab)
    if not q_vocab or not d_vocab:
        raise TextTableError(
            f"no word occurs in {min_df} or more training {'queries' if not q_vocab else 'documents'}",
            fix="give more training pairs or lower min_df",
        )
    q_bags = bags(q_tokens, {w: i for i, w in enumerate(q_vocab)})
    d_bags = bags(d_tokens, {w: i for i, w in enumerate(d_vocab)})

    with training_session(threads, seed) as rng:
        if resume is None:
            t0 = time.perf_counter()
            net = _fit_net(cfg, data, rows, q_bags, d_bags, n_q=len(q_vocab), n_d=len(d_vocab))
            lda_seconds = round(time.perf_counter() - t0, 3)
        else:
            net = _checkpoint_net(resume, params=params, data_sha=data_sha)
        opt = torch.optim.Adam(net.parameters(), lr=3e-3 if cfg.lr is None else cfg.lr, fused=True)
        sampler = Sampler(data, rows)
        val = np.flatnonzero(~data.train)

        def validate():
            if len(val) == 0:
                return float("nan")
            scores = score_rows(net, q_bags, d_bags, data.q_idx[val], data.d_idx[val])
            return ndcg_at(scores, data.rel[val], data.q_idx[val], k=10)

        def step(batch):
            q, d, y = data.q_idx[batch], data.d_idx[batch], data.y[batch]
            cand, ok = sampler.candidates(
                rng, np.searchsorted(rows, batch), q, d, y, negatives=cfg.negatives, hard=cfg.hard_negatives
            )
            docs = np.concatenate([d[:, None], cand], axis=1)
            queries = np.repeat(q[:, None], docs.shape[1], axis=1)
            scores = net(net.batch(q_bags.take(queries.ravel()), d_bags.take(docs.ravel()))).view(docs.shape)
            return loss(scores[:, 0], scores[:, 1:], mask=torch.from_numpy(ok))

        header = {"model": net.config, "params": params, "data_sha256": data_sha}
        resumable = Resumable(params, data_sha, header, checkpoint, resume)
        run, _ = train_loop(
            Loop(net, opt, rng, rows, step=step, validate=validate),
            cfg,
            resumable,
            progress=progress,
            desc="deepmatch epoch",
            seconds=lda_seconds if resume is None else 0.0,
        )
    record = trained_record(pairs, data, rows, run, resumable)
    model = DeepMatch(analyzer=analyzer, query_vocab=q_vocab, doc_vocab=d_vocab, net=net, training=record)
    return model, run.history


def _fit_net(cfg: DeepMatchConfig, data, rows, q_bags: TokenizedTexts, d_bags: TokenizedTexts, *, n_q: int, n_d: int):
    """The untrained network over the patches LDA fits on (a seeded sample of) the distinct positive pairs
    ``rows``, at the fine and the coarse resolution, and the DAG linking them."""
    n_fine, n_coarse = (int(t) for t in cfg.topics)
    seed, patch_words, min_links = cfg.seed, cfg.patch_words, cfg.min_links
    positive = np.unique(np.stack([data.q_idx[rows], data.d_idx[rows]], axis=1), axis=0)
    if len(positive) > cfg.lda_docs:
        sample = np.random.default_rng([seed, 2]).choice(len(positive), cfg.lda_docs, replace=False)
        positive = positive[np.sort(sample)]
    pq, pd_ = q_bags.take(positive[:, 0]), d_bags.take(positive[:, 1])
    fine, coarse = (
        fit_topics(pq, pd_, n_q=n_q, n_d=n_d, n_topics=n, patch_words=patch_words, max_iter=cfg.lda_iter, seed=s)
        for n, s in ((n_fine, seed), (n_coarse, seed + 1))
    )
    links = link_patches(
        patch_overlap(coarse, fine, n_q=n_q, n_d=n_d),
        min_links=min(min_links, n_fine),
        max_links=max(cfg.max_links, min(min_links, n_fine)),
    )
    net_config = {
        "architecture": ARCHITECTURE,
        "n_fine": n_fine,
        "n_coarse": n_coarse,
        "patch_words": patch_words,
        "units": [int(u) for u in cfg.units],
        "latent": cfg.latent,
        "committee": cfg.committee,
        "link_width": int(links.shape[1]),
        "n_query_words": n_q,
        "n_doc_words": n_d,
    }
    net = DeepMatchNet(net_config)
    net.set_structure(fine, coarse, links)
    return net


def _checkpoint_net(path, *, params: dict, data_sha: str) -> DeepMatchNet:
    """The network (its config, patches and DAG) of a checkpoint written for these params and data."""
    header, _ = read_checkpoint_bundle(path, params=params, data_sha=data_sha)
    try:
        return DeepMatchNet(header["model"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(
            f"checkpoint does not hold a DeepMatch model ({exc})", path=path, fix="train from scratch"
        ) from None
