"""What a click log holds, in figures (``ltrfeat clicks summary``): impressions, clicks, sessions, queries, the
click-through rate by position, and whether position bias can be corrected."""

from __future__ import annotations

from ltrfeat.clicks.log import NO_POSITIONS_NOTE, ClickLog

KIND_NAMES = {
    "impressions": "impression-level",
    "positioned": "aggregated (with positions)",
    "pairs": "aggregated (no positions)",
    "ubi": "UBI events",
}


def log_summary(log: ClickLog, *, max_positions: int = 20) -> dict:
    """The log's figures as a JSON-ready dict; ``ctr_by_position`` lists positions 1..``max_positions`` that were
    shown (``impressions``, ``clicks``, ``ctr``), empty without positions."""
    totals = log.totals
    impressions, clicks = int(totals["impressions"].sum()), int(totals["clicks"].sum())
    by_position = []
    if log.positioned is not None:
        sums = log.positioned.groupby("position")[["impressions", "clicks"]].sum()
        for position, row in sums.loc[sums.index <= max_positions].iterrows():
            by_position.append(
                {
                    "position": int(position),
                    "impressions": int(row["impressions"]),
                    "clicks": int(row["clicks"]),
                    "ctr": round(float(row["clicks"] / row["impressions"]), 6),
                }
            )
    return {
        "source": log.source,
        "kind": log.kind,
        "kind_name": KIND_NAMES[log.kind],
        "impressions": impressions,
        "clicks": clicks,
        "ctr": round(clicks / impressions, 6) if impressions else None,
        "sessions": log.sessions,
        "queries": int(totals["query"].nunique()),
        "pairs": len(totals),
        "has_positions": log.has_positions,
        "max_position": int(log.positioned["position"].max()) if log.positioned is not None else None,
        "ctr_by_position": by_position,
        "bias_correctable": log.has_positions,
        "note": (
            "positions present: position bias can be estimated and corrected"
            if log.has_positions
            else NO_POSITIONS_NOTE
        ),
    }
