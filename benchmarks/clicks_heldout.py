"""How long and how large a click-trained CLSM should be, checked on held-out CLICK queries only.

A generated world (e=0.8, 240 judged queries, 800 products, world seed 0) with click logs of ``--click-queries``
queries; a CLSM (GDSSM generalized loss, uncorrected click labels) with the demo's ``quick`` or ``full`` towers is
trained for at most ``--epochs`` epochs, each scored by NDCG@10 on the log's held-out validation queries (click-count
grades; ``train_encoder``'s split), stopping after 2 epochs without improvement. No judged (test) query is used, so
the setting it picks can be used on the test queries without a leak.

Run: python benchmarks/clicks_heldout.py [--click-queries 800 2400] [--towers quick full] [--epochs 8]
Writes benchmarks/results/clicks_heldout.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]


def heldout(n_click: int, towers: str, *, epochs: int, work: Path) -> dict:
    """Validation NDCG@10 on the held-out click queries after each epoch (epoch 0: the untrained start)."""
    from ltrfeat.experiments.demo import SIZES
    from ltrfeat.clicks.debias import click_labels
    from ltrfeat.clicks.log import read_click_log
    from ltrfeat.datasets.synth import generate_world, write_world
    from ltrfeat.encoders.training import train_encoder

    world = generate_world(seed=0, n_queries=240, n_docs=800, n_click_queries=n_click, examination_exponent=0.8)
    write_world(world, work)
    labels = click_labels(read_click_log(work / "clicks_impressions.tsv", docs=work / "docs.tsv"), debias="none")
    start, cpu = time.perf_counter(), time.process_time()
    _, history = train_encoder(
        labels.pairs,
        model="clsm",
        loss="generalized",
        soft_labels=labels.soft_labels,
        seed=0,
        sizes=SIZES[towers]["clsm"],
        progress=False,
        threads=1,
        epochs=epochs,
        batch_size=256,
    )
    validation = [round(float(h["val_ndcg@10"]), 4) for h in history]
    return {
        "click_queries": n_click,
        "towers": towers,
        "pairs": len(labels.pairs),
        "clicked_pairs": int((labels.pairs["label"] > 0).sum()),
        "validation_ndcg@10": validation,
        "best_epoch": validation.index(max(validation)),
        "seconds": round(time.perf_counter() - start),
        "cpu_seconds": round(time.process_time() - cpu),
    }


def markdown_table(figures: dict) -> list[str]:
    """The lines docs/experiments.md quotes (checked by tests/clicks/test_docs_debias.py): per log size and towers,
    the held-out NDCG@10 after each epoch (epoch 0: the start) and the epoch kept."""
    lines = [
        "| click queries | clicked pairs | towers | held-out NDCG@10, epochs 0, 1, 2, ... | epoch kept |",
        "| ---: | ---: | --- | --- | ---: |",
    ]
    for run in figures["runs"]:
        curve = ", ".join(f"{v:.3f}" for v in run["validation_ndcg@10"])
        lines.append(
            f"| {run['click_queries']:,} | {run['clicked_pairs']:,} | {run['towers']} | {curve} | {run['best_epoch']} |"
        )
    return lines


def main() -> None:
    from _common import write_results

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--click-queries", type=int, nargs="+", default=[800, 2400])
    parser.add_argument("--towers", nargs="+", default=["quick", "full"], choices=["quick", "full"])
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()
    command = "python benchmarks/clicks_heldout.py --click-queries " + " ".join(map(str, args.click_queries))
    command += " --towers " + " ".join(args.towers) + f" --epochs {args.epochs}"
    runs: list[dict] = []
    for towers in args.towers:
        for n_click in args.click_queries:
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(heldout(n_click, towers, epochs=args.epochs, work=Path(tmp)))
            print(runs[-1], flush=True)
            # written after every run: a run cut short keeps the ones done (``complete`` says whether all are)
            done = {"complete": len(runs) == len(args.towers) * len(args.click_queries)}
            path = write_results("clicks_heldout", {"runs": runs, "setup": {"command": command, **done}})
    print(path)


if __name__ == "__main__":
    main()
