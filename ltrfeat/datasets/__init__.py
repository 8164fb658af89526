"""Data sets: the synthetic product-search world (``synth``) and converters from public formats (``converters``)."""

__all__ = ["converters", "synth"]  # the public subpackages
