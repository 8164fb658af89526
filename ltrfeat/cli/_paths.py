"""The path types of the commands' options, defined once (click's parameter types hold no state, so options share
them). A path given for output need not exist yet."""

from __future__ import annotations

import click

FILE = click.Path(dir_okay=False)
DIR = click.Path(file_okay=False)
EXISTING_FILE = click.Path(exists=True, dir_okay=False)
EXISTING_DIR = click.Path(exists=True, file_okay=False)
