"""The floor every layer stands on: the ranking data model, LETOR/text/TREC-free I/O, errors, atomic files,
logging, versions, metrics, settings files, query splitting, CPU and Dask cluster discovery."""
