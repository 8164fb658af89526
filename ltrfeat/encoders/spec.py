"""The two encoder grammars, parsed here only, and their help and error texts.

``ablate --encoder`` names an encoder to train: ``kind[:LOSS][+MOD[+MOD]][@SCORE][=PATH]``, an
:class:`EncoderSpec` (which parts a kind takes is its registry entry's, ``encoder_kind(name).grammar``).
``extract`` / ``serve`` / ``export-encoder --encoder`` name a model to score with: ``NAME[=PATH]``, the kind's name
with an optional ``-label`` (:func:`parse_encoder_spec`, several at once :func:`parse_encoder_specs`). Both split off ``=PATH`` alike (:func:`_split_path`)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.encoders.kinds import SPAN_MODS
from ltrfeat.encoders.kind import EncoderKind
from ltrfeat.encoders.registry import encoder_kind, encoder_kinds
from ltrfeat.encoders.pretraining import Pretraining

_SPEC = re.compile(
    r"^(?P<model>[a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?::(?P<loss>[a-z]+))?(?:\+(?P<pretrain>[a-z]+(?:\+[a-z]+)*))?"
    r"(?:@(?P<score>[a-z]+))?$"
)
_LABEL = re.compile(r"^[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*$")  # clsm-gen, clsm-generalized-spans-teacher


def _split_path(text: str) -> tuple[str, str | None]:
    """``"NAME=PATH"`` -> ``("NAME", "PATH")`` (everything after the first ``=``), ``"NAME"`` -> ``("NAME", None)``."""
    head, sep, path = text.strip().partition("=")
    return head, path if sep else None


@dataclasses.dataclass(frozen=True)
class EncoderSpec:
    """An encoder to cross-fit: ``clsm:softmax``, ``dssm:generalized``, ``dssm:hinge+rbm`` (DSE: towers
    pre-trained as RBMs, dot-product score), ``clsm:generalized+teacher`` (towers first distilled from the
    packaged MiniLM; ``+teacher=DIR`` for another sentence-transformer), ``clsm:generalized+spans`` (towers
    first pre-trained once on query-like spans of the pairs' own documents -- no query or label is read --
    then fine-tuned on each fold's training pairs), ``clsm:generalized+spans+teacher`` (as ``+spans``, the span
    pre-training first distilled from MiniLM; ``=DIR`` for another sentence-transformer), ``clsm:generalized+init=BUNDLE`` (every fold's encoder
    starts from a pre-trained ``.ltrenc``, e.g. trained on a larger collection without judgments, and is
    fine-tuned on the fold's training pairs), ``deepmatch`` (pair interaction
    model), ``sbert`` or ``sbert=PATH``. A trained DSSM/CLSM spec may end in ``@dot`` or ``@cosine`` to choose its score
    (``dssm:hinge@dot``, ``dssm:hinge+rbm@cosine``); the default is cosine, and dot for ``+rbm`` (DSE
    as in the paper), so ``dssm:hinge`` stays comparable with earlier cosine results."""

    model: str
    loss: str | None = None
    path: str | None = None
    pretrain: str | None = None
    score: str | None = None  # None: the default_score

    @property
    def kind(self):
        """The :class:`~ltrfeat.encoders.registry.EncoderKind` of ``model``."""
        return encoder_kind(self.model)

    @property
    def default_score(self) -> str | None:
        """The score this spec trains without an ``@`` choice (None: the kind has no score choice)."""
        return self.kind.default_score(self.pretrain)

    @property
    def resolved_score(self) -> str | None:
        """``"cosine"`` or ``"dot"`` for a trained DSSM/CLSM, None otherwise."""
        return self.score or self.default_score

    @property
    def name(self) -> str:
        """Group name used in feature-set names (``lexical+clsm-softmax``, ``lexical+dssm-hinge-rbm``); a
        score other than the spec's default is appended (``dssm-hinge-dot``, ``dssm-hinge-rbm-cosine``)."""
        parts = [self.model] + [p.replace("+", "-") for p in (self.loss, self.pretrain) if p is not None]
        if self.pretrain == Pretraining.INIT:  # the bundle's file name tells two +init encoders apart
            parts.append(re.sub(r"[^a-z0-9]+", "-", Path(self.path or "").stem.lower()).strip("-"))
        if self.resolved_score is not None and self.resolved_score != self.default_score:
            parts.append(self.resolved_score)
        return "-".join(parts)

    @property
    def text(self) -> str:
        """The spec as ``ablate --encoder`` takes it (the loss written out: ``clsm`` is ``clsm:softmax``)."""
        parts = [self.model, f":{self.loss}" * bool(self.loss), f"+{self.pretrain}" * bool(self.pretrain)]
        return "".join(parts + [f"@{self.score}" * bool(self.score), f"={self.path}" * bool(self.path)])

    @property
    def span_pretrained(self) -> bool:
        """Every fold's encoder starts from one pre-training on query-like spans of the documents (``+spans``,
        ``+spans+teacher``)."""
        return self.pretrain in SPAN_MODS

    @property
    def teacher(self) -> str | None:
        """The sentence-transformer a ``+teacher`` or ``+spans+teacher`` spec distils (``sbert`` or ``sbert=DIR``)."""
        if self.pretrain not in (Pretraining.TEACHER, Pretraining.SPANS_TEACHER):
            return None
        return f"sbert={self.path}" if self.path else "sbert"

    @property
    def column_suffix(self) -> str:
        """``score`` for a pair scorer (DeepMatch), ``dot`` for a dot-product encoder, ``cos`` for a cosine."""
        return self.kind.column_suffix(self.resolved_score)

    @property
    def trainable(self) -> bool:
        return self.kind.trainable

    @classmethod
    def parse(cls, text: str) -> "EncoderSpec":
        """A spec from its ``ablate --encoder`` text; which parts a kind takes is its registry entry's."""
        head, path = _split_path(text)
        m = _SPEC.match(head)
        kinds = encoder_kinds()
        if not m or m["model"] not in kinds or (path is not None and not re.fullmatch(".+", path)):  # one line
            raise LtrfeatError(f"unknown encoder {text!r}", fix=spec_fix())
        model, loss, pretrain, score = m["model"], m["loss"], m["pretrain"], m["score"]
        kind = kinds[model]
        if pretrain is not None and pretrain not in kind.mods:
            with_mods = [f"{k.name} {'/'.join('+' + mod for mod in k.mods)}" for k in kinds.values() if k.mods]
            raise LtrfeatError(
                f"encoder {text!r}: the pre-trainings are {', '.join(with_mods)}",
                fix="write e.g. "
                + ", ".join(f"{k.name}:{k.losses[0]}+{next(iter(k.mods))}" for k in kinds.values() if k.mods),
            )
        mod_path = kind.mods.get(pretrain, "") if pretrain is not None else ""
        if mod_path.startswith("=") and not path:
            raise LtrfeatError(
                f"encoder {text!r}: +{pretrain} needs the pre-trained {mod_path[1:].lower()}",
                fix=f"write e.g. {model}:{kind.losses[0]}+{pretrain}{mod_path}",
            )
        if score is not None and score not in kind.scores:
            scored = [k.name for k in kinds.values() if k.scores]
            raise LtrfeatError(
                f"encoder {text!r}: only {' and '.join(scored)} take a score, "
                + " or ".join(f"@{s}" for s in kinds[scored[0]].scores),
                fix=f"write e.g. {scored[0]}:{kinds[scored[0]].losses[0]}@dot",
            )
        if path is not None and not (kind.path or mod_path):
            raise LtrfeatError(f"encoder {text!r}: {model} takes no path", fix=f"write {kind.grammar}")
        if not kind.losses:
            if loss is not None:
                raise LtrfeatError(f"encoder {text!r}: {model} takes no loss", fix=f"write {kind.grammar}")
        else:
            loss = loss or kind.losses[0]
            if loss not in kind.losses:
                raise LtrfeatError(
                    f"encoder {text!r}: unknown loss {loss!r}",
                    fix=f"use {', '.join(kind.losses[:-1])} or {kind.losses[-1]}",
                )
        return cls(model, loss, path, pretrain, score)


def spec_fix() -> str:
    """The ``ablate --encoder`` grammar of every kind, for error messages and ``--help``."""
    kinds = encoder_kinds().values()
    return (
        "write KIND[:LOSS][+PRETRAINING][@SCORE][=PATH], one of "
        + ", ".join(k.grammar for k in kinds)
        + " (e.g. clsm:softmax, dssm:hinge+rbm, clsm:softmax@dot for the dot-product score, sbert-ft:generalized)"
    )


def spec_metavar() -> str:
    """The ``ablate --encoder`` metavar: the grammar with every known ``+MOD``."""
    mods = dict.fromkeys(mod for kind in encoder_kinds().values() for mod in kind.mods)
    return "KIND[:LOSS]" + (f"[+{'|+'.join(mods)}]" if mods else "") + "[@SCORE][=PATH]"


def spec_help(mod_help: Mapping[str, str] = MappingProxyType({})) -> str:
    """The ``ablate --encoder`` help: every kind's grammar, the defaults and what each ``+MOD`` does (``mod_help``:
    a caller's fuller words for some of them, e.g. the ablation's span defaults)."""
    kinds = list(encoder_kinds().values())
    mods: dict[str, str] = {}
    for kind in kinds:
        for mod, words in kind.mod_help.items():
            mods.setdefault(mod, mod_help.get(mod, words))
    dot = list(dict.fromkeys(f"+{mod}" for kind in kinds for mod in kind.dot_mods))
    text = (
        "One of "
        + ", ".join(k.grammar for k in kinds)
        + "; the first :LOSS and @SCORE listed are the defaults"
        + (f" (@dot with {', '.join(dot)})" if dot else "")
        + ". "
    )
    text += "".join(f"+{mod}: {words}. " for mod, words in mods.items())
    zero_shot = [k.name for k in kinds if not k.trainable]
    if zero_shot:
        text += f"Zero-shot (not trained): {', '.join(zero_shot)}. "
    return text + "E.g. clsm:softmax, dssm:hinge+rbm, clsm:generalized+spans, sbert, sbert-ft:generalized."


def model_spec_fix() -> str:
    """How to write an ``extract --encoder``: ``NAME=MODEL.ltrenc`` or a zero-shot kind's ``NAME[=DIR]``."""
    examples = [f"{k.name}=MODEL.ltrenc" if k.needs_file else f"{k.name}{k.path}" for k in encoder_kinds().values()]
    return f"write {', '.join(examples)} (a name may carry a suffix: clsm-gen=...)"


def encoder_kind_of(name: str) -> EncoderKind | None:
    """The kind an encoder name stands for: a kind's name, or a kind's name with a ``-label`` suffix (the longest
    kind name that fits: ``sbert-ft-a`` is an ``sbert-ft``); None for any other name."""
    kinds = encoder_kinds()
    if name in kinds:
        return kinds[name]
    for kind in sorted(kinds, key=len, reverse=True):
        if name.startswith(kind + "-") and _LABEL.match(name[len(kind) + 1 :]):
            return kinds[kind]
    return None


def parse_encoder_spec(spec: str) -> tuple[str, str | None]:
    """``"clsm=m.ltrenc"`` -> ``("clsm", "m.ltrenc")``; ``"sbert"`` -> ``("sbert", None)``."""
    name, path = _split_path(spec)
    name = name.strip()
    kind = encoder_kind_of(name)
    if kind is None:
        raise LtrfeatError(f"unknown encoder {spec!r}", fix=model_spec_fix())
    if path is not None and not path.strip():
        raise LtrfeatError(f"encoder {spec!r} has an empty path", fix=model_spec_fix())
    if path is None and kind.needs_file:
        raise LtrfeatError(f"encoder {spec!r} needs a model file", fix=f"write {name}=MODEL.ltrenc")
    return name, (path or "").strip() or None


def parse_encoder_specs(specs) -> dict[str, str | None]:
    """Several ``--encoder NAME[=PATH]`` texts -> ``{name: path}`` in their order, checked before any is loaded: a
    name given twice, or a path that does not exist, is an error."""
    out: dict[str, str | None] = {}
    for spec in specs:
        name, path = parse_encoder_spec(spec)
        if name in out:
            raise LtrfeatError(
                f"--encoder {name} is given twice",
                fix=f"tell them apart with a suffix, e.g. {name}-a=... and {name}-b=...",
            )
        if path is not None and not Path(path).exists():
            raise LtrfeatError(
                f"--encoder {name}: no such file or directory",
                path=path,
                fix="give NAME=PATH of an .ltrenc bundle or a model directory",
            )
        out[name] = path
    return out
