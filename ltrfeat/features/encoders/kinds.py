"""The built-in encoder kinds, registered by :mod:`ltrfeat.features.encoders.registry`; their code is imported on first
use."""

from __future__ import annotations

from ltrfeat.features.encoders.config import LOSSES, SCORES, DeepMatchConfig, EncoderConfig, SbertConfig
from ltrfeat.features.encoders.kind import EncoderKind, lazy

# +MOD of a CLSM / DSSM spec -> its =PATH
TWO_TOWER_MODS = {"teacher": "[=DIR]", "spans": "", "spans+teacher": "[=DIR]", "init": "=BUNDLE"}
SPAN_MODS = ("spans", "spans+teacher")  # the +MODs pre-trained on query-like spans of the documents
START_MODS = (*SPAN_MODS, "init")  # the +MODs whose every fold's training starts from one shared starting point
# the +spans pre-training's options (None: see below); span_min/max_words: 1-4 cut query-like spans from titles;
# span_hold_out 1: the positive is the document without the span (0 or 1); span_whole 1: each document's whole text is
# also one of its spans (None: see LONG_DOC_WORDS)
SPAN_OPTIONS = {
    "spans_per_doc": None,
    "span_epochs": 5,
    "span_min_words": 1,
    "span_max_words": 4,
    "span_hold_out": 0,
    "span_whole": None,
}
SPAN_SWITCHES = ("span_hold_out", "span_whole")  # the span options that are 0 or 1
SPAN_SHAPE = ("span_min_words", "span_max_words", "span_hold_out", "span_whole")  # at their defaults, out of the key
# +spans+teacher over long documents (the collection's median document has at least this many words: descriptions,
# abstracts; not titles -- Home Depot's median title has 11 words, the sample world's 7): spans of 8-24 words and the
# whole documents distilled on the query side too, so that the query tower learns MiniLM's vectors of long texts.
# Long-query world, pre-training alone, NDCG@10 (@1): 1-4-word spans .7640 (.6855), + whole .7966 (.7591), 8-24-word
# spans + whole .8174 (.7907), BM25 .8006 (.7960), MiniLM .8619 (.8000); docs/experiments.md
LONG_DOC_WORDS = 20
LONG_DOC_SPANS = {"span_min_words": 8, "span_max_words": 24, "span_whole": 1}


# +spans+teacher: epochs of the same distillation on each fold's training pairs (MiniLM's vectors of the fold's training
# queries on the query tower, of their candidates on the document tower; never a validation or test query) between the
# span pre-training and the fold's fine-tuning; 0: none. The span pre-training's query tower has seen spans and
# documents only, never a natural-language need: over long documents the folds distil their needs by default
# (LONG_DOC_FOLD_DISTILL epochs), titles keep 0 (their fold trainings and cache keys as before). Long-query world, 3
# folds, NDCG@10: CLSM alone .8195 -> .8360 (p .003), lexical + it .8632 -> .8734 (63% -> 86% of MiniLM's lift; DSSM
# 99%); the fold distillation alone (no fine-tuning) .8358 after 5 epochs, .8328 after 20. docs/experiments.md
FOLD_DISTILL = "fold_distill_epochs"
LONG_DOC_FOLD_DISTILL = 5
# the pre-training's distillation settings a fold distillation shares (its epochs are FOLD_DISTILL's)
FOLD_DISTILL_SHARED = ("distill_loss", "distill_batch_size", "distill_lr", "distill_temperature")


def long_documents(texts) -> bool:
    """Whether the median of ``texts`` has at least :data:`LONG_DOC_WORDS` words (False for no text)."""
    counts = sorted(len(t.split()) for t in texts)
    return bool(counts) and counts[len(counts) // 2] >= LONG_DOC_WORDS


SPANS_WANTED = 50_000  # spans_per_doc by default: enough for this many spans, ...
SPANS_PER_DOC = (4, 16)  # ... and at least 4, at most 16 per document
SPANS_PER_DOC_TEACHER = (1, 16)  # +spans+teacher: MiniLM encodes every span, so at least 1 per document
# +spans+teacher's pre-training by default: the distilled towers only (span_epochs 0: the span training judged on the
# validation spans replaced them, and the towers drifted from MiniLM), distilled at the level of the vectors
# (distill_loss "vector": each span's and title's student vector onto MiniLM's, the towers' out as wide as the
# teacher's vectors) in mini-batches of 1,024 pairs, for enough epochs to read DISTILL_PAIRS span pairs, 4 to 20.
# Pre-training alone, NDCG@1 (@10): 300 Home Depot queries, all 53,475 titles, 1 span per title, 10 epochs: .6001
# (.8354) vs the in-batch KL's .5530 (.8218) at 5 epochs, MiniLM .5820 (.8327), 157 against 2,616 CPU-s; sample world,
# 16 spans per title, 20 epochs: .8347 (.9015) vs KL's .8310 (.9002), MiniLM .8389 (.9081); docs/features.md
SPAN_EPOCHS_TEACHER = 0
SPAN_DISTILL = {"distill_loss": "vector", "distill_batch_size": 1024, "distill_temperature": 0.1}
DISTILL_PAIRS = 500_000
DISTILL_EPOCHS = (4, 20)
# a bare ablate --encoder clsm / dssm becomes MODEL:generalized+spans+teacher below this many judged queries
# (MODEL:generalized+spans without the packaged MiniLM): span pre-training beat the from-scratch CLSM at every size
# measured, 240 to 11,795 queries (docs/features.md: NDCG@1 alone .5246 -> .7829 on the sample world, .5403 -> .5917
# on 300 Home Depot queries, .6387 -> .6566 on all 11,795), and distilling MiniLM on the spans beat span training
# (.7829 -> .8121 on the sample world, .5917 -> .6040 on 300 Home Depot queries, .6566 -> .6631 on all of them;
# long-query world NDCG@10 .7258 -> .8195)
SPANS_BELOW_QUERIES = 12_000
MOD_HELP = {  # what each +MOD of a CLSM / DSSM spec does (ablate --encoder --help)
    "rbm": "DSE: the towers pre-trained as RBMs, dot-product score",
    "teacher": "the packaged MiniLM (=DIR: another sentence-transformer) distilled into the towers first",
    "spans": "pre-trained once on query-like spans of the pairs' documents (no query or label read), then "
    f"fine-tuned in every fold, and what a bare clsm or dssm means below {SPANS_BELOW_QUERIES:,} judged queries "
    "without the packaged MiniLM; options spans_per_doc "
    f"[default: {SPANS_PER_DOC[0]} to {SPANS_PER_DOC[1]}, enough for {SPANS_WANTED:,} spans] and span_epochs "
    f"[default: {SPAN_OPTIONS['span_epochs']}], span_min_words and span_max_words [default: "
    f"{SPAN_OPTIONS['span_min_words']} and {SPAN_OPTIONS['span_max_words']}; e.g. 8 and 24 for long queries over "
    "long documents], span_hold_out [default: 0; 1: the positive is the document without the span]",
    "spans+teacher": "pre-trained once by distilling the packaged MiniLM (=DIR: another sentence-transformer) on "
    "query-like span -> document pairs of the pairs' documents (MiniLM encodes each distinct span and document once, "
    "kept in the --cache teacher store; no query or label read), then fine-tuned in every fold, and what a bare "
    f"clsm or dssm means below {SPANS_BELOW_QUERIES:,} judged queries; options as +spans, "
    f"span_epochs [default: {SPAN_EPOCHS_TEACHER}; N: then N epochs of +spans' span training, kept "
    f"if it beats the distilled towers on the validation spans], span_whole [default: 0; 1: each whole document "
    f"also one of its spans]; when the median document has at least {LONG_DOC_WORDS} words the defaults are "
    f"span_min_words {LONG_DOC_SPANS['span_min_words']}, span_max_words {LONG_DOC_SPANS['span_max_words']} and "
    f"span_whole {LONG_DOC_SPANS['span_whole']}, distill_epochs "
    f"[default: enough for "
    f"{DISTILL_PAIRS:,} span pairs, {DISTILL_EPOCHS[0]} to {DISTILL_EPOCHS[1]}], distill_loss [default: "
    f"{SPAN_DISTILL['distill_loss']}: each text's vector onto MiniLM's, the towers as wide as its vectors; kl: the "
    f"in-batch ranking], distill_batch_size [default: {SPAN_DISTILL['distill_batch_size']}], distill_lr, "
    f"distill_temperature [default: {SPAN_DISTILL['distill_temperature']}, kl only], {FOLD_DISTILL} [default: 0, "
    f"over long documents {LONG_DOC_FOLD_DISTILL}: epochs of the same distillation on each fold's training pairs -- "
    "MiniLM's vectors of its training queries and their documents -- before the fold's fine-tuning]",
    "init": "every fold's encoder fine-tuned from a pre-trained .ltrenc (e.g. train-encoder --from-docs DOCS "
    "--pair spans:title)",
}


def two_tower_settings(spec, start) -> dict:
    """:func:`~ltrfeat.features.encoders.training.train_encoder` arguments of a CLSM / DSSM spec."""
    settings: dict = {"model": spec.model, "loss": spec.loss, "score": spec.resolved_score}
    if spec.pretrain == "rbm":
        settings["pretrain"] = "rbm"
    elif spec.pretrain == "teacher":
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
        load=lazy("ltrfeat.features.encoders.encoder:Encoder.load"),
        config=EncoderConfig,
        train=lazy("ltrfeat.features.encoders.training:train_encoder"),
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
    from ltrfeat.features.encoders.sbert import SbertEncoder
    from ltrfeat.features.encoders._sbert_finetuned import SbertFinetuned, is_finetuned_bundle

    # a directory is a zero-shot model; a file is a fine-tuned bundle (train-encoder --model sbert-ft)
    return SbertFinetuned.load(path) if is_finetuned_bundle(path) else SbertEncoder.load(path)


def _sbert_scorer(path=None):
    # through the teacher-vector cache: a +teacher encoder of the same run reuses these vectors
    from ltrfeat.features.encoders.distill import CachedTeacher

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
        load=lazy("ltrfeat.features.encoders._deepmatch:DeepMatch.load"),
        config=DeepMatchConfig,
        train=lazy("ltrfeat.features.encoders._deepmatch:train_deepmatch"),
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
        load=lazy("ltrfeat.features.encoders._sbert_finetuned:SbertFinetuned.load"),
        config=SbertConfig,
        train=lazy("ltrfeat.features.encoders.sbert_training:train_sbert"),
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
