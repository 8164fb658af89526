"""The ``ltrfeat`` click application: thin commands over ``ltrfeat.features`` and ``rankers``."""

from __future__ import annotations

import contextlib
import signal
import sys


@contextlib.contextmanager
def _starting():
    """Ctrl-C while the command line loads (its imports): one line and exit 130, not a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted while starting; nothing was done\n")
        sys.exit(128 + signal.SIGINT)


with _starting():
    import threading
    import warnings
    from importlib.metadata import PackageNotFoundError, version

    import click

    from ltrfeat.core.errors import LtrfeatError, LtrfeatWarning, reword_setting
    from ltrfeat.core.versions import package_digest


def _version() -> str:
    try:
        return version("ltrfeat")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


class Terminated(BaseException):
    """SIGTERM, raised where the program was (like KeyboardInterrupt for Ctrl-C), so that every output's
    cleanup runs as the stack unwinds."""


def _on_sigterm(signum, frame):
    raise Terminated()


def _stopped(how: str, code: int):
    from ltrfeat.core import tempfiles

    tempfiles.remove_live()  # whatever an unwinding cleanup did not reach
    click.echo(f"error: {how}; no partial output was left (run the command again to redo the work)", err=True)
    sys.exit(code)


class _Group(click.Group):
    """Turns library errors, usage errors and unreadable files into one line on stderr and exit code 2,
    with no traceback; SIGTERM and Ctrl-C remove the outputs being written and exit 143 and 130."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except KeyboardInterrupt:
            _stopped("interrupted", 128 + signal.SIGINT)
        except (click.BadParameter, click.NoSuchOption, click.BadOptionUsage) as exc:  # a top-level option
            _fail(f"{exc.format_message().rstrip('.')}; see '{ctx.command_path} --help'")

    def invoke(self, ctx):
        main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _on_sigterm) if main_thread else None
        options = _options_of(self, ctx)
        try:
            package_digest()  # the files this command started with: its worker processes are checked against them
            with warnings.catch_warnings():
                warnings.simplefilter("always", LtrfeatWarning)
                warnings.showwarning = _show_warning(warnings.showwarning)
                return super().invoke(ctx)
        except Terminated:
            _stopped("stopped by SIGTERM", 128 + signal.SIGTERM)
        except KeyboardInterrupt:
            _stopped("interrupted", 128 + signal.SIGINT)
        except LtrfeatError as exc:
            # a fix about a setting the command has an option for says the option: val_fraction=0 -> --val-fraction 0
            if exc.param in options:
                reword_setting(exc, lambda key, value: f"{options[key]} {value}")
            _fail(str(exc))
        except click.UsageError as exc:  # click prints usage, a blank line and the error: keep the error
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            _fail(f"{exc.format_message().rstrip('.')}; see '{where} --help'")
        except OSError as exc:  # a file that could not be opened or written, outside the library's checks
            if exc.filename is None:  # a failed read or write names no file (writes of outputs are named first)
                _fail(f"{exc.strerror or exc}; check the files this command reads and writes and their disk")
            _fail(f"{exc.filename}: {exc.strerror or exc}; check the path and its permissions")
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _options_of(group: click.Group, ctx: click.Context) -> dict[str, str]:
    """``{parameter name: its option}`` of the (sub)command the arguments name (empty when they name none)."""
    command: click.Command | None = group
    args = [*getattr(ctx, "_protected_args", []), *ctx.args]
    while isinstance(command, click.Group) and args:
        command = command.get_command(ctx, args.pop(0))
    if command is None or isinstance(command, click.Group):
        return {}
    return {p.name: p.opts[0] for p in command.params if isinstance(p, click.Option) and p.name}


def _show_warning(default):
    """``warning: <message>`` on stderr for the library's own warnings; others as Python shows them."""

    def show(message, category, *args, **kwargs):
        if issubclass(category, LtrfeatWarning):
            click.echo(f"warning: {' '.join(str(message).split())}", err=True)
        else:
            default(message, category, *args, **kwargs)

    return show


def _fail(message: str):
    click.echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(2)


# every command shows its options' defaults (show_default is inherited); an option opts out with show_default=False
@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(_version(), "--version", prog_name="ltrfeat")
@click.option("-v", "--verbose", count=True, show_default=False, help="More log lines on stderr (-v info, -vv debug).")
@click.option("-q", "--quiet", is_flag=True, help="Quieter: no progress bars, notices or log lines below errors.")
@click.option(
    "--max-line-bytes",
    type=click.IntRange(min=1),
    help="Longest line of a LETOR/svmlight input (default 64 MiB; env LTRFEAT_MAX_LINE_BYTES).",
)
@click.option(
    "--max-gzip-ratio",
    type=click.FloatRange(min=1),
    help="Most decompressed bytes per compressed byte of a .gz input (default 200).",
)
@click.option(
    "--max-features",
    type=click.IntRange(min=1),
    help="Most distinct feature ids of a LETOR file read into a matrix (default 10,000).",
)
@click.option(
    "--max-model-params",
    type=click.IntRange(min=1),
    help="Most parameters an encoder bundle may declare, checked before it is built (default 250,000,000).",
)
@click.pass_context
def cli(ctx, verbose, quiet, max_line_bytes, max_gzip_ratio, max_features, max_model_params):
    """Learning-to-rank features: lexical and neural similarity columns for LETOR files,
    LambdaMART rankers, and ablations that say whether a neural feature helps.

    \b
    Example:
      ltrfeat letor info data/train.letor
      ltrfeat -v extract ...        # log what each step does
    """
    from ltrfeat.core import limits
    from ltrfeat.core.logs import configure_cli_logging

    configure_cli_logging(-1 if quiet else verbose)
    bounds = dict(
        max_line_bytes=max_line_bytes,
        max_gzip_ratio=max_gzip_ratio,
        max_features=max_features,
        max_model_params=max_model_params,
    )
    if any(v is not None for v in bounds.values()):
        ctx.with_resource(limits.using(**bounds))


# Command registration: one line per command module.
with _starting():
    from ltrfeat.cli import letor_cmd  # noqa: E402
    from ltrfeat.cli import extract_cmd  # noqa: E402
    from ltrfeat.cli import ranker_cmd  # noqa: E402
    from ltrfeat.cli import datasets_cmd  # noqa: E402
    from ltrfeat.cli import clicks_cmd  # noqa: E402
    from ltrfeat.cli import ablate_cmd  # noqa: E402
    from ltrfeat.cli import explain_cmd  # noqa: E402
    from ltrfeat.cli import export_cmd, serve_cmd  # noqa: E402
    from ltrfeat.cli import encoder_cmd  # noqa: E402
    from ltrfeat.cli import demo_cmd  # noqa: E402
    from ltrfeat.cli import report_cmd  # noqa: E402
    from ltrfeat.cli._options import add_config_option  # noqa: E402
    from ltrfeat.cli._outputs import add_output_checks  # noqa: E402
    from ltrfeat.cli._bounds import add_bounds  # noqa: E402

cli.add_command(letor_cmd.letor)
cli.add_command(extract_cmd.extract)
cli.add_command(extract_cmd.features)
cli.add_command(ranker_cmd.train_ranker)
cli.add_command(ranker_cmd.evaluate)
cli.add_command(ranker_cmd.rank)
cli.add_command(ranker_cmd.rerank)
cli.add_command(datasets_cmd.datasets)
cli.add_command(clicks_cmd.clicks)
cli.add_command(ablate_cmd.ablate)
cli.add_command(ablate_cmd.compare)
cli.add_command(report_cmd.report)
cli.add_command(report_cmd.compare_runs)
cli.add_command(report_cmd.interleave_report)
cli.add_command(explain_cmd.explain)
cli.add_command(explain_cmd.explain_ranker)
cli.add_command(export_cmd.export_ranker)
cli.add_command(export_cmd.export_encoder)
cli.add_command(export_cmd.embed)
cli.add_command(serve_cmd.serve)
cli.add_command(encoder_cmd.train_encoder_cmd)
cli.add_command(demo_cmd.demo)
add_config_option(cli)
add_output_checks(cli)  # every output checked before any work
add_bounds(cli)  # every numeric option's range, checked while parsing


def main():
    cli(prog_name="ltrfeat")


if __name__ == "__main__":
    main()
