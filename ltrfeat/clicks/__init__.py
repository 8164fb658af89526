"""Click logs: impression-level, aggregated with and without positions, and OpenSearch UBI records, read, checked
and summed in bounded memory (:func:`read_click_log` → :class:`ClickLog`). Imports only :mod:`ltrfeat.core`."""

from ltrfeat.clicks.log import NO_POSITIONS_NOTE, ClickLog, read_click_log, write_positioned
from ltrfeat.clicks.summary import log_summary

__all__ = ["NO_POSITIONS_NOTE", "ClickLog", "log_summary", "read_click_log", "write_positioned"]
