"""Profiles of the two slowest stages of ``ltrfeat demo`` (pyinstrument), summarised as their top frames.

Runs the demo in this process under pyinstrument's sampling profiler (``--quick`` preset by default,
``--full`` for the 5-minute one). The demo command's direct callees are its stages (world generation,
encoder training, feature extraction, ablation, report); the two with the largest wall time are
summarised: their share of the run (the ratio against the whole demo measured in the same run), the
functions with the most self time inside them, and the hot path (the heaviest callee, followed down).
Writes ``results/profiles.json`` and a readable call tree per stage, ``results/profile_<stage>.txt``.

    python benchmarks/profile_stages.py            # quick demo, about a minute on 2 idle cores
    python benchmarks/profile_stages.py --full --top 15
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._common import RESULTS, write_results  # noqa: E402

STAGE_NAMES = {
    "generate_world": "world",
    "write_world": "world_write",
    "train_demo_encoders": "encoders",
    "demo_features": "extraction",
    "run_ablation": "ablation",
    "summarise": "statistics",
    "write_report": "report",
}
N_SLOWEST = 2


@dataclass
class Node:
    """A call-tree node: calls of one function from one parent merged (pyinstrument keeps them apart by line)."""

    function: str
    location: str  # "function (file:line)"
    time: float = 0.0
    self_time: float = 0.0
    children: dict[str, Node] = field(default_factory=dict)


def call_tree(frame, node: Node | None = None) -> Node:
    """The merged call tree of a pyinstrument frame; ``[self]`` frames become their parent's self time."""
    node = node or Node(frame.function, _location(frame))
    node.time += frame.time
    if not frame.children:
        node.self_time += frame.time
    for child in frame.children:
        if child.is_synthetic:
            node.self_time += child.time
            continue
        key = _location(child)
        call_tree(child, node.children.setdefault(key, Node(child.function, key)))
    return node


def _location(frame) -> str:
    return f"{frame.function} ({frame.file_path_short}:{frame.line_no})"


def find_node(node: Node, function: str, file_part: str) -> Node | None:
    """Depth-first search for the first node of ``function`` whose location mentions ``file_part``."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.function == function and file_part in current.location:
            return current
        stack.extend(reversed(list(current.children.values())))
    return None


def stages(demo: Node) -> list[tuple[str, Node]]:
    """The demo's direct callees as (stage name, node), slowest first; lazy imports are left out."""
    found = [
        (STAGE_NAMES.get(child.function, child.function), child)
        for child in demo.children.values()
        if "importlib" not in child.location
    ]
    return sorted(found, key=lambda item: item[1].time, reverse=True)


def top_self_frames(node: Node, n: int) -> list[dict]:
    """Functions with the most self time in ``node``'s subtree (summed over every call site)."""
    total = defaultdict(float)
    stack = [node]
    while stack:
        current = stack.pop()
        total[current.location] += current.self_time
        stack.extend(current.children.values())
    ranked = sorted(((k, v) for k, v in total.items() if v > 0), key=lambda item: item[1], reverse=True)[:n]
    return [{"frame": name, "self_seconds": seconds, "share_of_stage": seconds / node.time} for name, seconds in ranked]


def hot_path(node: Node, *, min_share: float = 0.1) -> list[dict]:
    """Follow the heaviest callee from ``node`` while it holds at least ``min_share`` of the stage."""
    path, current = [], node
    while current.children:
        current = max(current.children.values(), key=lambda c: c.time)
        if current.time < min_share * node.time:
            break
        path.append({"frame": current.location, "seconds": current.time, "share_of_stage": current.time / node.time})
    return path


def render_tree(node: Node, *, min_share: float = 0.02, depth: int = 0, root_time: float | None = None) -> list[str]:
    """An indented call tree of the nodes holding at least ``min_share`` of the root's time."""
    root_time = root_time or node.time
    lines = [f"{'  ' * depth}{node.time:8.2f} s {100 * node.time / root_time:5.1f} %  {node.location}"]
    for child in sorted(node.children.values(), key=lambda c: c.time, reverse=True):
        if child.time >= min_share * root_time:
            lines += render_tree(child, min_share=min_share, depth=depth + 1, root_time=root_time)
    return lines


def profile_demo(*, quick: bool, interval: float):
    """Run ``ltrfeat demo`` under pyinstrument; returns (session root frame, wall seconds)."""
    from pyinstrument import Profiler

    from ltrfeat.cli.main import cli

    os.environ.setdefault("CI", "1")  # no progress bars in the profile
    with tempfile.TemporaryDirectory(prefix="profile-demo-") as tmp:
        args = ["demo", "--out", str(Path(tmp) / "demo")] + (["--quick"] if quick else [])
        profiler = Profiler(interval=interval)
        start = time.perf_counter()
        profiler.start()
        try:
            cli(args=args, standalone_mode=False)
        finally:
            profiler.stop()
        return profiler.last_session.root_frame(), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="profile the full demo instead of --quick")
    parser.add_argument("--top", type=int, default=12, help="top self-time frames kept per stage")
    parser.add_argument("--interval", type=float, default=0.005, help="sampling interval in seconds")
    args = parser.parse_args()

    root, wall = profile_demo(quick=not args.full, interval=args.interval)
    demo = find_node(call_tree(root), "run_demo", "demo.py")
    if demo is None:
        raise SystemExit("no 'run_demo' frame in the profile: did ltrfeat/experiments/demo.py change?")
    ranked = stages(demo)
    figures = {
        "workload": f"ltrfeat demo{'' if args.full else ' --quick'}",
        "interval_s": args.interval,
        "wall_s": wall,
        "profiled_demo_s": demo.time,
        "stages_s": {name: node.time for name, node in ranked},
        "slowest": [],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name, node in ranked[:N_SLOWEST]:
        tree = RESULTS / f"profile_{name}.txt"
        tree.write_text("\n".join(render_tree(node)) + "\n")
        figures["slowest"].append(
            {
                "stage": name,
                "seconds": node.time,
                "share_of_demo": node.time / demo.time,
                "top_self": top_self_frames(node, args.top),
                "hot_path": hot_path(node),
                "tree": tree.name,
            }
        )
    print(f"wrote {write_results('profiles', figures)}")
    print(f"stages of `{figures['workload']}` ({demo.time:.1f} s profiled):")
    for name, node in ranked:
        print(f"  {name:12s} {node.time:8.2f} s  {100 * node.time / demo.time:5.1f} %")
    for stage in figures["slowest"]:
        print(f"{stage['stage']}: {100 * stage['share_of_demo']:.0f} % of the demo; most self time in:")
        for row in stage["top_self"][:5]:
            print(f"  {row['self_seconds']:7.2f} s {100 * row['share_of_stage']:5.1f} %  {row['frame']}")


if __name__ == "__main__":
    main()
