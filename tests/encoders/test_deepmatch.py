"""DeepMatch: patch gating, the DAG's minimum-links rule, the sparse forward against a direct one,
training, bundles, and the extract / cross-fitting / CLI integrations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrfeat.cli.main import cli
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.experiments.crossfit import crossfit_columns
from ltrfeat.experiments.fold_plans import plan_folds
from ltrfeat.encoders._deepmatch import (
    DeepMatch,
    DeepMatchNet,
    _mixed,
    bags,
    link_patches,
    patch_overlap,
    train_deepmatch,
)
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.features.neural import EncoderExtractor
from builders import TINY, train_until_interrupted

PATCH_PARAMS = ("lx", "ly", "b1", "w2", "b2")


def make_pairs(n_topics=4, n_queries=48, seed=0) -> pd.DataFrame:
    """Topics whose queries and documents use different made-up words: only interactions can match them."""
    rng = np.random.default_rng(seed)
    q_words = [[f"q{t}w{i}" for i in range(3)] for t in range(n_topics)]
    d_words = [[f"d{t}w{i}" for i in range(4)] for t in range(n_topics)]
    docs = [(t, " ".join(rng.choice(d_words[t], 2, replace=False))) for t in range(n_topics) for _ in range(6)]
    rows = []
    for i in range(n_queries):
        topic = i % n_topics
        query = " ".join(rng.choice(q_words[topic], 2, replace=False))
        same = [j for j, (t, _) in enumerate(docs) if t == topic]
        other = [j for j, (t, _) in enumerate(docs) if t != topic]
        for j, label in [(j, 2) for j in rng.choice(same, 2, replace=False)] + [
            (j, 0) for j in rng.choice(other, 3, replace=False)
        ]:
            rows.append((f"q{i}", query, docs[j][1], label))
    return pd.DataFrame(rows, columns=["qid", "query", "doc", "label"]).drop_duplicates(["qid", "doc"])


@pytest.fixture(scope="module")
def trained():
    return train_deepmatch(make_pairs(), seed=0, **TINY)


def small_net(seed=0) -> DeepMatchNet:
    """Two fine patches, one coarse: fine 0 = q{0,1} x d{0,1}, fine 1 = q{2,3} x d{2,3}."""
    torch.manual_seed(seed)
    config = {
        "architecture": "deepmatch",
        "n_fine": 2,
        "n_coarse": 1,
        "patch_words": 2,
        "units": [2, 2],
        "latent": 3,
        "committee": 4,
        "link_width": 2,
        "n_query_words": 4,
        "n_doc_words": 4,
    }
    net = DeepMatchNet(config)
    fine = (np.array([[0, 1], [2, 3]]), np.array([[0, 1], [2, 3]]))
    net.set_structure(fine, (np.array([[0, 2]]), np.array([[1, 3]])), np.array([[0, 1]]))
    return net


def bag(*word_lists):
    return bags([[str(w) for w in words] for words in word_lists], {str(i): i for i in range(4)})


# -- gating --------------------------------------------------------------------------------------
def test_pair_sharing_no_patch_words_gets_the_bias_only_score_and_no_patch_gradient():
    net = small_net()
    # the query has patch-0 words, the document only patch-1 words: no patch overlaps both texts
    score = net(net.batch(bag([0, 1]), bag([2, 3])))
    bias_only = torch.sigmoid(net.out(_mixed(net.committee.bias))).squeeze(-1)
    assert torch.allclose(score, bias_only)
    score.sum().backward()
    for name in PATCH_PARAMS:
        grad = getattr(net, name).grad
        assert grad is None or torch.count_nonzero(grad) == 0, name
    assert torch.count_nonzero(net.committee.bias.grad) > 0


def test_only_the_overlapping_patch_gets_gradient():
    net = small_net()
    net(net.batch(bag([0]), bag([1]))).sum().backward()  # overlaps fine patch 0 only
    rows = net.lx.grad.abs().sum(1)  # rows are patch * patch_words + slot
    assert rows[:2].sum() > 0 and rows[2:].sum() == 0
    assert net.b1.grad[0].abs().sum() > 0 and net.b1.grad[1].abs().sum() == 0


def reference_scores(net: DeepMatchNet, q_sets, d_sets) -> torch.Tensor:
    """Equations (4)-(6) of the paper pair by pair, with dense per-patch loops."""
    cfg = net.config
    k1, k2 = cfg["units"]
    fine_q, fine_d, links = net.fine_q.numpy(), net.fine_d.numpy(), net.links.numpy()
    out = []
    for qs, ds in zip(q_sets, d_sets):
        s1 = torch.zeros(cfg["n_fine"], k1)
        for p in range(cfg["n_fine"]):
            x = torch.tensor([float(w in qs) for w in fine_q[p]])
            y = torch.tensor([float(w in ds) for w in fine_d[p]])
            if x.sum() == 0 or y.sum() == 0:
                continue
            rows = slice(p * cfg["patch_words"], (p + 1) * cfg["patch_words"])
            lx, ly = net.lx[rows].view(-1, k1, cfg["latent"]), net.ly[rows].view(-1, k1, cfg["latent"])
            pot = torch.einsum("n,nkd->kd", x, lx).mul(torch.einsum("n,nkd->kd", y, ly)).sum(-1) + net.b1[p]
            s1[p] = _mixed(pot)
        s2 = torch.zeros(cfg["n_coarse"], k2)
        for c in range(cfg["n_coarse"]):
            kids = [f for f in links[c] if f >= 0]
            if s1[kids].abs().sum() == 0:
                continue
            pot = sum(s1[f] @ net.w2[c, i] for i, f in enumerate(links[c]) if f >= 0) + net.b2[c]
            s2[c] = _mixed(pot)
        out.append(torch.sigmoid(net.out(_mixed(net.committee(s2.reshape(-1))))))
    return torch.cat(out)


def test_sparse_forward_matches_the_direct_computation(trained):
    model, _ = trained
    pairs = make_pairs(seed=5)
    q_bags, d_bags = model.bags(pairs["query"], "query"), model.bags(pairs["doc"], "doc")
    with torch.no_grad():
        fast = model.net(model.net.batch(q_bags, d_bags))
        q_sets = [set(q_bags.words[a:b].tolist()) for a, b in zip(q_bags.offsets[:-1], q_bags.offsets[1:])]
        d_sets = [set(d_bags.words[a:b].tolist()) for a, b in zip(d_bags.offsets[:-1], d_bags.offsets[1:])]
        slow = reference_scores(model.net, q_sets, d_sets)
    assert torch.allclose(fast, slow, atol=1e-6)
    assert len(set(np.round(fast.numpy(), 6))) > 2  # not all bias-only


# -- the DAG -------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 12), st.integers(1, 4), st.integers(0, 4), st.integers(0, 2**31 - 1))
def test_every_coarse_patch_gets_at_least_m_links_to_its_most_overlapping_fine_patches(
    n_coarse, n_fine, m, extra, seed
):
    m = min(m, n_fine)
    overlap = np.random.default_rng(seed).integers(0, 4, size=(n_coarse, n_fine))
    links = link_patches(overlap, min_links=m, max_links=m + extra)
    for c in range(n_coarse):
        kids = [f for f in links[c] if f >= 0]
        assert len(kids) == len(set(kids)) >= m
        chosen = kids[: max(m, min(m + extra, int((overlap[c] > 0).sum())))]
        others = np.setdiff1d(np.arange(n_fine), chosen)
        if len(others):
            assert overlap[c, chosen].min() >= overlap[c, others].max()
    assert set(links[links >= 0].tolist()) == set(range(n_fine))  # no fine patch is left unreachable


def test_link_patches_rejects_impossible_minimum():
    with pytest.raises(ValueError, match="min_links"):
        link_patches(np.ones((2, 3), dtype=int), min_links=4, max_links=5)


def test_patch_overlap_counts_shared_words_on_both_sides():
    coarse = (np.array([[0, 1, -1]]), np.array([[2, 3, 4]]))
    fine = (np.array([[1, 5, 6], [7, 8, -1]]), np.array([[3, 4, 0], [9, 2, 1]]))
    assert patch_overlap(coarse, fine, n_q=10, n_d=10).tolist() == [[1 + 2, 0 + 1]]


# -- training and bundles ------------------------------------------------------------------------
def test_training_learns_and_is_reproducible(trained):
    model, history = trained
    pairs = make_pairs(seed=1)
    scores = model.similarity(pairs["query"], pairs["doc"])
    assert scores.dtype == np.float32
    assert scores[pairs["label"] > 0].mean() > scores[pairs["label"] == 0].mean() + 0.1
    assert history[-1]["train_loss"] < history[1]["train_loss"]
    again, _ = train_deepmatch(make_pairs(), seed=0, **TINY)
    assert np.array_equal(again.similarity(pairs["query"], pairs["doc"]), scores)


def test_bundle_round_trip(trained, tmp_path):
    model, _ = trained
    model.save(tmp_path / "dm.ltrenc")
    loaded = DeepMatch.load(tmp_path / "dm.ltrenc")
    pairs = make_pairs(seed=2)
    expected = model.similarity(pairs["query"], pairs["doc"])
    assert np.array_equal(loaded.similarity(pairs["query"], pairs["doc"]), expected)
    assert loaded.query_vocab == model.query_vocab and loaded.training["best_epoch"] == model.training["best_epoch"]
    assert loaded.header()["model"] == model.header()["model"]


def test_loading_a_non_deepmatch_file_fails_clearly(tmp_path):
    from ltrfeat.encoders.bundle import write_bundle

    write_bundle(tmp_path / "x.ltrenc", kind="encoder", header={"model": {"architecture": "clsm"}}, tensors={})
    with pytest.raises(ModelFileError, match="clsm encoder, not deepmatch"):
        DeepMatch.load(tmp_path / "x.ltrenc")
    (tmp_path / "junk.ltrenc").write_bytes(b"not a bundle at all")
    with pytest.raises(ModelFileError, match="not an .ltrenc"):
        DeepMatch.load(tmp_path / "junk.ltrenc")


def test_similarity_rejects_misaligned_or_missing_texts(trained):
    model, _ = trained
    with pytest.raises(ValueError, match="aligned"):
        model.similarity(["a"], ["b", "c"])
    with pytest.raises(LtrfeatError, match="not a string"):
        model.similarity(["a", None], ["b", "c"])
    # texts without a vocabulary word are scored (bias-only), not rejected
    assert model.similarity(["zzz"], ["yyy"]).shape == (1,)


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="topics"):
        train_deepmatch(make_pairs(), **{**TINY, "topics": (2, 5)})
    with pytest.raises(ValueError, match="margin"):
        train_deepmatch(make_pairs(), **{**TINY, "margin": 1.5})


# -- integrations --------------------------------------------------------------------------------
def test_extractor_emits_deepmatch_field_score(trained, tmp_path):
    model, _ = trained
    model.save(tmp_path / "dm.ltrenc")
    pairs = make_pairs(seed=3).rename(columns={"doc": "title"})
    ext = EncoderExtractor(name="deepmatch", path=str(tmp_path / "dm.ltrenc"), field="title").fit()
    assert ext.feature_names() == ["deepmatch_title_score"]
    assert np.array_equal(ext.transform(pairs)[:, 0], model.similarity(pairs["query"], pairs["title"]))


def test_crossfit_accepts_deepmatch_and_rbm_specs():
    assert EncoderSpec.parse("deepmatch") == EncoderSpec("deepmatch")
    spec = EncoderSpec.parse("dssm:hinge+rbm")
    assert (spec.model, spec.loss, spec.pretrain, spec.name) == ("dssm", "hinge", "rbm", "dssm-hinge-rbm")
    for bad in ("deepmatch:hinge", "clsm:softmax+rbm", "dssm:hinge+pca"):
        with pytest.raises(LtrfeatError):
            EncoderSpec.parse(bad)


def test_crossfit_trains_deepmatch_per_fold():
    pairs = make_pairs(n_queries=24).assign(docid=lambda t: t["doc"])
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    options = {k: v for k, v in TINY.items() if k not in ("progress",)} | {"epochs": 1}
    columns = crossfit_columns(pairs, plans, [EncoderSpec.parse("deepmatch")], options=options, progress=False)
    for plan in plans:
        values = columns[plan.name]["deepmatch_doc_score"]
        rows = np.isin(pairs["qid"], list(plan.test | plan.train | plan.valid))
        assert np.isfinite(values[rows]).all()


def train_encoder_args(tmp_path, *, epochs: int) -> tuple[list[str], Path]:
    """``ltrfeat train-encoder`` arguments of a small DeepMatch (pairs written into ``tmp_path``), ``--out`` last,
    and the bundle path."""
    path, out = tmp_path / "pairs.tsv", tmp_path / "dm.ltrenc"
    make_pairs().to_csv(path, sep="\t", index=False)
    options = ["--topics", "6,3", "--patch-words", "4", "--epochs", str(epochs), "--batch-size", "16", "--threads", "1"]
    return ["train-encoder", str(path), "--model", "deepmatch", *options, "--json", "--out", str(out)], out


def test_cli_train_encoder_deepmatch(tmp_path):
    args, out = train_encoder_args(tmp_path, epochs=1)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["out"] == str(out)
    assert DeepMatch.load(out).net.config["n_fine"] == 6
    bad = CliRunner().invoke(cli, [*args[:-2], "--topics", "6", "--out", str(tmp_path / "x.ltrenc")])
    assert bad.exit_code == 2 and "FINE,COARSE" in bad.output
    assert not (tmp_path / "x.ltrenc").exists()


def test_cli_extract_emits_deepmatch_title_score(trained, tmp_path):
    model, _ = trained
    model.save(tmp_path / "dm.ltrenc")
    pairs = make_pairs(seed=4).rename(columns={"doc": "title"})
    pairs.to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    out = tmp_path / "out.letor"
    result = CliRunner().invoke(
        cli,
        [
            "extract",
            "--pairs",
            str(tmp_path / "pairs.tsv"),
            "--columns",
            "doc=title",
            "--encoder",
            f"deepmatch={tmp_path / 'dm.ltrenc'}",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    names = json.loads((tmp_path / "out.letor.features.json").read_text())
    assert "deepmatch_doc_score" in json.dumps(names)


def test_bundle_with_patch_ids_outside_the_vocabulary_is_rejected(trained, tmp_path):
    from ltrfeat.encoders.bundle import write_bundle

    model, _ = trained
    tensors = dict(model.net.state_dict())
    tensors["fine_q"] = tensors["fine_q"].clone().fill_(len(model.query_vocab))
    write_bundle(tmp_path / "bad.ltrenc", kind="encoder", header=model.header(), tensors=tensors)
    with pytest.raises(ModelFileError, match="disagree"):
        DeepMatch.load(tmp_path / "bad.ltrenc")


def test_resume_equals_an_uninterrupted_run_without_refitting_lda(tmp_path, monkeypatch):
    from ltrfeat.encoders import _deepmatch

    pairs, opts = make_pairs(), {**TINY, "epochs": 3, "hard_negatives": 1}
    full, full_history = train_deepmatch(pairs, seed=0, **opts)
    train_until_interrupted(
        monkeypatch, epoch=1, train=lambda: train_deepmatch(pairs, seed=0, checkpoint=tmp_path / "dm.ckpt", **opts)
    )

    def no_lda(*args, **kwargs):
        raise AssertionError("LDA refitted on resume")

    monkeypatch.setattr(_deepmatch, "fit_topics", no_lda)
    resumed, history = train_deepmatch(
        pairs, seed=0, checkpoint=tmp_path / "dm.ckpt", resume=tmp_path / "dm.ckpt", **opts
    )
    assert [h["val_ndcg@10"] for h in history] == [h["val_ndcg@10"] for h in full_history]
    assert resumed.training["best_epoch"] == full.training["best_epoch"]
    for key, value in full.net.state_dict().items():  # weights and the patches / DAG buffers
        assert torch.equal(value, resumed.net.state_dict()[key]), key
    with pytest.raises(ModelFileError, match="other training data or options"):
        train_deepmatch(pairs, seed=0, resume=tmp_path / "dm.ckpt", **{**opts, "margin": 0.2})
    with pytest.raises(ModelFileError, match="other training data or options"):
        train_deepmatch(pairs.iloc[:-1], seed=0, resume=tmp_path / "dm.ckpt", **opts)


def test_text_encoder_checkpoint_is_refused_for_deepmatch(tmp_path):
    from ltrfeat.encoders.training import train_encoder

    pairs = make_pairs()
    train_encoder(
        pairs,
        model="dssm",
        sizes={"hidden": [8], "out": 4},
        epochs=1,
        batch_size=16,
        threads=1,
        progress=False,
        checkpoint=tmp_path / "t.ckpt",
    )
    with pytest.raises(ModelFileError, match="other training data or options"):
        train_deepmatch(pairs, seed=0, resume=tmp_path / "t.ckpt", **TINY)


def test_cli_deepmatch_checkpoint_and_resume(tmp_path):
    args, _ = train_encoder_args(tmp_path, epochs=2)
    first = CliRunner().invoke(cli, [*args, "--checkpoint", str(tmp_path / "keep.ckpt")])
    assert first.exit_code == 0, first.output
    assert (tmp_path / "keep.ckpt").exists() and not (tmp_path / "dm.ltrenc.ckpt").exists()
    again = CliRunner().invoke(cli, [*args, "--resume", str(tmp_path / "keep.ckpt")])
    assert again.exit_code == 0, again.output
    assert (
        json.loads(again.output.strip().splitlines()[-1])["epochs"]
        == json.loads(first.output.strip().splitlines()[-1])["epochs"]
    )
    assert not (tmp_path / "dm.ltrenc.ckpt").exists()  # the default checkpoint is removed on success
    bad = CliRunner().invoke(
        cli, [*args[:-2], "--epochs", "3", "--resume", str(tmp_path / "keep.ckpt"), "--out", str(tmp_path / "x.ltrenc")]
    )
    assert bad.exit_code == 2 and "other training data or options" in bad.output
    assert not (tmp_path / "x.ltrenc").exists()
    score = CliRunner().invoke(cli, [*args[:-2], "--score", "dot", "--out", str(tmp_path / "y.ltrenc")])
    assert score.exit_code == 2 and "--score" in score.output
