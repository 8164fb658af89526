"""Exports to search engines: Elasticsearch / OpenSearch LTR featuresets and models, document vectors in bulk,
ONNX encoders."""

__all__ = [  # the public modules
    "bulk",
    "ltr_plugin",
    "onnx",
    "onnx_check",
    "parity",
    "plugin_features",
]
