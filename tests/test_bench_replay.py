"""benchmarks/replay_fold_tasks.py: an ablation's pooled fold trainings captured and replayed one at a time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import replay_fold_tasks  # noqa: E402


def _replays(capsys, tmp_path, *options: str) -> list[dict]:
    args = [a for o in options for a in ("--option", o)]
    ablate = ["--pairs", str(ROOT / "data" / "judged.tsv"), "--encoder", "dssm:softmax", "--quick"]
    ablate += ["--encoder-option", "epochs=1", "--cache", str(tmp_path / "cache"), "--report", str(tmp_path / "r")]
    capsys.readouterr()
    assert replay_fold_tasks.main(["--task", "3", *args, "--", *ablate]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_a_replayed_task_scores_bit_identically_and_an_option_changes_it(tmp_path, capsys):
    (first,) = _replays(capsys, tmp_path / "a")
    (again,) = _replays(capsys, tmp_path / "b")
    (other,) = _replays(capsys, tmp_path / "c", "epochs=2")
    assert (first["task"], first["encoder"], first["options"]) == (3, "dssm-softmax", {"threads": 1, "epochs": 1})
    assert first["scores"] == again["scores"] != other["scores"] and other["options"]["epochs"] == 2
    assert first["cpu_s"] > 0 and first["distill_cpu_s"] == 0 and first["keep_start"] is None


def test_options_are_key_equals_json_or_a_bare_word():
    assert replay_fold_tasks._option("distill_batch_size=1024") == ("distill_batch_size", 1024)
    assert replay_fold_tasks._option("distill_rows=positives") == ("distill_rows", "positives")
    with pytest.raises(Exception, match="KEY=JSON"):
        replay_fold_tasks._option("epochs")
