"""What the service shows and what users do with it: impressions (one result list each, interleaved or not) written
to the event log (:mod:`ltrfeat.experiments.event_log`), the recent ones kept in memory to check ``POST /events``
against, and the UBI-shaped events that come back.

An event names its impression by ``query_id`` (the ``impression_id`` of a ``/score`` answer: UBI's ``query_id``
is the id of one query's result list) and its result by ``event_attributes.object.object_id`` (the docid) and/or
``event_attributes.position.ordinal`` (1-based, as shown); the service fills in the query, team and ranker from the
impression, so a client cannot credit a ranker with a result it did not show.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ltrfeat.clicks.served import IMPRESSION, TEAMS
from ltrfeat.experiments.event_log import EventLog, now
from ltrfeat.experiments.interleaving import interleave, request_rng

if TYPE_CHECKING:
    from ltrfeat.serving.scorer import Scorer

CLICK = "click"


@dataclass(frozen=True)
class Interleaving:
    """How a service splits its traffic between ranker A (its scorer) and ranker B.

    Parameters
    ----------
    scorer : ranker B's :class:`~ltrfeat.serving.scorer.Scorer`.
    method : ``"team-draft"`` or ``"balanced"``.
    share : fraction of requests interleaved (the others are served by A alone).
    seed : with a request's id, decides whether it is interleaved and how (replayable).
    """

    scorer: Scorer
    method: str = "team-draft"
    share: float = 1.0
    seed: int = 0

    def __post_init__(self):
        if not 0 < self.share <= 1:
            raise ValueError(f"share must be in (0, 1], got {self.share}")


@dataclass(frozen=True)
class Impression:
    """One shown list, as kept in memory: enough to turn an event on it into a log line."""

    session: str
    query: str
    docids: tuple[str, ...]
    teams: tuple[str, ...]
    method: str
    rank_a: tuple[int, ...]
    rank_b: tuple[int | None, ...]
    user: str | None

    def size(self) -> int:
        """Rough bytes held (the memory bound counts these)."""
        return 400 + len(self.session) + len(self.query) + sum(len(d) + 120 for d in self.docids)


def shown_list(
    scores_a: np.ndarray, scores_b: np.ndarray | None, setting: Interleaving | None, request_id: str
) -> tuple[np.ndarray, list[str], str, np.ndarray, np.ndarray | None]:
    """The order shown (candidate indices), each result's team, the method (``"none"`` when A serves alone) and
    every candidate's 1-based rank under A and B, for one request."""
    order_a = np.argsort(-scores_a, kind="stable")
    rank_a = np.empty(len(order_a), dtype=np.int64)
    rank_a[order_a] = np.arange(1, len(order_a) + 1)
    if scores_b is None or setting is None:
        return order_a, [TEAMS[0]] * len(order_a), "none", rank_a, None
    order_b = np.argsort(-scores_b, kind="stable")
    rank_b = np.empty(len(order_b), dtype=np.int64)
    rank_b[order_b] = np.arange(1, len(order_b) + 1)
    rng = request_rng(setting.seed, request_id)
    rng.random()  # the draw that chose to interleave this request
    shown, team = interleave(order_a[None], order_b[None], rng, method=setting.method)
    return shown[0], [TEAMS[t] for t in team[0]], setting.method, rank_a, rank_b


def interleaved(setting: Interleaving | None, request_id: str) -> bool:
    """Whether this request is interleaved (its traffic-share draw)."""
    return setting is not None and request_rng(setting.seed, request_id).random() < setting.share


def new_id() -> str:
    return uuid.uuid4().hex


class Impressions:
    """The recent impressions (least recently served or clicked dropped first once ``max_bytes`` is passed) and
    the log they and their events go to."""

    def __init__(self, log: EventLog, *, rankers: tuple[str, str], depth: int = 20, max_bytes: int = 64 * 2**20):
        if depth < 1 or max_bytes < 1:
            raise ValueError("depth and max_bytes must be at least 1")
        self.log, self.rankers, self.depth, self.max_bytes = log, rankers, depth, max_bytes
        self._kept: OrderedDict[str, Impression] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def lines(self, impression_id: str, impression: Impression) -> list[dict]:
        """An impression's log lines (its first :attr:`depth` results)."""
        when = now()
        return [
            self._line(impression_id, impression, p, IMPRESSION, 0, when)
            for p in range(1, min(self.depth, len(impression.docids)) + 1)
        ]

    def keep(self, impression_id: str, impression: Impression) -> None:
        """Keep ``impression`` for the events on it (once its lines are logged)."""
        self._kept[impression_id] = impression
        self._bytes += impression.size()
        while self._bytes > self.max_bytes and len(self._kept) > 1:
            self._bytes -= self._kept.popitem(last=False)[1].size()

    def _line(self, impression_id: str, imp: Impression, position: int, action: str, clicked: int, when: str):
        i = position - 1
        line = {
            "session": imp.session,
            "query": imp.query,
            "docid": imp.docids[i],
            "position": position,
            "clicked": clicked,
            "timestamp": when,
            "impression_id": impression_id,
            "ranker": self.rankers[TEAMS.index(imp.teams[i])],
            "team": imp.teams[i],
            "method": imp.method,
            "rank_a": imp.rank_a[i],
            "rank_b": imp.rank_b[i],
            "action": action,
        }
        if imp.user is not None:
            line["user"] = imp.user
        return line

    def event_lines(self, events: list["UbiEvent"]) -> list[dict]:
        """Log lines for events (all checked before any is returned); :class:`ValueError` with the reason for the
        first that names no impression or result kept here."""
        lines = []
        for k, event in enumerate(events):
            where = f"events[{k}]" if len(events) > 1 else "event"
            imp = self._kept.get(event.query_id)
            if imp is None:
                raise ValueError(
                    f"{where}.query_id {event.query_id[:80]!r} names no impression this service keeps (not an "
                    "impression_id it answered, or an old one dropped from memory or served before a restart)"
                )
            self._kept.move_to_end(event.query_id)
            attrs = event.event_attributes
            docid = attrs.object.object_id if attrs and attrs.object else None
            position = attrs.position.ordinal if attrs and attrs.position else None
            logged = min(self.depth, len(imp.docids))
            if position is None and docid is not None:
                found = [i for i, d in enumerate(imp.docids[:logged]) if d == docid]
                if not found:
                    raise ValueError(
                        f"{where}: object_id {docid[:80]!r} is not among the impression's {logged} results"
                    )
                position = found[0] + 1
            if position is None:
                raise ValueError(
                    f"{where} names no result: give event_attributes.object.object_id or .position.ordinal"
                )
            if not 1 <= position <= logged:
                raise ValueError(f"{where}: position.ordinal {position} is outside the impression's 1..{logged}")
            if docid is not None and imp.docids[position - 1] != docid:
                raise ValueError(
                    f"{where}: object_id {docid[:80]!r} is not the result at position {position} "
                    f"({imp.docids[position - 1][:80]!r})"
                )
            clicked = int(event.action_name == CLICK)
            lines.append(self._line(event.query_id, imp, position, event.action_name, clicked, now()))
        return lines


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")  # UBI events carry more than this service reads


class UbiObject(_Lenient):
    object_id: StrictStr | None = None


class UbiPosition(_Lenient):
    ordinal: StrictInt | None = Field(default=None, ge=1)


class UbiAttributes(_Lenient):
    object: UbiObject | None = None
    position: UbiPosition | None = None


class UbiEvent(_Lenient):
    """One UBI event (``action_name``, ``query_id``, ``event_attributes.object/position``); the other UBI fields
    are accepted and not kept (the log's ``timestamp`` is the service's clock when the event arrived)."""

    action_name: StrictStr = Field(min_length=1, max_length=100)
    query_id: StrictStr = Field(min_length=1)
    event_attributes: UbiAttributes | None = None


class EventBatch(BaseModel):
    """Body of ``POST /events`` carrying several events."""

    model_config = ConfigDict(extra="forbid")
    events: list[UbiEvent] = Field(min_length=1)
