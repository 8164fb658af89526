"""The typed objects of an ablation's summary (:func:`ltrfeat.experiments.summary.summarise`): each set's mean on a
metric (:class:`SetResult`) and each paired comparison (:class:`Comparison`), gathered in a :class:`Summary`.

``to_dict()`` gives the objects ``report.json`` holds (the same keys in the same order); ``from_dict`` /
``Summary.from_report`` read them back, so the readers of a saved report (``ltrfeat report DIR``) use the same
attributes as a fresh run.
"""

from __future__ import annotations

import dataclasses
import math

from ltrfeat.experiments.set_kind import SetKind

LEVEL = 0.05  # the Holm-adjusted p below which a comparison is significant


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Paired statistics of ``variant`` against ``baseline`` on ``metric`` over the test queries both have (pooled
    over folds): means, the mean delta (``variant - baseline``) and its bootstrap interval, the relative change (None
    or NaN when the baseline's mean is 0), the paired t-test's and randomisation test's p-values, per-query wins, ties
    and losses, and ``p_holm``, the randomisation p Holm-adjusted across the report (None until adjusted)."""

    baseline: str
    variant: str
    metric: str
    base_mean: float
    variant_mean: float
    delta: float
    ci95_delta: tuple[float, float]
    relative: float | None
    p_ttest: float
    p_randomization: float
    wins: int
    ties: int
    losses: int
    n_queries: int
    p_holm: float | None = None

    def significant(self, level: float = LEVEL) -> bool:
        """The Holm-adjusted p is below ``level``."""
        return self.p_holm is not None and self.p_holm < level

    def better(self, level: float = LEVEL) -> bool:
        """The variant is significantly better than the baseline."""
        return self.delta > 0 and self.significant(level)

    def worse(self, level: float = LEVEL) -> bool:
        """The variant is significantly worse than the baseline."""
        return self.delta < 0 and self.significant(level)

    def to_dict(self) -> dict:
        """The comparison as ``report.json`` holds it."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return out | {"ci95_delta": list(self.ci95_delta)}

    @classmethod
    def from_dict(cls, data: dict) -> Comparison:
        """A comparison of a ``report.json`` object (keys it does not know are left out). Its values are taken as
        they are: a report may come from someone else, and its readers check what they show."""
        values = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name != "p_holm"}
        interval = values["ci95_delta"]
        return cls(
            **values | {"ci95_delta": tuple(interval) if isinstance(interval, list) else interval},
            p_holm=data.get("p_holm"),
        )


@dataclasses.dataclass(frozen=True)
class SetResult:
    """A feature set's mean on a metric over its test queries (all folds pooled, excluded queries left out), with the
    bootstrap interval of that mean (NaN for candidate rows, whose intervals are not shown)."""

    feature_set: str
    kind: SetKind
    metric: str
    mean: float
    ci95: tuple[float, float]
    n_queries: int

    def to_dict(self) -> dict:
        """The result as ``report.json`` holds it."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return out | {"ci95": list(self.ci95)}

    @classmethod
    def from_dict(cls, data: dict) -> SetResult:
        """A result of a ``report.json`` object (an interval written as nulls is read as NaN)."""
        lo, hi = (math.nan if v is None else v for v in data["ci95"])
        return cls(
            data["feature_set"], SetKind(data["kind"]), data["metric"], data["mean"], (lo, hi), data["n_queries"]
        )


@dataclasses.dataclass(frozen=True)
class Summary:
    """An ablation's summary: the ``baseline`` ranker set (None without one), how the statistics were made, every
    set's results, the comparisons, the verdict (a dict; None without model selection) and the stage profile of the
    command that ran it (None from :func:`~ltrfeat.experiments.summary.summarise` alone)."""

    baseline: str | None
    statistics: dict
    results: list[SetResult]
    comparisons: list[Comparison]
    verdict: dict | None = None
    stages: dict | None = None

    def means(self) -> dict[tuple[str, str], SetResult]:
        """Results by (feature set, metric)."""
        return {(r.feature_set, r.metric): r for r in self.results}

    @classmethod
    def from_report(cls, data: dict) -> Summary:
        """The summary a ``report.json`` object was written from (its means and comparisons as written: NaN as
        None), so a saved report is rendered again as a fresh one is."""
        config = data["config"]
        return cls(
            config.get("baseline"),
            config["statistics"],
            [SetResult.from_dict(r) for r in data["results"]],
            [Comparison.from_dict(c) for c in data["comparisons"]],
            data.get("verdict"),
            data.get("stage_seconds"),
        )

    def to_dict(self) -> dict:
        """The summary as plain dicts and lists (JSON-able once non-finite floats are dealt with)."""
        return {
            "baseline": self.baseline,
            "statistics": self.statistics,
            "results": [r.to_dict() for r in self.results],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "verdict": self.verdict,
            "stages": self.stages,
        }
