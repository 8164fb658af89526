"""The library's logger and its one decision about progress bars.

Library code logs to ``logging.getLogger("ltrfeat")`` (children such as ``ltrfeat.extract``) and never
configures handlers: an application decides where messages go (the ``ltrfeat`` CLI sends them to
stderr, ``-v`` for INFO, ``-vv`` for DEBUG, ``-q`` for errors only).

Progress bars show when :func:`show_progress` says so: stderr is a terminal, ``CI`` is unset and the
``ltrfeat`` logger is not quieted above WARNING (``ltrfeat -q``). Every tqdm bar in the project asks this
one function.
"""

from __future__ import annotations

import logging
import os
import sys

LOGGER_NAME = "ltrfeat"
logger = logging.getLogger(LOGGER_NAME)
logger.addHandler(logging.NullHandler())


def get_logger(name: str | None = None) -> logging.Logger:
    """``ltrfeat`` or its child ``ltrfeat.<name>``."""
    return logger.getChild(name) if name else logger


def show_progress(requested: bool | None = True) -> bool:
    """Whether a progress bar should be drawn.

    ``requested=False`` never draws; ``True`` or ``None`` (auto) draw only on a terminal
    (stderr is a TTY), outside CI (``CI`` unset) and when the ``ltrfeat`` logger is not quieted.
    """
    if requested is False:
        return False
    if os.environ.get("CI") or logger.getEffectiveLevel() > logging.WARNING:
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at emit time (it may be swapped, e.g. by click's test runner)."""

    _ltrfeat_cli = False  # True on the handler configure_cli_logging installed

    def emit(self, record):
        self.stream = sys.stderr
        super().emit(record)


def configure_cli_logging(verbosity: int = 0) -> None:
    """Send ``ltrfeat`` log records to stderr as ``level: message`` lines (the CLI's ``-v``/``-q``).

    ``verbosity``: -1 errors only (and no progress bars), 0 warnings, 1 info, 2 or more debug.
    Calling it again replaces the handler it installed before.
    """
    level = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(max(-1, verbosity), logging.DEBUG)
    for handler in list(logger.handlers):
        if getattr(handler, "_ltrfeat_cli", False):
            logger.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    handler._ltrfeat_cli = True
    logger.addHandler(handler)
    logger.setLevel(level)
