"""Encoder export to ONNX: both towers as ONNX graphs plus a JSON sidecar with the hashing table.

The export is a directory::

    OUT/query.onnx   OUT/doc.onnx   OUT/encoder.json

Text -> ids (the letter-trigram hashing) stays outside the graphs; :func:`prepare` does it with
numpy and the sidecar alone (vocabulary, normalisation rules), so serving needs onnxruntime and
numpy but neither torch nor ltrfeat's hasher. Every batch has a *word table* -- row 0 the empty
word, row 1 the sentence boundary ``<s>``, then the batch's distinct words -- whose trigram ids
are padded with ``pad_id`` (a zero row appended to the trigram weights):

- DSSM inputs: ``word_trigrams`` int64 (n_words, T) and ``text_words`` int64 (B, M), the word-table
  rows of each text padded with 0 (the empty word adds nothing to the bag).
- CLSM inputs: ``word_trigrams``, ``windows`` int64 (B, L, 2d + 1), the word-table rows of every
  word-n-gram window (texts padded with d x ``<s>`` at both ends, an empty text has one empty
  word), and ``mask`` float32 (B, L), 1 for a text's real windows (max pooling ignores the rest).

Output ``embedding`` float32 (B, dim): the vectors ``Encoder.encode`` returns -- L2-normalised for a
cosine encoder, raw for one trained with ``score="dot"``; the sidecar's ``score`` (``"cosine"`` or
``"dot"``; absent in exports predating it: cosine) says which, and the relevance is the plain dot
product of the two sides' embeddings either way.
The EmbeddingBag of the towers is exported as a gather + sum (plain ONNX ops, opset 17).
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
import zlib
from pathlib import Path

import numpy as np

from ltrfeat.core.fileio import OUTPUT_MARKER, output_kind, replaced_dir
from ltrfeat.core.errors import LtrfeatError, ModelFileError
from ltrfeat.export.onnx_check import checked_model
from ltrfeat.core.unicode_norm import nfkc

SIDECAR = "encoder.json"
ONNX_FORMAT = "ltrfeat.onnx-encoder/1"
OPSET = 17
SIDES = ("query", "doc")
# the normalisation TrigramHasher applies, spelled out so a reader needs only this file
HASHING_RULES = {
    "unicode": "NFKC",
    "lowercase": True,
    "delete": "['\u2019`]",
    "word": r"[^\W_]+",
    "trigrams": "#word# cut into consecutive 3-character pieces",
    "unknown_id": 0,
    "boundary_id": 1,
    "first_vocabulary_id": 2,
    "buckets": "2 + crc32(utf-8 trigram) % n_buckets",
}


# ------------------------------------------------------------------------------ export (torch)


def _graph(tower, architecture: str, *, normalize: bool = True):
    """An ``nn.Module`` computing ``tower`` on the padded word-table inputs (L2-normalised output unless
    ``normalize=False``)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    weight = tower.trigrams.weight.detach()
    padded = torch.cat([weight, torch.zeros(1, weight.shape[1])])

    class Dssm(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("trigrams", padded)
            self.bias = tower.trigram_bias
            self.layers = tower.layers

        def forward(self, word_trigrams, text_words):
            words = F.embedding(word_trigrams, self.trigrams).sum(1)
            x = torch.tanh(F.embedding(text_words, words).sum(1) + self.bias)
            for layer in self.layers:
                x = torch.tanh(layer(x))
            return F.normalize(x, dim=1) if normalize else x

    class Clsm(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("trigrams", padded)
            self.bias = tower.conv_bias
            self.semantic = tower.semantic
            self.window, self.conv = tower.window, tower.conv

        def forward(self, word_trigrams, windows, mask):
            words = F.embedding(word_trigrams, self.trigrams).sum(1).view(-1, self.window, self.conv)
            h = self.bias
            for k in range(self.window):
                h = h + F.embedding(windows[:, :, k], words[:, k])
            h = torch.tanh(h) - 4.0 * (1.0 - mask).unsqueeze(2)  # padding windows never win the max (tanh >= -1)
            y = torch.tanh(self.semantic(h.max(dim=1).values))
            return F.normalize(y, dim=1) if normalize else y

    return (Dssm if architecture == "dssm" else Clsm)().eval()


EXPORT_KIND = "onnx-encoder"  # the kind its output marker names


def check_export_dir(out) -> None:
    """Refuse ``out`` as an export's output unless it is absent, an empty directory or an export of ours: marked as
    one (:func:`~ltrfeat.core.fileio.output_kind`), or, written before the marker, holding only the files its
    ``encoder.json`` lists (replacing it replaces the whole directory, so nobody else's files may be in it)."""
    out = Path(out)
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir():
        raise LtrfeatError(
            "output exists and is not a directory", path=out, fix="choose a new directory name for --out"
        )
    names = {p.name for p in out.iterdir()}
    if not names or output_kind(out) == EXPORT_KIND:
        return
    try:
        listed = set(json.loads((out / SIDECAR).read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        listed = None
    if listed is not None and names <= listed | {SIDECAR}:
        return
    raise LtrfeatError(
        f"output directory is not an ONNX encoder export ltrfeat wrote (no {OUTPUT_MARKER} marker of one), and "
        "writing the export replaces the whole directory",
        path=out,
        fix="choose a new or empty directory for --out, or remove this one yourself if it may go",
    )


def export_onnx(encoder, out, *, opset: int = OPSET) -> dict:
    """Write ``encoder`` (an :class:`~ltrfeat.encoders.Encoder`) as the ONNX directory ``out``.

    The directory is assembled beside ``out`` and renamed into place, so a failed export leaves
    no partial directory. Returns the sidecar dict.
    """
    import torch

    config = encoder.model.config
    architecture = config["architecture"]
    if architecture not in ("dssm", "clsm"):
        raise LtrfeatError(f"cannot export a {architecture} encoder to ONNX", fix="export a DSSM or CLSM bundle")
    out = Path(out)
    check_export_dir(out)
    context = int(config["tower"].get("context", 0))
    sidecar = {
        "format": ONNX_FORMAT,
        "architecture": architecture,
        "score": encoder.score,
        "context": context,
        "dim": encoder.dim,
        "pad_id": int(config["n_features"]),
        "hashing": encoder.hasher.to_json(),
        "rules": HASHING_RULES,
        "opset": opset,
        "torch": torch.__version__,
        "files": {},
    }
    sample = prepare(sidecar, ["a tiny example", "another one here", ""])
    with replaced_dir(out, kind=EXPORT_KIND) as tmp:
        for side in SIDES:
            graph = _graph(encoder.model.tower(side), architecture, normalize=encoder.model.normalized)
            names = list(sample)
            axes = {
                "word_trigrams": {0: "words", 1: "trigrams"},
                "text_words": {0: "batch", 1: "text_words"},
                "windows": {0: "batch", 1: "positions"},
                "mask": {0: "batch", 1: "positions"},
                "embedding": {0: "batch"},
            }
            with torch.no_grad(), warnings.catch_warnings():
                # the TorchScript exporter is deprecated but needs no onnxscript; torch is pinned
                warnings.simplefilter("ignore", DeprecationWarning)
                torch.onnx.export(
                    graph,
                    tuple(torch.from_numpy(sample[n]) for n in names),
                    str(tmp / f"{side}.onnx"),
                    input_names=names,
                    output_names=["embedding"],
                    dynamic_axes={k: v for k, v in axes.items() if k in names + ["embedding"]},
                    opset_version=opset,
                    dynamo=False,
                )
            sidecar["files"][f"{side}.onnx"] = hashlib.sha256((tmp / f"{side}.onnx").read_bytes()).hexdigest()
        (tmp / SIDECAR).write_text(json.dumps(sidecar, indent=1) + "\n", encoding="utf-8")
    return sidecar


# ------------------------------------------------------------------------------ prepare (numpy only)

_DELETE = re.compile(HASHING_RULES["delete"])
_WORD = re.compile(HASHING_RULES["word"])


class _Hashing:
    """Word -> trigram ids from the sidecar's hashing table (cached per word; with ``max_words``, the cache is
    emptied when full)."""

    def __init__(self, hashing: dict):
        vocab = hashing["vocabulary"]
        self.vocab = None if vocab is None else {t: 2 + i for i, t in enumerate(vocab)}
        self.buckets = hashing["n_buckets"]
        self.max_len = int(hashing["max_word_len"])
        self.cache: dict[str, list[int]] = {}
        self.max_words: int | None = None

    def words(self, text: str) -> list[str]:
        text = _DELETE.sub("", nfkc(text).lower())
        return [w[: self.max_len] for w in _WORD.findall(text)]

    def ids(self, word: str) -> list[int]:
        got = self.cache.get(word)
        if got is None:
            marked = f"#{word}#"
            tris = [marked[i : i + 3] for i in range(len(marked) - 2)]
            got = (
                [self.vocab.get(t, 0) for t in tris]
                if self.vocab is not None
                else [2 + zlib.crc32(t.encode("utf-8")) % int(self.buckets) for t in tris]
            )
            if self.max_words is not None and len(self.cache) >= self.max_words:
                self.cache.clear()
            self.cache[word] = got
        return got


def prepare(sidecar: dict, texts, *, hashing: _Hashing | None = None) -> dict[str, np.ndarray]:
    """ONNX inputs for ``texts`` from the sidecar alone (see the module docstring); pass the
    ``hashing`` of an earlier call to reuse its per-word cache."""
    hashing = hashing or _Hashing(sidecar["hashing"])
    table = {"": 0, "<s>": 1}
    rows: list[list[int]] = [[], [1]]
    texts_words = []
    for text in texts:
        if not isinstance(text, str):
            raise LtrfeatError(f"text {text!r} is not a string", fix="give every text as a string (empty if none)")
        idx = []
        for w in hashing.words(text):
            j = table.get(w)
            if j is None:
                j = table[w] = len(rows)
                rows.append(hashing.ids(w))
            idx.append(j)
        texts_words.append(idx)
    width = max(1, max(len(r) for r in rows))
    word_trigrams = np.full((len(rows), width), int(sidecar["pad_id"]), dtype=np.int64)
    for j, r in enumerate(rows):
        word_trigrams[j, : len(r)] = r
    if sidecar["architecture"] == "dssm":
        text_words = np.zeros((len(texts_words), max(1, max((len(t) for t in texts_words), default=1))), dtype=np.int64)
        for i, t in enumerate(texts_words):
            text_words[i, : len(t)] = t
        return {"word_trigrams": word_trigrams, "text_words": text_words}
    d = int(sidecar["context"])
    n = 2 * d + 1
    lengths = [max(1, len(t)) for t in texts_words]
    L = max(lengths, default=1)
    windows = np.zeros((len(texts_words), L, n), dtype=np.int64)
    mask = np.zeros((len(texts_words), L), dtype=np.float32)
    for i, t in enumerate(texts_words):
        seq = np.array([1] * d + (t or [0]) + [1] * d, dtype=np.int64)
        m = lengths[i]
        windows[i, :m] = seq[np.arange(m)[:, None] + np.arange(n)[None, :]]
        mask[i, :m] = 1.0
    return {"word_trigrams": word_trigrams, "windows": windows, "mask": mask}


# ------------------------------------------------------------------------------ runtime


class OnnxEncoder:
    """An exported encoder run by onnxruntime: ``encode(texts, side=...)`` like ``Encoder.encode``.

    Parameters
    ----------
    sidecar : the parsed ``encoder.json``. sessions : side -> ``onnxruntime.InferenceSession``.
    """

    def __init__(self, sidecar: dict, sessions: dict):
        self.sidecar = sidecar
        self.sessions = sessions
        self._hashing = _Hashing(sidecar["hashing"])

    @property
    def dim(self) -> int:
        return int(self.sidecar["dim"])

    @property
    def score(self) -> str:
        """``"cosine"`` or ``"dot"`` (exports written before the choice existed: cosine)."""
        return self.sidecar.get("score", "cosine")

    def limit_word_cache(self, max_words: int | None) -> None:
        """Keep at most ``max_words`` words' trigram ids between calls (None: every word seen)."""
        self._hashing.max_words = max_words

    @classmethod
    def load(cls, path, *, threads: int | None = None) -> "OnnxEncoder":
        """Read an export directory; files that differ from the sidecar's SHA-256, lie outside the directory
        (links) or reach outside their own bytes (:func:`~ltrfeat.export.onnx_check.checked_model`) are refused."""
        import onnxruntime as ort

        path = Path(path)
        fix = "export the encoder again with `ltrfeat export-encoder`"
        for name in (SIDECAR, *(f"{side}.onnx" for side in SIDES)):
            if (path / name).exists() and not (path / name).resolve().is_relative_to(path.resolve()):
                raise ModelFileError("is a link to a file outside the export directory", path=path / name, fix=fix)
        try:
            sidecar = json.loads((path / SIDECAR).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ModelFileError(
                f"cannot read the encoder sidecar: {exc.strerror}", path=path / SIDECAR, fix=fix
            ) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelFileError(f"encoder sidecar is not valid JSON ({exc})", path=path / SIDECAR, fix=fix) from None
        if not isinstance(sidecar, dict) or sidecar.get("format") != ONNX_FORMAT:
            raise ModelFileError(
                f"not an ltrfeat ONNX encoder sidecar (expected format {ONNX_FORMAT})", path=path / SIDECAR, fix=fix
            )
        if sidecar.get("score", "cosine") not in ("cosine", "dot"):
            raise ModelFileError(
                f"encoder sidecar has an unknown score {sidecar.get('score')!r} (cosine or dot)",
                path=path / SIDECAR,
                fix=fix,
            )
        options = ort.SessionOptions()
        options.add_session_config_entry("session.load_model_format", "ONNX")  # never the ORT flatbuffer format
        if threads:
            options.intra_op_num_threads = int(threads)
        sessions = {}
        for side in SIDES:
            fpath = path / f"{side}.onnx"
            try:
                raw = fpath.read_bytes()
            except OSError as exc:
                raise ModelFileError(f"cannot read {fpath.name}: {exc.strerror}", path=fpath, fix=fix) from None
            if hashlib.sha256(raw).hexdigest() != (sidecar.get("files") or {}).get(fpath.name):
                raise ModelFileError(
                    "ONNX file was changed or truncated (SHA-256 differs from the sidecar)", path=fpath, fix=fix
                )
            model = checked_model(raw, path=fpath, fix=fix)
            sessions[side] = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        return cls(sidecar, sessions)

    def encode(self, texts, *, side: str = "query", batch_size: int = 256) -> np.ndarray:
        """float32 vectors (n, dim): L2-normalised for a cosine encoder, raw for a dot encoder."""
        if side not in self.sessions:
            raise ValueError(f"side must be 'query' or 'doc', got {side!r}")
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        session = self.sessions[side]
        for start in range(0, len(texts), batch_size):
            chunk = texts[start : start + batch_size]
            out[start : start + len(chunk)] = session.run(
                ["embedding"], prepare(self.sidecar, chunk, hashing=self._hashing)
            )[0]
        return out
