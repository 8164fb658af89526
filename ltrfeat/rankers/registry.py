"""Ranker kinds, described once: everything that lists, builds, saves, loads or exports rankers reads this.

A kind's name is both its model-selection candidate name (``train-ranker --select --candidates``, the
ablation's rows) and the ``kind`` recorded in ``MODEL.meta.json``. Importing this module is cheap (no
engine, no scikit-learn): the implementation of a kind is imported on first use.

Adding a kind is one module and one :func:`register_ranker` call (see ``docs/new-ranker.md``); another package
registers its kinds with an entry point in the ``ltrfeat.rankers`` group naming a :class:`RankerKind`, loaded
on the first listing or on the first lookup of a name not registered (spawned worker processes too). The
implementation (``impl``: an object, or ``"module:attribute"`` imported lazily) has three hooks:

- ``make(settings, *, seed, tuned, **options)`` -- an unfitted model; ``settings`` is a
  :class:`ltrfeat.rankers.selection.Candidates` (``columns``, ``ranker_params``, ``criterion``,
  ``gain``, ``no_relevant``), ``tuned`` the searched engine parameters of a tuned kind (else None),
  ``options`` the kind's :attr:`RankerKind.options`;
- ``save(model, path, meta)`` -- write the fitted model to ``path`` and ``meta`` (plus what the kind
  needs to load it) to ``path.meta.json`` (:func:`ltrfeat.rankers.lambdamart.write_model_files`);
- ``load(path, meta)`` -- the model back from ``path`` and its parsed metadata;

plus ``MODEL``, the class of its fitted models (:func:`kind_of` finds a model's kind by it). Models
follow the :class:`RankerModel` protocol; a model that can say what its scores are made of also has
``contributions(data)`` (:func:`ltrfeat.rankers.contributions.contributions`, ``explain-ranker``). A kind whose ``exports_to`` names an LTR engine and whose models are
not LambdaMART also has ``plugin_model(model)`` (the plugin's model ``type``, ``definition`` and
``feature_normalizers``); a kind may say why engines cannot run it in ``NOT_EXPORTABLE``.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.core.plugins import load_entry_points

if TYPE_CHECKING:
    import numpy as np

LEGACY_KIND = "lambdamart"  # model files written before kinds had candidate names (or none at all)
RANKER_ENTRY_POINTS = "ltrfeat.rankers"  # the entry-point group of other packages' ranker kinds
LTR_ENGINES = ("es-ltr", "opensearch-ltr")  # search engines with an LTR plugin (ltrfeat export-ranker)
EXPORT_TARGETS = (*LTR_ENGINES, "xgboost-json", "lightgbm")  # export-ranker --to (ltrfeat.export.ltr_plugin)


@runtime_checkable
class RankerModel(Protocol):
    """What every ranker kind's models do (scikit-learn style: ``fit`` returns self, fitted state ends in ``_``).

    ``feature_map_`` names the features the fitted model reads (matched by name in ``predict``'s data).
    Optional: ``contributions(data)`` -> :class:`ltrfeat.rankers.contributions.Contributions`, per row and
    feature, whose values plus bias add up to ``predict(data)`` (every built-in kind has it).
    """

    def fit(self, train, valid=None) -> "RankerModel": ...

    def predict(self, data) -> np.ndarray: ...

    def describe(self) -> dict: ...


@dataclasses.dataclass(frozen=True)
class RankerKind:
    """One ranker kind.

    name : candidate name and the ``kind`` in model metadata.
    impl : the implementation (see the module docstring), or ``"module:attribute"`` imported on first use.
    simplicity : lower is simpler; the one-SE rule takes the simplest candidate close enough to the best.
    options : keyword arguments ``impl.make`` receives, and what tells this kind's models apart from other
        kinds sharing ``impl.MODEL`` (a model of this kind has these attribute values).
    seed_free : fitting does not depend on the seed (the ablation fits it once, not once per seed).
    exports_to : the LTR engines (``es-ltr``, ``opensearch-ltr``) that can run its models.
    tunes : for a tuned kind, the engine whose hyperparameters model selection searches.
    feature_table : ``fit`` accepts ``table=``, the per-feature criterion table computed once per selection.
    summary : one line for listings.
    """

    name: str
    impl: Any
    simplicity: int
    options: dict = dataclasses.field(default_factory=dict, hash=False)
    seed_free: bool = False
    exports_to: tuple[str, ...] = ()
    tunes: str | None = None
    feature_table: bool = False
    summary: str = ""

    def implementation(self):
        """The implementation object (imported on first use)."""
        if isinstance(self.impl, str):
            module, _, attr = self.impl.partition(":")
            obj = importlib.import_module(module)
            return getattr(obj, attr) if attr else obj
        return self.impl

    def make(self, settings, *, seed: int, tuned: dict | None = None):
        """An unfitted model of this kind."""
        return self.implementation().make(settings, seed=seed, tuned=tuned, **self.options)

    def owns(self, model) -> bool:
        """Whether ``model`` is of this kind."""
        impl = self.implementation()
        return type(model) is impl.MODEL and all(getattr(model, k, None) == v for k, v in self.options.items())


_KINDS: dict[str, RankerKind] = {}
_LOADED = {"entry_points": False}


def register_ranker(kind: RankerKind) -> RankerKind:
    """Add ``kind`` (a name registered before is replaced); returns it."""
    if not isinstance(kind, RankerKind):
        raise LtrfeatError(f"register_ranker() takes a RankerKind, got {type(kind).__name__}")
    if not kind.name or kind.name == LEGACY_KIND or "," in kind.name:
        raise LtrfeatError(f"{kind.name!r} cannot name a ranker kind", fix="use a short name without commas")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a registered kind (tests, plug-ins)."""
    _KINDS.pop(name, None)


def names() -> tuple[str, ...]:
    """Every registered kind, in registration order (entry points' kinds after the built-in ones)."""
    return tuple(_kinds())


def get(name: str) -> RankerKind:
    """The kind called ``name``; a one-line error listing the kinds otherwise."""
    if name not in _KINDS:
        _entry_points()
    try:
        return _KINDS[name]
    except KeyError:
        raise LtrfeatError(f"unknown ranker kind {name!r}", fix=f"choose from {', '.join(_KINDS)}") from None


def simplicity_order() -> tuple[str, ...]:
    """Kind names, simplest first (ties in registration order)."""
    kinds = _kinds()
    return tuple(sorted(kinds, key=lambda n: kinds[n].simplicity))


def seed_free(name: str) -> bool:
    """Whether fitting a ``name`` model does not depend on the seed (False for an unknown name)."""
    kinds = _kinds()
    return name in kinds and kinds[name].seed_free


def deployable(target: str) -> tuple[str, ...]:
    """The kinds whose models ``target`` (an LTR engine) can run, in registration order."""
    return tuple(n for n, k in _kinds().items() if target in k.exports_to)


def kind_of(model) -> RankerKind:
    """The kind recorded on ``model`` (``kind_``, set when it was saved or loaded) when that kind owns it,
    else the first registered kind that owns it (a tuned kind's models look like the untuned ones)."""
    kinds = _kinds()
    recorded = kinds.get(getattr(model, "kind_", ""))
    if recorded is not None and recorded.owns(model):
        return recorded
    for kind in kinds.values():
        if kind.owns(model):
            return kind
    raise LtrfeatError(
        f"no registered ranker kind makes {type(model).__name__} models",
        fix="register its kind (ltrfeat.rankers.registry.register_ranker), see docs/new-ranker.md",
    )


def _kinds() -> dict[str, RankerKind]:
    _entry_points()
    return _KINDS


def _entry_points() -> None:
    load_entry_points(RANKER_ENTRY_POINTS, RankerKind, _KINDS, _LOADED)


_KIND = "ltrfeat.rankers.kinds"
for _tuned in (False, True):
    for _engine, _rank in (("lightgbm", 40), ("xgboost", 41)):
        register_ranker(
            RankerKind(
                f"{_engine}-tuned" if _tuned else _engine,
                f"{_KIND}:LAMBDAMART",
                _rank + 10 * _tuned,
                options={"engine": _engine},
                exports_to=LTR_ENGINES,
                tunes=_engine if _tuned else None,
                summary=f"LambdaMART ({_engine}) "
                + ("with hyperparameters searched on the training queries" if _tuned else "with the given settings"),
            )
        )
register_ranker(
    RankerKind(
        "linear",
        f"{_KIND}:LINEAR",
        20,
        exports_to=LTR_ENGINES,
        summary="pairwise logistic regression on standardised features",
    )
)
register_ranker(
    RankerKind(
        "boost-best",
        f"{_KIND}:BOOST_BEST",
        30,
        feature_table=True,
        summary="LambdaMART boosted from the best single feature's per-query z-score",
    )
)
register_ranker(
    RankerKind(
        "best-single",
        f"{_KIND}:BEST_SINGLE",
        10,
        seed_free=True,
        exports_to=LTR_ENGINES,
        feature_table=True,
        summary="the best single feature (and direction) on the training queries",
    )
)
