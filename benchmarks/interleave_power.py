"""Interleaving validated with simulated users on the generated world (``ltrfeat.experiments.user_simulation``).

1. Identical rankers: how often the sign test at alpha 0.05 prefers one anyway (the false-preference rate), over
   ``--null-experiments`` experiments at each number of impressions, team-draft and balanced.
2. Rankers differing by ΔNDCG@10 (team-draft, then balanced) (ranker A scores ``grade + 1.0 * noise``, B ``grade + s * noise`` for smaller s):
   how often B is preferred (power) and A wrongly preferred, by impressions; the same simulated users under an A/B
   test on clicks per session (Welch's t-test, sessions split evenly) with as many sessions; and the sessions each
   needs for 80% power (interpolated on log sessions; beyond the largest count: not reached).

Writes ``benchmarks/results/interleave_power.json``; ``docs/interleaving.md`` quotes :func:`null_table` and
:func:`power_table` (``tests/test_docs_interleaving.py`` checks them against the file).

    python benchmarks/interleave_power.py            # about 3 minutes on one core
    python benchmarks/interleave_power.py --quick    # a smoke run (not for the docs)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write_results  # noqa: E402

NAME = "interleave_power"
IMPRESSIONS = (100, 300, 1000, 3000, 10000)
NOISE_B = (0.9, 0.8, 0.7, 0.5, 0.3)
TARGET_POWER = 0.8


def sessions_for(rows: list[dict], key: str, power: float = TARGET_POWER) -> float | None:
    """Sessions at which ``key`` (a preference rate) reaches ``power``, interpolated on log sessions between the
    counts measured; None when the largest count does not reach it."""
    for before, after in zip([None, *rows], rows):
        if after[key] >= power:
            if before is None or before[key] >= power:
                return float(after["impressions"])
            x0, x1 = math.log(before["impressions"]), math.log(after["impressions"])
            share = (power - before[key]) / (after[key] - before[key])
            return float(math.exp(x0 + share * (x1 - x0)))
    return None


def run(*, null_experiments: int, experiments: int, impressions: tuple[int, ...], seed: int) -> dict:
    from ltrfeat.datasets.synth import generate_world
    from ltrfeat.experiments.user_simulation import query_grades, simulate

    world = generate_world(seed=seed)
    grades = query_grades(world.judged, shown=10)
    out: dict = {"queries": len(grades), "shown": 10, "noise_a": 1.0, "alpha": 0.05, "null": []}
    for method in ("team-draft", "balanced"):
        start = time.perf_counter()
        result = simulate(
            grades,
            noise_a=1.0,
            noise_b=None,
            impressions=impressions,
            experiments=null_experiments,
            method=method,
            seed=seed + 1,
        )
        result["seconds"] = round(time.perf_counter() - start, 1)
        out["null"].append(result)
        print(f"identical rankers, {method}: {result['seconds']} s", flush=True)
    for method, key in (("team-draft", "power"), ("balanced", "power_balanced")):
        out[key] = []
        for k, noise_b in enumerate(NOISE_B):
            start = time.perf_counter()
            result = simulate(
                grades,
                noise_a=1.0,
                noise_b=noise_b,
                impressions=impressions,
                experiments=experiments,
                method=method,
                seed=seed + 10 + k,
            )
            rows = result["by_impressions"]
            result["sessions_for_80"] = {
                "interleaving": sessions_for(rows, "interleaving_prefers_b"),
                "ab": sessions_for(rows, "ab_prefers_b"),
            }
            result["seconds"] = round(time.perf_counter() - start, 1)
            out[key].append(result)
            print(
                f"{method}, noise_b {noise_b}: ΔNDCG@10 {result['delta_ndcg']:+.4f}, {result['seconds']} s", flush=True
            )
    return out


def null_table(figures: dict) -> str:
    """Markdown: the false-preference rate of identical rankers, by method and impressions."""
    counts = [r["impressions"] for r in figures["null"][0]["by_impressions"]]
    lines = [
        "| method | experiments | " + " | ".join(f"{n:,} impressions" for n in counts) + " |",
        "|---|---|" + "---|" * len(counts),
    ]
    for r in figures["null"]:
        cells = [f"{b['interleaving_prefers_a'] + b['interleaving_prefers_b']:.3f}" for b in r["by_impressions"]]
        lines.append(f"| {r['method']} | {r['experiments']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _sessions(n: float | None, largest: int) -> str:
    return f"> {largest:,}" if n is None else f"{round(n, -1 if n < 1000 else -2):,.0f}"


def power_table(figures: dict, key: str = "power") -> str:
    """Markdown: power of interleaving (``key``: ``power`` team-draft, ``power_balanced``) and of A/B by ΔNDCG@10
    and impressions, and the sessions each needs for 80%."""
    counts = [r["impressions"] for r in figures[key][0]["by_impressions"]]
    lines = [
        "| ΔNDCG@10 | "
        + " | ".join(f"{n:,}" for n in counts)
        + " | interleaving: sessions for 80% | A/B: sessions for 80% |",
        "|---|" + "---|" * len(counts) + "---|---|",
    ]
    for r in figures[key]:
        cells = [f"{b['interleaving_prefers_b']:.2f} ({b['ab_prefers_b']:.2f})" for b in r["by_impressions"]]
        need = r["sessions_for_80"]
        lines.append(
            f"| {r['delta_ndcg']:+.3f} | "
            + " | ".join(cells)
            + f" | {_sessions(need['interleaving'], counts[-1])} | {_sessions(need['ab'], counts[-1])} |"
        )
    return "\n".join(lines)


def comparison(figures: dict) -> str:
    """The sentence on interleaving vs A/B the README and docs quote: the largest ΔNDCG both reach 80% power for."""
    for r in figures["power"]:
        need = r["sessions_for_80"]
        if need["interleaving"] is not None and need["ab"] is not None:
            return (
                f"for a ΔNDCG@10 of {r['delta_ndcg']:+.3f} team-draft reaches 80% power in about "
                f"{_sessions(need['interleaving'], 0)} sessions, an A/B test on clicks per session in about "
                f"{_sessions(need['ab'], 0)} ({need['ab'] / need['interleaving']:.0f}× as many)"
            )
    largest = figures["power"][0]["by_impressions"][-1]["impressions"]
    r = next(r for r in figures["power"] if r["sessions_for_80"]["interleaving"] is not None)
    return (
        f"for a ΔNDCG@10 of {r['delta_ndcg']:+.3f} team-draft reaches 80% power in about "
        f"{_sessions(r['sessions_for_80']['interleaving'], 0)} sessions, an A/B test on clicks per session not "
        f"within {largest:,}"
    )


def quoted(figures: dict) -> dict[str, str]:
    """What docs/interleaving.md quotes, by placeholder (``tests/test_docs_interleaving.py`` checks each)."""
    wrong = max(b["interleaving_prefers_a"] for r in figures["power"] for b in r["by_impressions"])
    balanced = figures.get("power_balanced")
    return {
        "COMPARISON": comparison(figures),
        "NQUERIES": f"{figures['queries']:,}",
        "NPOWER": f"{figures['power'][0]['experiments']:,}",
        "TABLE_NULL": null_table(figures),
        "TABLE_POWER": power_table(figures),
        "WRONG": f"{wrong:.1%}",
        **({"TABLE_BALANCED": power_table(figures, "power_balanced")} if balanced else {}),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--null-experiments", type=int, default=1000)
    ap.add_argument("--experiments", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="100 experiments each, up to 1,000 impressions; no file")
    args = ap.parse_args(argv)
    if args.quick:
        figures = run(null_experiments=100, experiments=100, impressions=IMPRESSIONS[:3], seed=args.seed)
    else:
        figures = run(
            null_experiments=args.null_experiments,
            experiments=args.experiments,
            impressions=IMPRESSIONS,
            seed=args.seed,
        )
    print(null_table(figures))
    print()
    print(power_table(figures))
    print()
    print(power_table(figures, "power_balanced"))
    if not args.quick:
        print(write_results(NAME, figures))


if __name__ == "__main__":
    main()
