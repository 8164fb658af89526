"""Document vectors for the search engine: Elasticsearch / OpenSearch ``_bulk`` NDJSON (``ltrfeat embed``).

Each document becomes an action line and a source line: ``{"index": {"_index": I, "_id": docid}}`` and
the document's text fields plus one ``<encoder>_<field>_vector`` per encoder and field (the fields the
exported featureset's ``script_score`` templates read; see :mod:`ltrfeat.export.plugin_features`). With
``update=True`` the pair is ``{"update": ...}`` / ``{"doc": {vectors}}`` for documents already indexed.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ltrfeat.core.fileio import atomic_output
from ltrfeat.export.plugin_features import vector_field


def write_bulk(
    docs: pd.DataFrame, encoders: dict, out, *, fields, index: str, update: bool = False, batch_size: int = 1024
) -> int:
    """Write ``docs`` (``docid`` + ``fields``) with every encoder's document vectors as ``_bulk`` NDJSON.

    ``encoders``: ``{name: encoder with encode(texts, side="doc")}``. Returns the number of documents.
    Vectors are written as float32 values (shortest round-trip text), as the engines store them.
    """
    vectors = {}
    for name, encoder in encoders.items():
        for field in fields:
            texts = docs[field].fillna("").astype(str).tolist()
            vectors[vector_field(name, field)] = np.asarray(
                encoder.encode(texts, side="doc", batch_size=batch_size), dtype=np.float32
            )
    with atomic_output(out) as fh:
        for i, docid in enumerate(docs["docid"].astype(str)):
            vecs = {k: [float(x) for x in v[i]] for k, v in vectors.items()}
            if update:
                fh.write(json.dumps({"update": {"_index": index, "_id": docid}}) + "\n")
                fh.write(json.dumps({"doc": vecs}) + "\n")
            else:
                source = {f: ("" if pd.isna(docs[f].iat[i]) else str(docs[f].iat[i])) for f in fields}
                fh.write(json.dumps({"index": {"_index": index, "_id": docid}}) + "\n")
                fh.write(json.dumps({**source, **vecs}, ensure_ascii=False) + "\n")
    return len(docs)
