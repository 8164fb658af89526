"""``ltrfeat letor ...``: inspect, validate and convert LETOR / svmlight files."""
from __future__ import annotations

import click


@click.group()
def letor():
    """Inspect, validate and convert LETOR / svmlight ranking files.

    \b
    Example:
      ltrfeat letor info data/train.letor
    """
