"""The feature sets an ablation compares: :class:`FeatureSet` and :func:`plan_feature_sets` (base, base+group,
base+all, base+light and the single features ranked alone)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from ltrfeat.core.dataset import FeatureMap
from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.set_kind import SetKind


@dataclasses.dataclass
class FeatureSet:
    """Feature columns (by name) compared in an ablation.

    ``kind`` (a :class:`~ltrfeat.experiments.set_kind.SetKind`, its value accepted) is ``"ranker"`` (LambdaMART on
    these columns, or with model selection the chosen candidate) or ``"alone"`` (one column, documents sorted by its
    raw value). Results of a selection ablation add ``"candidate"`` sets (``SET/CANDIDATE``: every candidate's test
    scores), the ``"baseline"`` set ``best-single`` (the best single feature of all ranker
    columns, chosen per fold on training queries) and the ``"recommended"`` set (per fold the
    feature set and candidate that inner cross-validation prefers). ``offered``: whether model
    selection may recommend a ranker set; one that is not (``base+light``) is measured, tested and
    reported like the others, and its inner cross-validation is kept beside the choice.
    """

    name: str
    columns: list[str]
    kind: SetKind = SetKind.RANKER
    offered: bool = True

    def __post_init__(self) -> None:
        if self.kind not in set(SetKind):
            planned = ", ".join(SetKind.planned())
            raise LtrfeatError(f"feature set {self.name!r} has kind {self.kind!r}", fix=f"use one of {planned}")
        self.kind = SetKind(self.kind)


def _names_of(feature_map: FeatureMap, spec, what: str) -> list[str]:
    """Feature names selected by ``spec``, in id order."""
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        raise LtrfeatError(f"{what} is empty", fix="give feature ids, id ranges (1-40) or names")
    try:
        columns = feature_map.resolve(spec)
    except KeyError as exc:
        raise LtrfeatError(
            f"{what} {spec!r}: {exc.args[0]}", fix="use ids, id ranges (1-46) or names present in the data"
        ) from None
    if not columns:
        raise LtrfeatError(f"{what} {spec!r} selects no feature", fix="give feature ids, id ranges or names")
    return [feature_map.features[j].name for j in sorted(columns, key=lambda j: feature_map.features[j].id)]


def plan_feature_sets(
    feature_map: FeatureMap,
    *,
    base,
    neural: dict,
    alone=None,
    base_name: str = "lexical",
    light=(),
    deployable: str | None = None,
    engine_features: Callable | None = None,
    say: Callable[[str], None] | None = None,
) -> list[FeatureSet]:
    """The feature sets of an ablation.

    Parameters
    ----------
    feature_map : the columns available in the folds.
    base : selection of the base (lexical) features: ids, id ranges and names, e.g. ``"1-40"``.
    neural : group name → selection (spec string or list of ids/names) of its neural features.
    alone : extra features to rank by alone, besides every neural feature; default the base
        features whose name starts with ``bm25``. ``"all"`` ranks every feature alone.
    base_name : name of the base set.
    light : the neural groups whose encoders run no transformer per text (cheap to serve).
    deployable : an LTR engine: only the features it computes, as ``engine_features(feature_map, names, what=...)``
        says (``(kept, notice)``: :func:`ltrfeat.export.plugin_features.engine_features` for that engine, given by
        the caller -- experiments sit below export); a group with none is left out, and ``say`` is told what was
        left out, in one line per selection.

    Returns
    -------
    ``base``; ``base+GROUP`` per neural group; ``base+all`` when there is more than one group (all
    ranker sets); ``base+light``, the base and every ``light`` group, when two or more groups are light
    and at least one is not: the richest set served without a transformer, measured beside the others
    but not offered to model selection (one more close set would widen the margin the recommendation
    is held to); then one ``alone`` set per single feature, named after the feature.
    """
    if not neural:
        raise LtrfeatError("no neural feature group given", fix="name at least one group, e.g. clsm=clsm_title_cos")

    def computable(cols: list[str], what: str) -> list[str]:
        if deployable is None:
            return cols
        if engine_features is None:
            raise LtrfeatError(f"deployable={deployable!r} needs engine_features", fix="pass the engine's filter")
        kept, notice = engine_features(feature_map, cols, what=what)
        if notice and say is not None:
            say(notice)
        return kept

    base_cols = computable(_names_of(feature_map, base, "base feature selection"), f"the {base_name} set")
    groups: dict[str, list[str]] = {}
    for group, spec in neural.items():
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", str(group)):
            raise LtrfeatError(
                f"neural group name {group!r} must be letters, digits, '_', '.' or '-'", fix="e.g. clsm=clsm_title_cos"
            )
        cols = _names_of(feature_map, spec, f"neural group {group!r}")
        overlap = [c for c in cols if c in base_cols]
        if overlap:
            raise LtrfeatError(
                f"neural group {group!r} feature {overlap[0]!r} is also a base feature",
                fix="leave the neural features out of the base selection (e.g. base 1-40, neural 41-46)",
            )
        try:
            groups[str(group)] = computable(cols, f"{base_name}+{group}")
        except LtrfeatError as exc:  # a set no different from the base one
            if say is not None:
                say(f"--deployable {deployable}: set {base_name}+{group} left out: {exc.problem}")
    if not groups:
        raise LtrfeatError(
            f"{deployable} cannot compute any feature of the neural groups {', '.join(map(str, neural))}",
            fix="give an encoder scored by cosine (DeepMatch scores have no engine query), or leave out --deployable",
        )
    sets = [FeatureSet(base_name, base_cols)]
    sets += [FeatureSet(f"{base_name}+{g}", base_cols + cols) for g, cols in groups.items()]
    all_neural = list(dict.fromkeys(c for cols in groups.values() for c in cols))
    if len(groups) > 1:
        union = set(base_cols) | set(all_neural)
        sets.append(FeatureSet(f"{base_name}+all", [f.name for f in feature_map if f.name in union]))
    light = [g for g in groups if g in set(light)]
    if len(light) >= 2 and len(light) < len(groups):
        union = set(base_cols).union(*(groups[g] for g in light))
        sets.append(FeatureSet(f"{base_name}+light", [f.name for f in feature_map if f.name in union], offered=False))
    if alone is None:
        extra = [c for c in base_cols if c.startswith("bm25")]
    else:
        extra = computable(_names_of(feature_map, alone, "--alone selection"), f"--alone {alone!r}")
    sets += [FeatureSet(c, [c], SetKind.ALONE) for c in dict.fromkeys(all_neural + extra)]
    names = [s.name for s in sets]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise LtrfeatError(
            f"two feature sets would be named {duplicate!r}",
            fix="rename the neural group or the base set so set names stay unique",
        )
    return sets
