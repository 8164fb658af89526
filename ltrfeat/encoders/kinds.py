"""The built-in encoder kinds, registered by :mod:`ltrfeat.encoders.registry`; their code is imported on first
use."""

from __future__ import annotations

from ltrfeat.encoders.config import LOSSES, SCORES, DeepMatchConfig, EncoderConfig, SbertConfig
from ltrfeat.encoders.kind import EncoderKind, lazy
from ltrfeat.encoders.pretraining import Pretraining

# +MOD of a CLSM / DSSM spec -> its =PATH
TWO_TOWER_MODS = {"teacher": "[=DIR]", "spans": "", "spans+teacher": "[=DIR]", "init": "=BUNDLE"}
SPAN_MODS = ("spans", "spans+teacher")  # the +MODs pre-trained on query-like spans of the documents
START_MODS = (*SPAN_MODS, "init")  # the +MODs whose every fold's training starts from one shared starting point
MOD_HELP = {  # what each +MOD of a CLSM / DSSM spec does (ablate --encoder --help adds the ablation's span defaults)
    "rbm": "DSE: the towers pre-trained as RBMs, dot-product score",
    "teacher": "the packaged MiniLM (=DIR: another sentence-transformer) distilled into the towers first",
    "spans": "pre-trained once on query-like spans of the pairs' documents (no query or label read), then "
    "fine-tuned in every fold",
    "spans+teacher": "pre-trained once by distilling the packaged MiniLM (=DIR: another sentence-transformer) on "
    "query-like span -> document pairs of the pairs' documents (no query or label read), then fine-tuned in every fold",
    "init": "every fold's encoder fine-tuned from a pre-trained .ltrenc (e.g. train-encoder --from-docs DOCS "
    "--pair spans:title)",
}


def two_tower_settings(spec, start) -> dict:
    """:func:`~ltrfeat.encoders.training.train_encoder` arguments of a CLSM / DSSM spec."""
    settings: dict = {"model": spec.model, "loss": spec.loss, "score": spec.resolved_score}
    if spec.pretrain == Pretraining.RBM:
        settings["pretrain"] = "rbm"
    elif spec.pretrain == Pretraining.TEACHER:
        settings["teacher"] = f"sbert={spec.path}" if spec.path else "sbert"
    elif spec.pretrain in START_MODS:
        if start is None:
            raise ValueError(f"a +{spec.pretrain} encoder needs its starting point")
        settings["init"] = start.encoder()
    return settings


def _two_tower(name: str, summary: str, mods: dict, dot_mods: tuple = ()) -> EncoderKind:
    return EncoderKind(
        name=name,
        summary=summary,
        load=lazy("ltrfeat.encoders.encoder:Encoder.load"),
        config=EncoderConfig,
        train=lazy("ltrfeat.encoders.training:train_encoder"),
        trainer_args=("teacher", "init"),
        spec_settings=two_tower_settings,
        losses=LOSSES,
        mods=mods,
        mod_help={mod: MOD_HELP[mod] for mod in mods},
        scores=SCORES,
        dot_mods=dot_mods,
        exports=("onnx",),
        crossfit={
            "pooled": True,
            "start_mods": START_MODS,
            "keeps_start": (*START_MODS, "teacher"),
            "mod_cost": {"teacher": 2.0},  # the distillation runs its own epochs before the ranking loss
        },
    )


def _load_sbert(path=None):
    from ltrfeat.encoders.sbert import SbertEncoder
    from ltrfeat.encoders._sbert_finetuned import SbertFinetuned, is_finetuned_bundle

    # a directory is a zero-shot model; a file is a fine-tuned bundle (train-encoder --model sbert-ft)
    return SbertFinetuned.load(path) if is_finetuned_bundle(path) else SbertEncoder.load(path)


def _sbert_scorer(path=None):
    # through the teacher-vector cache: a +teacher encoder of the same run reuses these vectors
    from ltrfeat.encoders.distill import CachedTeacher

    return CachedTeacher(f"sbert={path}" if path else "sbert")


def _sbert_ft_settings(spec, start) -> dict:
    return {"base": spec.path, "loss": spec.loss, "init": None if start is None else start.encoder()}


BUILTIN = (
    _two_tower(
        "clsm",
        "CLSM encoder bundle: clsm=MODEL.ltrenc -> clsm_<field>_cos, query/field cosine (_dot: dot-scored)",
        TWO_TOWER_MODS,
    ),
    _two_tower(
        "dssm",
        "DSSM encoder bundle: dssm=MODEL.ltrenc -> dssm_<field>_cos, query/field cosine (_dot: dot-scored)",
        {"rbm": "", **TWO_TOWER_MODS},
        dot_mods=("rbm",),  # DSE: RBM pre-training and the dot product, as in the paper
    ),
    EncoderKind(
        name="deepmatch",
        summary="DeepMatch bundle: deepmatch=MODEL.ltrenc -> deepmatch_<field>_score, the pair's match score",
        load=lazy("ltrfeat.encoders._deepmatch:DeepMatch.load"),
        config=DeepMatchConfig,
        train=lazy("ltrfeat.encoders._deepmatch:train_deepmatch"),
        spec_settings=lambda spec, start: {},
        pair_scorer=True,
        crossfit={"pooled": True},
    ),
    EncoderKind(
        name="sbert",
        summary="sentence-transformers model, zero-shot: sbert[=DIR] (default: packaged all-MiniLM-L6-v2) -> "
        "sbert_<field>_cos",
        load=_load_sbert,
        scorer=_sbert_scorer,
        path="[=DIR]",
        needs_file=False,
        transformer=True,
        crossfit={"teacher_scorer": True},
    ),
    EncoderKind(
        name="sbert-ft",
        summary="fine-tuned sentence-transformer bundle: sbert-ft=FT.ltrenc -> sbert-ft_<field>_cos",
        load=lazy("ltrfeat.encoders._sbert_finetuned:SbertFinetuned.load"),
        config=SbertConfig,
        train=lazy("ltrfeat.encoders.sbert_training:train_sbert"),
        trainer_args=("base",),
        spec_settings=_sbert_ft_settings,
        losses=LOSSES,
        path="[=BASE_DIR]",
        transformer=True,
        crossfit={
            "pooled": True,
            "continues_outer": True,
            "keeps_start": (None,),
            "frozen_prefix": True,
            "cost": 6.0,  # an epoch costs several CLSM trainings per row
        },
    ),
)
