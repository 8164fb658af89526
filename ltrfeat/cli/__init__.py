"""The ``ltrfeat`` command line: thin click commands over the library (``ltrfeat.cli.main.cli``)."""

__all__ = [  # the public modules
    "ablate_cmd",
    "clicks_cmd",
    "datasets_cmd",
    "demo_cmd",
    "encoder_cmd",
    "explain_cmd",
    "export_cmd",
    "extract_cmd",
    "letor_cmd",
    "main",
    "ranker_cmd",
    "report_cmd",
    "serve_cmd",
]
