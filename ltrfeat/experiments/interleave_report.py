"""Which ranker users prefer, from an interleaving log: per-impression credit, wins/ties/losses per query and
overall, the preference with a two-sided binomial sign test and its interval, and the impressions an experiment
needs to detect a given preference.

An impression is a win for the ranker whose results got more credit (:func:`ltrfeat.experiments.interleaving.credit`),
a tie when both got the same (no click included). The sign test asks whether B wins more of the decisive
(non-tied) impressions than chance; the preference is B's share of them, 0.5 for no preference, with its Wilson
interval; Chapelle et al.'s ``delta_AB = (wins_B + ties/2) / impressions - 0.5`` is given too.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ltrfeat.core.errors import LtrfeatError
from ltrfeat.clicks.served import INTERLEAVE_METHODS
from ltrfeat.experiments.interleaving import credit


def impression_credits(shown: pd.DataFrame) -> pd.DataFrame:
    """One row per interleaved impression: ``impression_id, query, method, clicks, credit_a, credit_b, outcome``
    (``"A"``, ``"B"`` or ``"tie"``), from :func:`ltrfeat.clicks.served.impressions`' table (one row per
    shown result, by impression then position)."""
    columns = ["impression_id", "query", "method", "clicks", "credit_a", "credit_b", "outcome"]
    shown = shown[shown["method"].isin(INTERLEAVE_METHODS)]
    if shown.empty:
        return pd.DataFrame(columns=columns)
    row = pd.factorize(shown["impression_id"])[0]
    order = np.lexsort((shown["position"].to_numpy(), row))
    shown, row = shown.iloc[order], row[order]
    starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    sizes = np.diff(np.r_[starts, len(row)])
    first = shown.iloc[starts]
    methods = first["method"].to_numpy()
    clicked = shown["clicked"].to_numpy(dtype=np.int64)
    team = (shown["team"] == "B").to_numpy(dtype=np.int64)
    rank_a = shown["rank_a"].to_numpy(dtype=np.int64)
    rank_b = shown["rank_b"].to_numpy(dtype=np.int64)
    clicks = np.add.reduceat(clicked, starts)
    credit_a = np.zeros(len(starts), dtype=np.int64)
    credit_b = np.zeros(len(starts), dtype=np.int64)
    for method in INTERLEAVE_METHODS:  # impressions of one method and one length at a time: exact arrays, no padding
        for size in np.unique(sizes[methods == method]):
            which = np.flatnonzero((methods == method) & (sizes == size))
            lines = (starts[which][:, None] + np.arange(size)).ravel()
            credit_a[which], credit_b[which] = credit(
                *(x[lines].reshape(len(which), size) for x in (clicked, team, rank_a, rank_b)), method=method
            )
    outcome = np.where(credit_a > credit_b, "A", np.where(credit_b > credit_a, "B", "tie"))
    return pd.DataFrame(
        {
            "impression_id": first["impression_id"].to_numpy(),
            "query": first["query"].to_numpy(),
            "method": methods,
            "clicks": clicks,
            "credit_a": credit_a,
            "credit_b": credit_b,
            "outcome": outcome,
        }
    )


def preference(wins_a: int, wins_b: int, ties: int, *, alpha: float = 0.05) -> dict:
    """B's share of the decisive impressions with its Wilson interval at level ``1 - alpha``, the two-sided sign
    test's p-value, and ``delta_AB``."""
    decisive = wins_a + wins_b
    total = decisive + ties
    out = {"wins_a": wins_a, "wins_b": wins_b, "ties": ties, "impressions": total}
    if decisive == 0:
        return {**out, "preference_b": None, "interval": None, "p_sign": 1.0, "delta_ab": 0.0}
    test = stats.binomtest(wins_b, decisive, 0.5)
    ci = test.proportion_ci(confidence_level=1 - alpha, method="wilson")
    return {
        **out,
        "preference_b": wins_b / decisive,
        "interval": [float(ci.low), float(ci.high)],
        "p_sign": float(test.pvalue),
        "delta_ab": (wins_b + ties / 2) / total - 0.5,
    }


def impressions_needed(effect: float, decisive_share: float, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Impressions for the two-sided sign test at ``alpha`` to detect B winning ``0.5 + effect`` of the decisive
    impressions with probability ``power``, when ``decisive_share`` of impressions are decisive (normal
    approximation); None when no impression is decisive."""
    if not 0 < abs(effect) < 0.5:
        raise ValueError(f"effect must be in (-0.5, 0.5) and not 0, got {effect}")
    if decisive_share <= 0:
        return None
    p = 0.5 + abs(effect)
    z_a, z_b = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    decisive = ((z_a * 0.5 + z_b * math.sqrt(p * (1 - p))) / abs(effect)) ** 2
    return math.ceil(decisive / decisive_share)


def summarise_interleaving(
    shown: pd.DataFrame, *, alpha: float = 0.05, effect: float = 0.05, power: float = 0.8, rankers=None
) -> dict:
    """The report's data (what ``--json`` prints): overall preference, per query wins/ties/losses, impressions
    needed; ``shown`` as from :func:`ltrfeat.clicks.served.impressions`."""
    per = impression_credits(shown)
    if per.empty:
        raise LtrfeatError(
            "the log holds no interleaved impression",
            path=shown.attrs.get("source"),
            fix="serve with --interleave B --event-log DIR and give that directory",
        )
    counts = per["outcome"].value_counts()
    overall = preference(int(counts.get("A", 0)), int(counts.get("B", 0)), int(counts.get("tie", 0)), alpha=alpha)
    table = per.groupby("query", sort=False)["outcome"].value_counts().unstack(fill_value=0)
    table = table.reindex(columns=["A", "B", "tie"], fill_value=0)
    queries = [
        {"query": str(q), **preference(int(r["A"]), int(r["B"]), int(r["tie"]), alpha=alpha)}
        for q, r in table.iterrows()
    ]
    queries.sort(key=lambda r: (-r["impressions"], r["query"]))
    decisive_share = (overall["wins_a"] + overall["wins_b"]) / overall["impressions"]
    observed = (overall["preference_b"] or 0.5) - 0.5
    if rankers is None:
        names = shown[shown["method"].isin(INTERLEAVE_METHODS)].drop_duplicates("team").set_index("team")["ranker"]
        rankers = {"A": str(names.get("A", "A")), "B": str(names.get("B", "B"))}
    return {
        "rankers": rankers,
        "methods": sorted(per["method"].unique().tolist()),
        "alpha": alpha,
        "overall": overall,
        "clicked_impressions": int((per["clicks"] > 0).sum()),
        "queries": queries,
        "queries_preferring": {
            "A": sum(r["wins_a"] > r["wins_b"] for r in queries),
            "B": sum(r["wins_b"] > r["wins_a"] for r in queries),
            "neither": sum(r["wins_a"] == r["wins_b"] for r in queries),
        },
        "needed": {
            "effect": effect,
            "power": power,
            "decisive_share": decisive_share,
            "impressions": impressions_needed(effect, decisive_share, alpha=alpha, power=power),
            "impressions_for_observed": (
                impressions_needed(observed, decisive_share, alpha=alpha, power=power)
                if 0 < abs(observed) < 0.5
                else None
            ),
        },
        "orphan_events": int(shown.attrs.get("orphan_events", 0)),
    }


def interleaving_verdict(data: dict) -> str:
    """One sentence: which ranker users preferred, or that the log cannot tell."""
    o, names, alpha = data["overall"], data["rankers"], data["alpha"]
    if o["preference_b"] is None:
        return f"No impression was decisive ({o['impressions']} impressions, none with unequal credit): no verdict."
    better = "B" if o["wins_b"] > o["wins_a"] else "A"
    share = o["preference_b"] if better == "B" else 1 - o["preference_b"]
    lead = (
        f"Users prefer {better} ({names[better]})"
        if o["p_sign"] < alpha
        else f"No significant preference (leaning {better}, {names[better]})"
    )
    return (
        f"{lead}: it won {share:.1%} of {o['wins_a'] + o['wins_b']} decisive impressions "
        f"(sign test p = {_p(o['p_sign'])}; {o['ties']} ties of {o['impressions']} impressions)."
    )


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _interval(r: dict) -> str:
    return "n/a" if r["interval"] is None else f"{r['interval'][0]:.3f}–{r['interval'][1]:.3f}"


def _share(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def interleaving_markdown(data: dict, *, top: int = 20) -> str:
    """The report as Markdown: the verdict, the overall counts and test, impressions needed, the busiest queries."""
    o, n, names = data["overall"], data["needed"], data["rankers"]
    level = f"{1 - data['alpha']:.0%}"
    lines = [
        "# Interleaving report",
        "",
        interleaving_verdict(data),
        "",
        f"A = {names['A']}, B = {names['B']}; method {', '.join(data['methods'])}.",
        "",
        f"| impressions | clicked | wins A | wins B | ties | preference for B | {level} interval | sign test p "
        "| delta_AB |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {o['impressions']} | {data['clicked_impressions']} | {o['wins_a']} | {o['wins_b']} | {o['ties']} "
        f"| {_share(o['preference_b'])} | {_interval(o)} | {_p(o['p_sign'])} | {o['delta_ab']:+.4f} |",
        "",
        f"Queries where A won more impressions: {data['queries_preferring']['A']}; B: "
        f"{data['queries_preferring']['B']}; neither: {data['queries_preferring']['neither']}.",
        "",
        f"Impressions needed for {n['power']:.0%} power at alpha {data['alpha']:g} to detect a preference of "
        f"{0.5 + n['effect']:.2f} (with {n['decisive_share']:.1%} of impressions decisive, as here): "
        f"{n['impressions'] if n['impressions'] is not None else 'n/a'}"
        + (
            f"; for the observed preference: {n['impressions_for_observed']}."
            if n["impressions_for_observed"] is not None
            else "."
        ),
        "",
        f"## Queries (the {min(top, len(data['queries']))} with the most impressions of {len(data['queries'])})",
        "",
        "| query | impressions | wins A | wins B | ties | preference for B | sign test p |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["queries"][:top]:
        query = r["query"].replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {query} | {r['impressions']} | {r['wins_a']} | {r['wins_b']} | {r['ties']} "
            f"| {_share(r['preference_b'])} | {_p(r['p_sign'])} |"
        )
    if data["orphan_events"]:
        lines += ["", f"{data['orphan_events']} events named a result no impression line shows; left out."]
    return "\n".join(lines) + "\n"


def render_html(data: dict, *, top: int = 200) -> str:
    """The report as one self-contained page (the ablation report's page, CSP and escaping)."""
    from ltrfeat.experiments.html_report import _e, _num, _p as p_text, _page, _prose, _signed

    o, names = data["overall"], data["rankers"]
    head = "".join(
        f"<th>{h}</th>" for h in ("query", "impressions", "wins A", "wins B", "ties", "preference for B", "sign test p")
    )
    rows = "".join(
        f"<tr><td>{_e(r['query'])}</td><td>{_e(r['impressions'])}</td><td>{_e(r['wins_a'])}</td>"
        f"<td>{_e(r['wins_b'])}</td><td>{_e(r['ties'])}</td><td>{_num(r['preference_b'], 3)}</td>"
        f"<td>{p_text(r['p_sign'])}</td></tr>"
        for r in data["queries"][:top]
    )
    overall = (
        "<table><thead><tr><th>impressions</th><th>clicked</th><th>wins A</th><th>wins B</th><th>ties</th>"
        f"<th>preference for B</th><th>{1 - data['alpha']:.0%} interval</th><th>sign test p</th><th>delta_AB</th>"
        "</tr></thead><tbody><tr>"
        + "".join(
            f"<td>{v}</td>"
            for v in (
                _e(o["impressions"]),
                _e(data["clicked_impressions"]),
                _e(o["wins_a"]),
                _e(o["wins_b"]),
                _e(o["ties"]),
                _num(o["preference_b"], 3),
                _e(_interval(o)),
                p_text(o["p_sign"]),
                _signed(o["delta_ab"]),
            )
        )
        + "</tr></tbody></table>"
        + f"<p class=note>A = {_e(names['A'])}, B = {_e(names['B'])}; method {_e(', '.join(data['methods']))}.</p>"
    )
    n = data["needed"]
    needed = (
        f"<p>{_e(n['impressions'])} impressions give {_e(format(n['power'], '.0%'))} power at alpha "
        f"{_e(data['alpha'])} to detect a preference of {_e(format(0.5 + n['effect'], '.2f'))} "
        f"({_e(format(n['decisive_share'], '.1%'))} of impressions decisive, as in this log).</p>"
    )
    sections = [
        ("overall", "Overall", overall),
        ("needed", "Impressions needed", needed),
        (
            "queries",
            "Per query",
            f"<table class=sortable><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>",
        ),
    ]
    return _page("Interleaving report", f"<p>{_prose(interleaving_verdict(data))}</p>", sections, {"drill": None})
