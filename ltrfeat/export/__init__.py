"""Exports to search engines: Elasticsearch / OpenSearch LTR featuresets and models, document vectors in bulk,
ONNX encoders."""
