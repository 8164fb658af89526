"""LightGBM's early-stopping patience in an ablation: how many rounds it costs and what it changes (issue 36).

With patience p, a LightGBM fit keeps the first best round of its validation NDCG and stops p rounds after it
without a better one. The rounds before the stop do not depend on p, so one ablation at the largest p records
every fit's validation curve, and the round each smaller p would keep and stop at follows from that curve
exactly (:func:`stops`). The script runs ``ltrfeat ablate`` in this process (``--jobs 1``, so every fit is seen)
once per patience, records each LightGBM fit's curve, and prints per patience: the boosting rounds run (all
fits), how many fits keep another round than at the largest p (predicted from the largest p's curves and
counted in the run itself, which must agree), the process CPU seconds of the ranker stage, and the test NDCG@1 /
NDCG@10 of every report row, paired against the largest p (mean difference and its standard error over
queries), plus whether ``per_query.tsv`` is identical.

Data (``--data``):
  world10k       the generated world of ``bench_ablation.py`` (seed 5, 400 queries, 10,184 pairs)
  homedepot300   300 / 1,000 Home Depot queries with two or more judged products (seeded, as
  homedepot1000  ``quality_candidate_growth.py`` picks them)
Encoders: zero-shot MiniLM (``sbert``) by default, beside the lexical features (the rankers' early stopping is
what is measured), or ``--encoders readme`` (the README's five; with ``--cache`` they are trained there once, e.g.
by ``bench_ablation.py --encoder-cache DIR``). Ranker seeds 0, 1, 2, model selection on (the ablation's defaults).

    python benchmarks/quality_patience.py --data world10k [--patience 50,20,10] [--predict 5] [--encoders readme]
        [--cache DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _common import write_results  # noqa: E402

README_ENCODERS = ("clsm:softmax", "dssm:generalized", "sbert", "sbert-ft:generalized", "clsm:generalized+teacher")
METRICS = ("ndcg@1", "ndcg@10")


def stops(curve, patience: int) -> tuple[int, int]:
    """(kept round, rounds run), both 1-based, of LightGBM's ``early_stopping(patience)`` on a validation curve
    (higher is better): the first strict maximum is kept; training stops ``patience`` rounds after it (or at
    the curve's end)."""
    best_i = 0
    for i, value in enumerate(curve):
        if value > curve[best_i]:
            best_i = i
        elif i - best_i >= patience:
            return best_i + 1, i + 1
    return best_i + 1, len(curve)


def _world(tmp: Path) -> list:
    from ltrfeat.cli.main import cli

    out = tmp / "world"
    args = ["datasets", "synth", "--out", out, "--seed", 5, "--queries", 400, "--docs", 3000]
    cli.main([str(a) for a in [*args, "--click-queries", 0, "--candidates", "20-30"]], standalone_mode=False)
    return ["--pairs", out / "judged.tsv"]


def _homedepot(tmp: Path, n: int) -> list:
    from _common import home_depot_pairs

    pairs, _ = home_depot_pairs()
    judged = pairs.groupby("qid").size()
    keep = np.random.default_rng(0).choice(judged.index[judged >= 2].to_numpy(), size=n, replace=False)
    pairs = pairs[pairs["qid"].isin(set(keep))].reset_index(drop=True)
    path = tmp / f"homedepot{n}.tsv"
    pairs.to_csv(path, sep="\t", index=False)
    return ["--pairs", path, "--conflicts", "first"]  # 15 retitled products keep their first title


class _Recorder:
    """Wraps the LightGBM trainer of :mod:`ltrfeat.rankers.lambdamart` and keeps every fit's curve."""

    def __init__(self):
        from ltrfeat.rankers import lambdamart

        self.fits: list[dict] = []
        self._engine = lambdamart._LightGBM
        self._train = self._engine.train

        def train(params, n_rounds, train, valid, names, early_stopping_rounds, bar, init=(None, None), position=None):
            booster, best, run, curve = self._train(
                params, n_rounds, train, valid, names, early_stopping_rounds, bar, init, position=position
            )
            self.fits.append({"best": int(best), "run": int(run), "curve": [float(v) for v in curve]})
            return booster, best, run, curve

        self._engine.train = staticmethod(train)

    def close(self):
        self._engine.train = staticmethod(self._train)


def _ablate(data: list, encoders, cache: Path | None, report: Path, patience: int) -> tuple[dict, float, list]:
    from ltrfeat.cli.main import cli

    if cache is not None:
        shutil.rmtree(cache / "rankers", ignore_errors=True)
    args = [*data, *[a for e in encoders for a in ("--encoder", e)], "--report", report, "--overwrite"]
    args += ["--early-stopping-rounds", patience, "--jobs", 1, "--resamples", 1000]
    if cache is not None:
        args += ["--cache", cache]
    recorder = _Recorder()
    cpu = time.process_time()
    try:
        cli.main(["ablate", *map(str, args)], standalone_mode=False)
    finally:
        recorder.close()
    cpu = time.process_time() - cpu
    rep = json.loads((report / "report.json").read_text())
    return rep, cpu, recorder.fits


def _paired(per_query: dict, base: int, p: int) -> dict:
    a, b = per_query[base], per_query[p]
    out = {}
    for name in b["feature_set"].unique():
        x = a[a["feature_set"] == name].set_index(["fold", "qid"])
        y = b[b["feature_set"] == name].set_index(["fold", "qid"]).loc[x.index]
        row = {}
        for m in METRICS:
            d = (y[m] - x[m]).to_numpy(dtype=float)
            d = d[np.isfinite(d)]
            row[m] = {
                "mean": float(y[m].mean()),
                "diff": float(d.mean()),
                "se": float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0,
                "queries_changed": int((d != 0).sum()),
            }
        out[name] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", choices=["world10k", "homedepot300", "homedepot1000"], default="world10k")
    ap.add_argument("--patience", default="50,20,10", help="comma-separated, the largest first")
    ap.add_argument("--encoders", default="sbert", help="readme, or comma-separated specs")
    ap.add_argument("--predict", default="", help="more patience values (smaller), only predicted from the curves")
    ap.add_argument("--cache", type=Path, default=None, help="encoder cache (its rankers/ store is emptied)")
    ap.add_argument("--keep", type=Path, default=None, help="keep each run's report in KEEP/pP")
    args = ap.parse_args()
    patience = [int(p) for p in args.patience.split(",")]
    predict = [int(p) for p in args.predict.split(",") if p]
    if patience != sorted(patience, reverse=True) or any(p >= patience[0] for p in predict):
        sys.exit("--patience: the largest first; --predict: smaller than it")
    named = {"readme": README_ENCODERS}
    encoders = named[args.encoders] if args.encoders in named else tuple(args.encoders.split(","))
    figures: dict = {"data": args.data, "encoders": list(encoders), "patience": patience, "runs": {}}
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        data = _world(tmp) if args.data == "world10k" else _homedepot(tmp, int(args.data.removeprefix("homedepot")))
        per_query, fits = {}, {}
        for p in patience:
            rep, cpu, fits[p] = _ablate(data, encoders, args.cache, tmp / f"rep{p}", p)
            per_query[p] = pd.read_csv(tmp / f"rep{p}" / "per_query.tsv", sep="\t", dtype={"qid": str})
            rankers = rep["stage_seconds"].get("rankers")
            figures["runs"][p] = {
                "process_cpu_seconds": cpu,
                "ranker_stage_seconds": rankers,
                "fits": len(fits[p]),
                "rounds_run": int(sum(f["run"] for f in fits[p])),
                "rounds_kept": int(sum(f["best"] for f in fits[p])),
            }
            figures["runs"][p]["per_query_identical"] = (tmp / f"rep{patience[0]}" / "per_query.tsv").read_bytes() == (
                tmp / f"rep{p}" / "per_query.tsv"
            ).read_bytes()
            if args.keep is not None:
                shutil.copytree(tmp / f"rep{p}", args.keep / f"p{p}", dirs_exist_ok=True)
    top = patience[0]
    base_fits = fits[top]
    for p in patience[1:]:
        predicted = [stops(f["curve"], p) for f in base_fits]
        run = figures["runs"][p]
        run["kept_round_changed_predicted"] = sum(k != f["best"] for (k, _), f in zip(predicted, base_fits))
        run["rounds_run_predicted"] = int(sum(r for _, r in predicted))
        # a fit's data depends on earlier choices only through the selection, so compare fit by fit while the
        # sequence of fits is the same (same count): the prediction must match what the run kept
        if len(fits[p]) == len(base_fits):
            run["prediction_matches_run"] = all(k == f["best"] for (k, _), f in zip(predicted, fits[p]))
        run["rows"] = _paired(per_query, top, p)
    figures["runs"][top]["rows"] = _paired(per_query, top, top)
    for p in predict:
        predicted = [stops(f["curve"], p) for f in base_fits]
        figures["predicted"] = figures.get("predicted", {}) | {
            p: {
                "kept_round_changed": sum(k != f["best"] for (k, _), f in zip(predicted, base_fits)),
                "rounds_run": int(sum(r for _, r in predicted)),
            }
        }
        print(
            f"patience {p} (predicted from the {top}-curves): kept round changed in "
            f"{figures['predicted'][p]['kept_round_changed']} of {len(base_fits)} fits, "
            f"{figures['predicted'][p]['rounds_run']} rounds run"
        )
    for p in patience:
        run = figures["runs"][p]
        print(
            f"patience {p}: {run['fits']} LightGBM fits, {run['rounds_run']} rounds run ({run['rounds_kept']} kept), "
            f"ranker stage {run['ranker_stage_seconds']:.0f} s wall, process {run['process_cpu_seconds']:.0f} cpu-s; "
            f"per_query.tsv {'identical' if run['per_query_identical'] else 'changed'}"
        )
        if p != top:
            print(
                f"  vs {top}: kept round changed in {run['kept_round_changed_predicted']} of {len(base_fits)} fits "
                f"(predicted from the {top}-curves; matches the run: {run.get('prediction_matches_run')})"
            )
            for name, row in run["rows"].items():
                shown = "  ".join(
                    f"{m} {row[m]['mean']:.4f} ({row[m]['diff']:+.4f} ± {row[m]['se']:.4f}, "
                    f"{row[m]['queries_changed']} q)"
                    for m in METRICS
                )
                print(f"    {name:<48} {shown}")
    write_results(f"quality_patience_{args.data}" + ("_readme" if args.encoders == "readme" else ""), figures)


if __name__ == "__main__":
    main()
