"""Where an ablation's time goes: seconds per stage, per encoder kind and per encoder training.

One :class:`StageProfile` travels through a run; ``report.json`` gets :meth:`StageProfile.as_dict` and
``report.md`` the line of :func:`profile_line`. MiniLM encoding (zero-shot ``sbert`` columns and
distillation targets) is counted wherever it happens through :func:`teacher_clock`, so teacher scoring
shows apart from the students' training.
"""

from __future__ import annotations

import contextlib
import threading
import time

_teacher: dict[str, float] = {"seconds": 0.0, "texts": 0}
_teacher_lock = threading.Lock()


@contextlib.contextmanager
def teacher_clock(n_texts: int):
    """Count the block as teacher (MiniLM) encoding of ``n_texts`` texts, process-wide."""
    start = time.perf_counter()
    try:
        yield
    finally:
        with _teacher_lock:
            _teacher["seconds"] += time.perf_counter() - start
            _teacher["texts"] += n_texts


def teacher_totals() -> tuple[float, int]:
    """Seconds and texts of teacher encoding in this process so far."""
    with _teacher_lock:
        return _teacher["seconds"], int(_teacher["texts"])


class StageProfile:
    """Seconds of an ablation's stages; ``with profile.stage("rankers"):`` adds to a stage, and
    :meth:`encoder` records one encoder training (or zero-shot scoring) and the scoring of its folds."""

    def __init__(self):
        self.stages: dict[str, float] = {}
        self.encoders: dict[str, dict] = {}
        self.runs: dict[str, int] | None = None
        self.pool: dict[str, int | str] | None = None
        self.places: dict[str, str] = {}
        self._teacher_start = teacher_totals()

    @contextlib.contextmanager
    def stage(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - start

    def encoder(
        self,
        name: str,
        job: str,
        *,
        train_seconds: float,
        score_seconds: float,
        cached: bool,
        where: str = "this process",
    ) -> None:
        """One training of encoder ``name`` (``job``: the folds it excludes) and the scoring of its rows;
        ``where`` it ran (``this process``, ``pool process PID``, ``dask worker ADDRESS``, ``cache``)."""
        entry = self.encoders.setdefault(
            name, {"train_seconds": 0.0, "score_seconds": 0.0, "trainings": 0, "from_cache": 0, "jobs": {}}
        )
        entry.setdefault("ran_on", {})[job] = where
        entry["train_seconds"] += train_seconds
        entry["score_seconds"] += score_seconds
        entry["trainings"] += not cached
        entry["from_cache"] += cached
        entry["jobs"][job] = round(train_seconds + score_seconds, 2)

    def frozen_layers(self, name: str, *, seconds: float, texts: int, where: str = "this process") -> None:
        """Encoder ``name``'s frozen lower layers ran once over ``texts`` texts for all its trainings, ``where``."""
        entry = self.encoders.setdefault(
            name, {"train_seconds": 0.0, "score_seconds": 0.0, "trainings": 0, "from_cache": 0, "jobs": {}}
        )
        entry["train_seconds"] += seconds
        entry["jobs"][f"frozen layers of {texts} texts"] = round(seconds, 2)
        entry.setdefault("ran_on", {})[f"frozen layers of {texts} texts"] = where

    def zero_shot(self, name: str, *, score_seconds: float, where: str = "this process") -> None:
        """Encoder ``name`` scored every row without training (``sbert``), ``where`` as in :meth:`encoder`."""
        self.encoders[name] = {
            "train_seconds": 0.0,
            "score_seconds": score_seconds,
            "trainings": 0,
            "from_cache": 0,
            "jobs": {"all folds, zero-shot": round(score_seconds, 2)},
            "ran_on": {"all folds, zero-shot": where},
        }

    def ran_on(self, stage: str, where: str) -> None:
        """The tasks of ``stage`` ran ``where`` (e.g. ``"dask cluster of 2 workers"``)."""
        self.places[stage] = where

    def ranker_runs(self, *, from_cache: int, total: int, shared: int = 0) -> None:
        """Of ``total`` ranker runs (one per fold and feature set, or per seed too), ``from_cache`` were stored and
        ``shared`` took the result of a run whose columns hold the same values."""
        self.runs = {"total": total, "from_cache": from_cache} | ({"shared": shared} if shared else {})

    def encoder_pool(self, *, trainings: int, processes: int, threads: int, on: str = "pool") -> None:
        """``trainings`` encoder trainings ran side by side in ``processes`` workers of ``threads`` threads each
        (their seconds then add up to more than the stage's wall time), ``on`` the local pool or ``"dask"``."""
        self.pool = {"trainings": trainings, "processes": processes, "threads": threads, "on": on}

    def as_dict(self) -> dict:
        """Stages in seconds (rounded to 0.01), encoders by kind, teacher encoding since creation."""
        seconds, texts = teacher_totals()
        out: dict = {name: round(s, 2) for name, s in self.stages.items()}
        out["encoders"] = {
            name: {**{k: round(v, 2) if isinstance(v, float) else v for k, v in e.items()}}
            for name, e in self.encoders.items()
        }
        out["teacher_encoding"] = {
            "seconds": round(seconds - self._teacher_start[0], 2),
            "texts": texts - self._teacher_start[1],
        }
        if self.runs is not None:
            out["ranker_runs"] = dict(self.runs)
        if self.pool is not None:
            out["encoder_pool"] = dict(self.pool)
        if self.places:
            out["ran_on"] = dict(self.places)
        return out


def profile_line(stages: dict) -> str:
    """One line for report.md: ``Time: lexical features 2.1 s, encoders 95 s (clsm-softmax 40 s in 6
    trainings, ...), of which MiniLM encoding 12 s, rankers 30 s, tests 4 s.``"""

    def fmt(s: float) -> str:
        return f"{s:.1f} s" if s < 100 else f"{s:,.0f} s"

    parts = []
    for name, value in stages.items():
        if name in ("encoders", "teacher_encoding", "ranker_runs", "encoder_pool", "ran_on"):
            continue
        if name == "encoder columns" and stages.get("encoders"):
            kinds = ", ".join(
                f"{kind} {fmt(e['train_seconds'] + e['score_seconds'])} {_trainings(e)}"
                for kind, e in stages["encoders"].items()
            )
            teacher = stages.get("teacher_encoding", {})
            extra = f"; MiniLM encoding {fmt(teacher['seconds'])} of it" if teacher.get("seconds") else ""
            pool = stages.get("encoder_pool")
            if pool:
                workers = "Dask workers" if pool.get("on") == "dask" else "processes"
                extra += (
                    f"; {pool['trainings']} trainings ran in {pool['processes']} {workers} side by side, "
                    "so their seconds add up to more than the wall time"
                )
            parts.append(f"{name} {fmt(value)} ({kinds}{extra})")
        elif name == "rankers" and (stages.get("ranker_runs", {}).keys() & {"from_cache", "shared"}):
            runs = stages["ranker_runs"]
            notes = [f"{runs['from_cache']} of {runs['total']} runs from cache"] if runs.get("from_cache") else []
            if runs.get("shared"):
                notes.append(f"{runs['shared']} the same as another set's")
            parts.append(f"{name} {fmt(value)}" + (f" ({'; '.join(notes)})" if notes else ""))
        else:
            parts.append(f"{name} {fmt(value)}")
    return "Time: " + ", ".join(parts) + "."


def _trainings(entry: dict) -> str:
    if not entry["trainings"] and not entry["from_cache"]:
        return "zero-shot"
    text = f"in {entry['trainings']} training{'s' if entry['trainings'] != 1 else ''}"
    return text + (f" + {entry['from_cache']} from cache" if entry["from_cache"] else "")
