"""The ablation's policy for span pre-training (``+spans``, ``+spans+teacher``): its options and their defaults,
the long-document rule, the fold distillation, and when a bare ``clsm`` / ``dssm`` becomes a span-pre-trained one.

The measurements behind each default are in docs/features.md and docs/experiments.md (span pre-training and its
distillation; the long-query world), not repeated here.
"""

from __future__ import annotations

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
# abstracts; not titles): spans of 8-24 words and the whole documents distilled on the query side too, so that the
# query tower learns MiniLM's vectors of long texts (docs/experiments.md, the long-query world)
LONG_DOC_WORDS = 20
LONG_DOC_SPANS = {"span_min_words": 8, "span_max_words": 24, "span_whole": 1}
# +spans+teacher: epochs of the same distillation on each fold's training pairs (MiniLM's vectors of the fold's training
# queries on the query tower, of their candidates on the document tower; never a validation or test query) between the
# span pre-training and the fold's fine-tuning; 0: none. The span pre-training's query tower has seen spans and
# documents only, never a natural-language need: over long documents the folds distil their needs by default
# (LONG_DOC_FOLD_DISTILL epochs), titles keep 0 (their fold trainings and cache keys as before); docs/experiments.md
FOLD_DISTILL = "fold_distill_epochs"
LONG_DOC_FOLD_DISTILL = 5
# the pre-training's distillation settings a fold distillation shares (its epochs are FOLD_DISTILL's)
FOLD_DISTILL_SHARED = ("distill_loss", "distill_batch_size", "distill_lr", "distill_temperature")

SPANS_WANTED = 50_000  # spans_per_doc by default: enough for this many spans, ...
SPANS_PER_DOC = (4, 16)  # ... and at least 4, at most 16 per document
SPANS_PER_DOC_TEACHER = (1, 16)  # +spans+teacher: MiniLM encodes every span, so at least 1 per document
# +spans+teacher's pre-training by default: the distilled towers only (span_epochs 0: the span training judged on the
# validation spans replaced them, and the towers drifted from MiniLM), distilled at the level of the vectors
# (distill_loss "vector": each span's and title's student vector onto MiniLM's, the towers' out as wide as the
# teacher's vectors) in mini-batches of 1,024 pairs, for enough epochs to read DISTILL_PAIRS span pairs, 4 to 20
# (docs/features.md)
SPAN_EPOCHS_TEACHER = 0
SPAN_DISTILL = {"distill_loss": "vector", "distill_batch_size": 1024, "distill_temperature": 0.1}
DISTILL_PAIRS = 500_000
DISTILL_EPOCHS = (4, 20)
# a bare ablate --encoder clsm / dssm becomes MODEL:generalized+spans+teacher below this many judged queries
# (MODEL:generalized+spans without the packaged MiniLM): span pre-training beat the from-scratch CLSM at every size
# measured, and distilling MiniLM on the spans beat span training (docs/features.md)
SPANS_BELOW_QUERIES = 12_000

# ablate --encoder --help: what +spans and +spans+teacher do, with the defaults above
SPAN_MOD_HELP = {
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
}


def long_documents(texts) -> bool:
    """Whether the median of ``texts`` has at least :data:`LONG_DOC_WORDS` words (False for no text)."""
    counts = sorted(len(t.split()) for t in texts)
    return bool(counts) and counts[len(counts) // 2] >= LONG_DOC_WORDS
