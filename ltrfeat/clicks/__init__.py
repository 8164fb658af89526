"""Click logs: impression-level, aggregated with and without positions, and OpenSearch UBI records, read, checked
and summed in bounded memory (:func:`read_click_log` → :class:`ClickLog`); the examination curve they show
(:func:`estimate_propensity`) and training labels with the position bias corrected (:func:`click_labels`). Imports
only :mod:`ltrfeat.core`."""

from ltrfeat.clicks.log import NO_POSITIONS_NOTE, ClickLog, read_click_log, read_shown_lists, write_positioned
from ltrfeat.clicks.summary import log_summary
from ltrfeat.clicks.propensity import Propensity, estimate_propensity, read_propensity_curve, write_propensity_curve
from ltrfeat.clicks.debias import ClickLabels, click_labels

__all__ = [
    "NO_POSITIONS_NOTE",
    "ClickLabels",
    "ClickLog",
    "Propensity",
    "click_labels",
    "estimate_propensity",
    "log_summary",
    "read_click_log",
    "read_propensity_curve",
    "write_propensity_curve",
    "read_shown_lists",
    "write_positioned",
]
