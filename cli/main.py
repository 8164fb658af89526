"""The ``ltrfeat`` click application: thin commands over ``ltr_features`` and ``rankers``."""
from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

import click

from ltr_features.errors import LtrfeatError


def _version() -> str:
    try:
        return version("ltrfeat")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


class _Group(click.Group):
    """Turns library errors into one line on stderr and exit code 2, with no traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except LtrfeatError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), "--version", prog_name="ltrfeat")
def cli():
    """Learning-to-rank features: lexical and neural similarity columns for LETOR files,
    LambdaMART rankers, and ablations that say whether a neural feature helps.

    \b
    Example:
      ltrfeat letor info data/train.letor
    """


# Command registration: one line per command module.
from cli import letor_cmd  # noqa: E402
from cli import extract_cmd  # noqa: E402
from cli import ranker_cmd  # noqa: E402
from cli import datasets_cmd  # noqa: E402
from cli import ablate_cmd  # noqa: E402
from cli import explain_cmd  # noqa: E402
from cli import export_cmd, serve_cmd  # noqa: E402
from cli import encoder_cmd  # noqa: E402
from cli import demo_cmd  # noqa: E402

cli.add_command(letor_cmd.letor)
cli.add_command(extract_cmd.extract)
cli.add_command(extract_cmd.features)
cli.add_command(ranker_cmd.train_ranker)
cli.add_command(ranker_cmd.evaluate)
cli.add_command(ranker_cmd.rank)
cli.add_command(ranker_cmd.rerank)
cli.add_command(datasets_cmd.datasets)
cli.add_command(ablate_cmd.ablate)
cli.add_command(ablate_cmd.compare)
cli.add_command(explain_cmd.explain)
cli.add_command(export_cmd.export_ranker)
cli.add_command(export_cmd.export_encoder)
cli.add_command(serve_cmd.serve)
cli.add_command(encoder_cmd.train_encoder_cmd)
cli.add_command(demo_cmd.demo)


def main():
    cli(prog_name="ltrfeat")


if __name__ == "__main__":
    main()
