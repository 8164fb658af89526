"""Training settings of every encoder kind as frozen, validated dataclasses.

One object per trainer replaces its 20-30 keyword arguments: :class:`EncoderConfig` (CLSM / DSSM,
:func:`~ltrfeat.features.encoders.training.train_encoder`), :class:`SbertConfig` (MiniLM fine-tuning,
:func:`~ltrfeat.features.encoders.sbert_training.train_sbert`) and :class:`DeepMatchConfig`
(:func:`~ltrfeat.features.encoders.deepmatch.train_deepmatch`). A config is checked once, when it is
made; ``to_dict`` gives plain JSON values and ``from_dict`` (or :func:`ltrfeat.core.config_files.read_config`
for a TOML/YAML/JSON file) reads them back, refusing unknown keys with the list of known ones.

Runtime settings that do not change the trained model's numbers (threads, progress bars, checkpoint
paths) and objects that are not plain values (a teacher model, an analyzer) stay trainer arguments.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

LOSSES = ("softmax", "generalized", "hinge")
SOFT_LABELS = ("linear", "clicks", "identity")
OPTIMIZERS = ("adam", "sgd")
SCORES = ("cosine", "dot")
ARCHITECTURES = ("clsm", "dssm")
PRECISIONS = ("fp32", "bf16")  # MiniLM fine-tuning's matrix products (see sbert_prefix.compute)

C = TypeVar("C", bound="TrainingConfig")


def _choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}")


def _at_least(config, minimum, *names) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{name} must be a number >= {minimum}; got {value!r}")


def _fraction(config, *names) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ValueError(f"{name} must be in [0, 1); got {value!r}")


@dataclass(frozen=True)
class TrainingConfig:
    """Fields shared by every trainer; subclasses add theirs and check them in ``_check``."""

    kind: ClassVar[str] = "encoder"
    epochs: int = 10
    negatives: int = 4
    hard_negatives: int = 0
    soft_labels: str = "linear"
    min_positive: float = 0.5
    val_fraction: float = 0.1
    patience: int = 2
    seed: int = 0

    def __post_init__(self):
        _at_least(self, 1, "epochs", "patience")
        _at_least(self, 0, "negatives", "hard_negatives")
        _choice("soft_labels", self.soft_labels, SOFT_LABELS)
        _fraction(self, "val_fraction")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed must be an integer; got {self.seed!r}")
        self._check()

    def _check(self) -> None:
        """Checks of the subclass's own fields."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The settings this config holds."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_dict(cls: type[C], values: dict[str, Any], *, source: str = "config") -> C:
        """A config from plain values (``to_dict``'s output, a config file's table); unknown keys are an error."""
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise ValueError(
                f"{source}: {cls.kind} training has no setting {unknown[0]!r}; use one of {', '.join(cls.names())}"
            )
        tuples = cls._tuples()
        settings: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) and k in tuples else v for k, v in values.items()
        }
        return cls(**settings)

    @classmethod
    def from_file(cls: type[C], path, *, table: str | None = None) -> C:
        """A config from a TOML/YAML/JSON file's top level, or from its ``table`` (e.g. ``"encoder"``)."""
        from ltrfeat.core.config_files import read_config
        from ltrfeat.core.errors import LtrfeatError

        values = read_config(path)
        if table is not None:
            inner = values.get(table)
            if not isinstance(inner, dict):
                raise LtrfeatError(f"no [{table}] table", path=path, fix=f"put the settings in a [{table}] table")
            values = inner
        try:
            return cls.from_dict({k.replace("-", "_"): v for k, v in values.items()})
        except (TypeError, ValueError) as exc:
            raise LtrfeatError(str(exc).removeprefix("config: "), path=path, fix="fix the setting") from None

    @classmethod
    def build(cls: type[C], config: C | None = None, options: dict[str, Any] | None = None) -> C:
        """``config`` (default: all defaults) with ``options`` replacing some of its settings."""
        if config is not None and not isinstance(config, cls):
            raise TypeError(f"config must be a {cls.__name__}, got {type(config).__name__}")
        base = cls() if config is None else config
        if not options:
            return base
        return cls.from_dict({**base.to_dict(), **options}, source=f"{cls.__name__} option")

    @classmethod
    def _tuples(cls) -> set[str]:
        return {f.name for f in dataclasses.fields(cls) if str(f.type).startswith("tuple")}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (tuples as lists, mappings copied)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else dict(value) if isinstance(value, dict) else value
        return out

    def replace(self: C, **changes) -> C:
        """A copy with ``changes`` (checked like a new config)."""
        return type(self).build(self, changes)


@dataclass(frozen=True)
class EncoderConfig(TrainingConfig):
    """CLSM / DSSM training (see :func:`~ltrfeat.features.encoders.training.train_encoder` for each setting).

    ``gamma=None`` means 10 with the cosine score and 1 with the dot score; ``lr=None`` the optimizer's
    default (Adam 1e-3, SGD 0.1); ``sizes`` the architecture's layer sizes, e.g. ``{"conv": 300, "out": 128}``;
    ``pretrain``: None or ``"rbm"`` (DSSM); the ``distill_*`` settings apply with a teacher only.
    """

    kind: ClassVar[str] = "clsm/dssm"
    model: str = "clsm"
    loss: str = "softmax"
    score: str = "cosine"
    in_batch: bool = True
    gamma: float | None = None
    margin: float = 1.0
    batch_size: int = 1024
    optimizer: str = "adam"
    lr: float | None = None
    click_scale: float = 1.0
    min_count: int = 1
    n_buckets: int | None = None
    shared: bool = False
    sizes: dict | None = field(default=None, hash=False)
    pretrain: str | None = None
    distill_epochs: int = 8
    distill_lr: float = 3e-3
    distill_weight: float = 0.0

    def _check(self) -> None:
        _choice("model", self.model, ARCHITECTURES)
        _choice("loss", self.loss, LOSSES)
        _choice("score", self.score, SCORES)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _at_least(self, 2, "batch_size")
        _at_least(self, 1, "min_count", "distill_epochs")
        _at_least(self, 0, "distill_weight")
        if self.gamma is not None and not self.gamma > 0:
            raise ValueError(f"gamma must be > 0 (or None for the score's default); got {self.gamma!r}")
        if self.lr is not None and not self.lr > 0:
            raise ValueError(f"lr must be > 0 (or None for the optimizer's default); got {self.lr!r}")
        if not (self.click_scale > 0 and self.distill_lr > 0):
            raise ValueError("click_scale and distill_lr must be > 0")
        if self.n_buckets is not None:
            _at_least(self, 1, "n_buckets")
        if not (self.negatives or self.hard_negatives or self.in_batch):
            raise ValueError("no negatives: set negatives > 0, hard_negatives > 0 or in_batch=True")
        if self.pretrain not in (None, "rbm") or (self.pretrain == "rbm" and self.model != "dssm"):
            raise ValueError(
                f"pretrain must be None or 'rbm' (with model='dssm'), got {self.pretrain!r} with model={self.model!r}"
            )
        if self.sizes is not None and not isinstance(self.sizes, dict):
            raise ValueError(f"sizes must be a mapping of layer sizes, e.g. {{'out': 128}}; got {self.sizes!r}")

    @property
    def resolved_gamma(self) -> float:
        """``gamma``, or its default for the score."""
        return self.gamma if self.gamma is not None else (10.0 if self.score == "cosine" else 1.0)


@dataclass(frozen=True)
class SbertConfig(TrainingConfig):
    """Fine-tuning a sentence-transformer (see :func:`~ltrfeat.features.encoders.sbert_training.train_sbert`)."""

    kind: ClassVar[str] = "sbert-ft"
    loss: str = "softmax"
    epochs: int = 1
    negatives: int = 0
    in_batch: bool = True
    gamma: float = 20.0
    margin: float = 0.2
    batch_size: int = 32
    accumulate: int = 1
    lr: float = 2e-5
    weight_decay: float = 0.01
    max_seq_length: int = 32
    freeze_layers: int = 4
    keep_frozen: bool = True
    shared: bool = True
    click_scale: float = 1.0
    patience: int = 1
    precision: str = "fp32"

    def _check(self) -> None:
        _choice("loss", self.loss, LOSSES)
        _choice("precision", self.precision, PRECISIONS)
        _at_least(self, 2, "batch_size", "max_seq_length")
        _at_least(self, 1, "accumulate")
        _at_least(self, -1, "freeze_layers")
        _at_least(self, 0, "weight_decay")
        if not (self.gamma > 0 and self.lr > 0 and self.click_scale > 0):
            raise ValueError("gamma, lr and click_scale must be > 0")
        if not (self.negatives or self.hard_negatives or self.in_batch):
            raise ValueError("no negatives: set negatives > 0, hard_negatives > 0 or in_batch=True")


@dataclass(frozen=True)
class DeepMatchConfig(TrainingConfig):
    """DeepMatch training (see :func:`~ltrfeat.features.encoders.deepmatch.train_deepmatch`)."""

    kind: ClassVar[str] = "deepmatch"
    topics: tuple[int, int] = (50, 10)
    patch_words: int = 10
    min_links: int = 3
    max_links: int = 8
    units: tuple[int, int] = (3, 3)
    latent: int = 4
    committee: int = 16
    lda_iter: int = 5
    lda_docs: int = 20000
    min_df: int = 2
    max_vocab: int = 20000
    margin: float = 0.1
    batch_size: int = 128
    lr: float | None = None

    def _check(self) -> None:
        if len(self.topics) != 2 or not 1 <= int(self.topics[1]) <= int(self.topics[0]):
            raise ValueError(f"topics must be (fine, coarse) with 1 <= coarse <= fine, got {tuple(self.topics)}")
        if len(self.units) != 2 or min(self.units) < 1:
            raise ValueError(f"units must be two counts >= 1, got {tuple(self.units)}")
        _at_least(
            self,
            1,
            "patch_words",
            "latent",
            "committee",
            "min_links",
            "max_links",
            "lda_iter",
            "lda_docs",
            "min_df",
            "max_vocab",
        )
        _at_least(self, 2, "batch_size")
        if self.negatives + self.hard_negatives < 1:
            raise ValueError("need at least one negative: negatives or hard_negatives >= 1")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin must be in (0, 1) for a score in (0, 1), got {self.margin}")
        if self.lr is not None and not self.lr > 0:
            raise ValueError(f"lr must be > 0 (or None for 3e-3); got {self.lr!r}")
