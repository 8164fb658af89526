"""What a feature set of an ablation is: the kinds a user plans and the kinds the results add."""

from __future__ import annotations

import enum


class SetKind(enum.StrEnum):
    """A :class:`~ltrfeat.experiments.feature_sets.FeatureSet`'s kind. A ``str``: it equals, formats and serialises
    (report.json, run-cache keys) as its value."""

    RANKER = "ranker"  # LambdaMART on the set's columns (with selection: the chosen candidate)
    ALONE = "alone"  # one column, documents sorted by its raw value
    CANDIDATE = "candidate"  # results of a selection ablation: SET/CANDIDATE, every candidate's test scores
    BASELINE = "baseline"  # results: best-single, the best single ranker column chosen per fold
    RECOMMENDED = "recommended"  # results: per fold, the set and candidate inner cross-validation prefers

    @classmethod
    def planned(cls) -> tuple[SetKind, ...]:
        """The kinds a user plans; the others are added by a selection ablation's results."""
        return cls.RANKER, cls.ALONE
