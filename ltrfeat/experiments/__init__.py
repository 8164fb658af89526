"""Experiments: cross-fitted encoders, the worker pool, ablation runs, statistics, verdict, reports and caches.

The only layer that uses both :mod:`ltrfeat.features` and :mod:`ltrfeat.rankers`."""
