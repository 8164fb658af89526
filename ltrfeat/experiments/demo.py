"""The demo (``ltrfeat demo``): the whole story on a generated world, end to end, in a few minutes.

1. generate a synthetic product-search world (catalogue, click log, judged pairs);
2. train DSSM and CLSM encoders on the click log with the softmax and the GDSSM generalized loss
   (the click log's queries are disjoint from every judged query, so no judged query is ever trained on), the
   position bias uncorrected (``--debias none``, the default: ``benchmarks/clicks_debias.py`` measured no gain from
   a correction at the world's examination exponent 0.8) or corrected (``--debias ipw`` or ``pbm``, from the log's
   positions);
3. extract lexical and neural features for the judged pairs;
4. run the ablation (query folds x feature sets x seeds) with significance tests and write the report.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from ltrfeat.core.cores import available_cores

ENCODERS = (("dssm", "softmax"), ("dssm", "generalized"), ("clsm", "softmax"), ("clsm", "generalized"))
# Sizes chosen so the full demo fits in 5 minutes and --quick in 1 minute on 2 cores.
DEMO_PRESETS = {
    "full": {
        "world": {"n_queries": 600, "n_docs": 2000, "n_click_queries": 1000},
        "encoder": {"epochs": 3, "batch_size": 512},
        "seeds": (0, 1, 2),
        "n_estimators": 300,
        "resamples": 10_000,
        "k": 5,
    },
    "quick": {
        "world": {"n_queries": 240, "n_docs": 800, "n_click_queries": 800},
        "encoder": {"epochs": 2, "batch_size": 256},
        "seeds": (0,),
        "n_estimators": 100,
        "resamples": 2000,
        "k": 3,
    },
}
DEBIAS_SAID = {
    "none": "uncorrected",
    "ipw": "corrected by inverse propensity weighting",
    "pbm": "corrected by the position-based click model",
}
TRAINING_DATA = {
    "none": "click log (distinct-user click counts, phi(c) = c / (c + 1))",
    "ipw": "click log, inverse-propensity-weighted click counts (clipped, self-normalised), phi(c) = c / (c + 1)",
    "pbm": "click log, attractiveness estimated by the position-based click model (softmax: as sample weights)",
}
# Towers smaller than the papers' (300-300-128, K=300/L=128) so four of them train in the time budget.
SIZES = {
    "full": {"dssm": {"hidden": [256, 128], "out": 64}, "clsm": {"conv": 192, "out": 64}},
    "quick": {"dssm": {"hidden": [128], "out": 64}, "clsm": {"conv": 128, "out": 64}},
}


def click_tables(world, world_dir: Path, debias: str, *, seed: int):
    """``loss -> (training table, soft-label mapping)`` of the world's click log with the position bias handled by
    ``debias``; ``none`` trains on the aggregated log in its own order (the same counts as the positioned log's), so
    the demo's figures stay those it had before positions were logged."""
    from ltrfeat.clicks import read_click_log
    from ltrfeat.clicks.debias import click_labels

    if debias == "none":
        table = world.clicks.rename(columns={"clicks": "label"})[["query", "doc", "label"]]
        table.attrs["clicks"] = {
            "source": str(world_dir / "clicks.tsv"),
            "has_positions": True,
            "impressions": int(world.clicks["impressions"].sum()),
            "clicks": int(world.clicks["clicks"].sum()),
            "pairs": len(world.clicks),
            "debias": "none",
        }
        return lambda loss: (table, "clicks")
    log = read_click_log(world_dir / "clicks_impressions.tsv", docs=world_dir / "docs.tsv")
    labels = {
        loss: click_labels(log, debias=debias, loss=loss, seed=seed)
        for loss in dict.fromkeys(name for _, name in ENCODERS)
    }
    return lambda loss: (labels[loss].pairs, labels[loss].soft_labels)


def train_demo_encoders(
    tables, models_dir: Path, *, seed: int, options: dict, sizes: dict, say: Callable[[str], None]
) -> dict[str, Path]:
    """Train the demo's four encoders on the click tables (``loss -> (table, soft labels)``), each saved in
    ``models_dir``; ``say`` gets one line per encoder."""
    from ltrfeat.encoders.training import train_encoder

    paths = {}
    for model, loss in ENCODERS:
        name = f"{model}-{loss}"
        start = time.perf_counter()
        table, soft_labels = tables(loss)
        encoder, history = train_encoder(
            table,
            model=model,
            loss=loss,
            soft_labels=soft_labels,
            seed=seed,
            sizes=sizes[model],
            progress=False,
            **options,
        )
        paths[name] = models_dir / f"{name}.ltrenc"
        encoder.save(paths[name])
        best = max((h["val_ndcg@10"] for h in history), default=float("nan"))
        say(
            f"  {name:17s} {len(history)} epochs, validation NDCG@10 of the cosine alone {best:.3f} "
            f"({time.perf_counter() - start:.0f} s)"
        )
    return paths


def demo_features(world, model_paths: dict[str, Path]):
    """The judged pairs' lexical columns (title and description) and one cosine column per encoder."""
    from ltrfeat.features.extract import extract_pairs, lexical_extractors
    from ltrfeat.features.neural import EncoderExtractor

    pairs = world.judged[["qid", "query", "docid", "doc", "label"]].copy()
    docs = world.docs.set_index("docid")
    pairs["description"] = docs.loc[pairs["docid"], "description"].to_numpy()
    extractors = lexical_extractors("all", fields=["doc", "description"])
    extractors += [EncoderExtractor(name=name, path=str(path), field="doc") for name, path in model_paths.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return extract_pairs(pairs, extractors)


def clsm_words(model_paths: dict[str, Path], texts: dict) -> dict:
    """Every CLSM encoder's max-pool winning words of each judged query and document (for report.html)."""
    from ltrfeat.encoders.encoder import Encoder
    from ltrfeat.features.explain import max_pool_words

    words = {}
    for name, path in model_paths.items():
        if name.startswith("clsm"):
            encoder = Encoder.load(path)
            words[name] = {
                key: dict(zip(texts[side], max_pool_words(encoder, texts[side].values(), side=side)))
                for key, side in (("q", "query"), ("d", "doc"))
            }
    return words


def demo_folds(data, *, k: int, seed: int):
    """``k`` query folds (15% of each training part held out for validation) of the judged pairs."""
    from ltrfeat.experiments.fold_plans import plan_folds
    from ltrfeat.experiments.folds import Fold

    origin = (
        f"{k} query folds (seed {seed}) over the judged queries; encoders were trained once on the click "
        f"log, whose queries are disjoint from every judged query, so no encoder saw a test query"
    )
    folds = []
    for plan in plan_folds(data.qid, k=k, valid_fraction=0.15, seed=seed):
        part = lambda qs: data.subset_queries(qs)  # noqa: E731
        folds.append(Fold(plan.name, part(plan.train), part(plan.valid), part(plan.test), origin=origin))
    return folds


def run_demo(
    work: Path, out: Path, preset: dict, *, quick: bool, seed: int, debias: str = "none", say: Callable[[str], None]
):
    """The demo's steps 1-4 and its report in ``work`` (the directory that becomes ``out``; the progress lines
    ``say`` gets name ``out``); returns the ablation's result and summary."""
    from ltrfeat.datasets.synth import generate_world, write_world
    from ltrfeat.experiments.feature_sets import plan_feature_sets
    from ltrfeat.experiments.ablation import run_ablation
    from ltrfeat.experiments.summary import summarise
    from ltrfeat.experiments.report import write_report
    from ltrfeat.rankers.selection import SelectionConfig

    say(f"1/4 generating the world (seed {seed}) ...")
    world = generate_world(seed=seed, **preset["world"])
    write_world(world, work / "world")
    say(
        f"    {len(world.docs)} documents, {world.judged['qid'].nunique()} judged queries "
        f"({len(world.judged)} pairs), click log of {len(world.clicks)} rows -> {out / 'world'}"
    )
    say(f"2/4 training encoders on the click log (position bias: {DEBIAS_SAID[debias]}) ...")
    sizes = SIZES["quick" if quick else "full"]
    tables = click_tables(world, work / "world", debias, seed=seed)
    models = train_demo_encoders(tables, work / "models", seed=seed, options=preset["encoder"], sizes=sizes, say=say)
    say("3/4 extracting lexical and neural features ...")
    data = demo_features(world, models)
    say(f"    {data.n_features} columns for {len(data)} judged pairs")
    say(
        f"4/4 ablation: {preset['k']} folds x feature sets x {len(preset['seeds'])} seeds, each ranker chosen by "
        "inner cross-validation ..."
    )
    neural = {name: [f"{name}_doc_cos"] for name in models}
    base = ",".join(f.name for f in data.feature_map if f.source.startswith("lexical"))
    sets = plan_feature_sets(data.feature_map, base=base, neural=neural)
    folds = demo_folds(data, k=preset["k"], seed=seed)
    result = run_ablation(
        folds,
        sets,
        seeds=preset["seeds"],
        ranker_params={
            "n_estimators": preset["n_estimators"],
            "n_jobs": 1,
            "params": {"bagging_fraction": 0.8, "bagging_freq": 1},
        },
        progress=not os.environ.get("CI"),
        selection=SelectionConfig.default("lightgbm", seed=seed),
        jobs=available_cores(),
    )
    result.config["encoders"] = {
        "training_data": TRAINING_DATA[debias],
        "models": {n: p.name for n, p in models.items()},
        "options": preset["encoder"],
        "sizes": sizes,
    }
    summary = summarise(result, seed=seed, n_resamples=preset["resamples"])
    judged = world.judged.astype({"qid": str, "docid": str})
    texts = {
        "query": dict(zip(judged["qid"], judged["query"])),
        "doc": dict(zip(judged["docid"], judged["doc"])),
    }
    words = clsm_words(models, texts)
    write_report(result, summary, work / "report", overwrite=True, folds=folds, texts=texts, words=words)
    return result, summary
