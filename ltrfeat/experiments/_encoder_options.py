"""Per-model encoder training options for ablations: ``epochs=4`` applies to every trained encoder,
``sbert-ft.epochs=1`` only to the ``sbert-ft`` ones (and wins over the unprefixed key).

An options dict may mix both kinds of key. :func:`merge_options` layers explicit options over
defaults so that an explicit unprefixed key also replaces the defaults' prefixed keys of the same
name (``--encoder-option epochs=2`` means 2 epochs for every model). :func:`model_options` resolves
the dict for one model; for a model without prefixed keys the result equals the unprefixed
options, so cache keys computed from it do not change.
"""

from __future__ import annotations

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.experiments.span_settings import FOLD_DISTILL, SPAN_OPTIONS
from ltrfeat.encoders.registry import encoder_kinds
from ltrfeat.encoders.spec import EncoderSpec
from ltrfeat.encoders.pretraining import Pretraining


# train_encoder options of the distillation
TEACHER_OPTIONS = (
    "distill_epochs",
    "distill_lr",
    "distill_batch_size",
    "distill_weight",
    "distill_rows",
    "distill_loss",
    "distill_temperature",
    "distill_patience",
)
# options of zero-shot kinds, written MODEL.KEY (ablate --encoder-option sbert.engine=torch)
ZERO_SHOT_OPTIONS = {"sbert": ("engine",)}


def _split(key: str) -> tuple[str | None, str]:
    model, sep, name = key.rpartition(".")
    return (model or None) if sep else None, name


def merge_options(defaults: dict, explicit: dict) -> dict:
    """``defaults`` overridden by ``explicit``; an unprefixed explicit key drops the defaults' ``*.key``."""
    names = {key for key in explicit if _split(key)[0] is None}
    merged = {k: v for k, v in defaults.items() if _split(k)[0] is None or _split(k)[1] not in names}
    merged.update(explicit)
    return merged


def model_options(options: dict, model: str, *, known_models=(), accepted=None) -> dict:
    """The options for ``model``: unprefixed keys, overridden by ``model.``-prefixed ones.

    ``known_models``: a prefix naming none of them is an error (a typo would otherwise be ignored).
    ``accepted``: when given, the option names the model's trainer takes; unprefixed keys outside it
    are dropped (options shared by every encoder), a prefixed key outside it is an error.
    """
    plain, own = {}, {}
    for key, value in options.items():
        prefix, name = _split(key)
        if prefix is not None and known_models and prefix not in known_models:
            raise LtrfeatError(
                f"encoder option {key!r} names an unknown model {prefix!r}",
                fix=f"prefix with one of {', '.join(known_models)}, e.g. {known_models[0]}.{name}",
            )
        if prefix is None:
            plain[name] = value
        elif prefix == model:
            if accepted is not None and name not in accepted:
                raise LtrfeatError(
                    f"encoder option {key!r}: {model} training has no option {name!r}",
                    fix=f"use one of {', '.join(sorted(accepted))}",
                )
            own[name] = value
    if accepted is not None:
        plain = {k: v for k, v in plain.items() if k in accepted}
    return {**plain, **own}


def spec_options(spec: EncoderSpec, options: dict) -> dict:
    """The training options of one encoder: unprefixed keys, overridden by ``MODEL.key`` ones (see
    :mod:`ltrfeat.experiments._encoder_options`). Each encoder keeps the unprefixed keys its training config
    has (:mod:`ltrfeat.encoders.config`); an unprefixed key no trainer has, or a prefixed key its
    model's trainer lacks, is an error. Encoders without a teacher drop the distillation options."""
    fixed = {"model", "loss", "score", "pretrain", "seed"}  # set by the --encoder spec and the ablation's seeds
    runtime = {"threads", FOLD_DISTILL} | set(SPAN_OPTIONS)  # a trainer argument beside its config, the +spans settings
    trained: list = [k for k in encoder_kinds().values() if k.trainable]
    known = set().union(*(k.config.names() for k in trained), runtime) - fixed
    unknown = sorted(k for k in options if "." not in k and k not in known)
    if unknown:
        raise LtrfeatError(
            f"encoder option {unknown[0]!r}: no encoder training has it", fix=f"use one of {', '.join(sorted(known))}"
        )
    accepted = (set(spec.kind.config.names()) | runtime) - fixed
    models = (*(k.name for k in trained), *ZERO_SHOT_OPTIONS)
    resolved = model_options(options, spec.model, known_models=models, accepted=accepted)
    if spec.teacher is None:
        # distillation settings mean nothing without a teacher: keep them out of other encoders' cache keys
        resolved = {k: v for k, v in resolved.items() if k not in TEACHER_OPTIONS}
    if not spec.span_pretrained:
        resolved = {k: v for k, v in resolved.items() if k not in SPAN_OPTIONS}
    if spec.pretrain != Pretraining.SPANS_TEACHER:
        resolved.pop(FOLD_DISTILL, None)
    return resolved


def minilm_engine(options: dict) -> str:
    """The MiniLM engine of an ablation's zero-shot passes that ``options`` choose (``sbert.engine``, default
    ``auto``; see :mod:`ltrfeat.encoders.sbert_onnx`), checked with the other zero-shot options."""
    from ltrfeat.encoders import sbert_onnx

    for key in options:
        model, _, name = key.rpartition(".")
        if model in ZERO_SHOT_OPTIONS and name not in ZERO_SHOT_OPTIONS[model]:
            known = ", ".join(f"{model}.{n}" for n in ZERO_SHOT_OPTIONS[model])
            raise LtrfeatError(f"encoder option {key!r}: {model} has no option {name!r}", fix=f"use {known}")
    return sbert_onnx.check_engine(str(options.get("sbert.engine", "auto")))
