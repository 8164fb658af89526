"""A report directory someone sent: hostile strings in every field of report.json (and strings where numbers
belong) reach report.html as text only -- no element, attribute or script of theirs, in the page or in the
drill-down the page's script builds -- checked by scanning the HTML and by running it in headless Chromium."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from builders import chromium, selection_ablation
from ltrfeat.cli.main import cli
from ltrfeat.experiments import _plots, html_report
from ltrfeat.experiments.per_query import read_per_query

# each would run (or stop the page's own script) if it reached the page as markup
PAYLOAD = (
    "<img src=x onerror=\"window.__pwned=1;document.title='PWNED'\">'\"><script>window.__pwned=2</script>"
    "</script><script>window.__pwned=3</script><!--<script>\u2028\u2029&amp;<svg onload=window.__pwned=4>"
)
NAME_FIELDS = {"feature_set", "variant", "baseline", "metric", "metrics", "name", "candidate", "candidates", "chosen"}
NAMED = {"stage_seconds", "versions", "marks", "ranker_params", "engine_params"}  # mappings keyed by free text
RECORDS = {None, "config", "selection", "statistics", "verdict", "runs", "cross_fitting", "conventions", "[]"}


def _leaves(value, parent=None):
    """Every (key it is under, value) of the strings and numbers in parsed JSON ``value``."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, parent)
    else:
        yield parent, value


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _names(data) -> set:
    """Set, metric, fold and candidate names: the strings report.json also uses as keys."""
    return {v for k, v in _leaves(data) if isinstance(v, str) and k in NAME_FIELDS}


def hostile(value, names: set, parent=None):
    """``value`` with PAYLOAD appended to every string and to every key that is a name (consistently, so the
    report's cross-references still hold); ``format`` is kept (the loader checks it)."""
    if isinstance(value, dict):
        return {
            (k + PAYLOAD if parent not in RECORDS and (k in names or parent in NAMED) else k): (
                v if k == "format" else hostile(v, names, k)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [hostile(v, names, "[]") for v in value]
    return value + PAYLOAD if isinstance(value, str) else value


def numbers_as_strings(value, key: str, parent=None):
    """``value`` with every number under ``key`` replaced by PAYLOAD."""
    if isinstance(value, dict):
        return {k: numbers_as_strings(v, key, k) for k, v in value.items()}
    if isinstance(value, list):
        return [numbers_as_strings(v, key, parent) for v in value]
    return PAYLOAD if _is_number(value) and parent == key else value


class _Markup(HTMLParser):
    """The elements, attributes and script bodies of a page, as a browser's tokenizer sees them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.scripts, self._in_script = [], [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, k, v) for k, v in attrs]
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data

    def handle_endtag(self, tag):
        self._in_script = False


def assert_no_markup_of_theirs(page: str) -> None:
    """Only the page's own markup: two scripts (the JSON data with no '<' at all, and report.js, whose hash the
    policy allows), no event-handler attribute, no image but the report's PNGs, no script-src 'unsafe-inline'."""
    markup = _Markup()
    markup.feed(page)
    assert page.lower().count("<script") == 2 and page.lower().count("</script") == 2
    data, code = markup.scripts
    assert "<" not in data and ">" not in data and "\u2028" not in data
    assert code == html_report._asset("report.js")
    assert not [a for a in markup.attributes if a[1].startswith("on")]
    assert all(v.startswith("data:image/png;base64,") for tag, k, v in markup.attributes if k == "src")
    policy = next(v for tag, k, v in markup.attributes if tag == "meta" and v and "script-src" in v)
    assert "'unsafe-inline'" not in policy.split("script-src")[1] and "'sha256-" in policy


@pytest.fixture(scope="module")
def ablation(tmp_path_factory):
    return selection_ablation(tmp_path_factory.mktemp("hostile") / "report", n_resamples=200)


@pytest.fixture(scope="module")
def report_dir(ablation):
    return ablation[0]


@pytest.fixture(scope="module")
def hostile_report(ablation):
    """report.json and the drill-down payload with PAYLOAD in every string and feature name (the contributions'
    too), plus CLSM words and document texts (so the drill-down's every branch shows hostile text)."""
    report_dir, result, folds = ablation
    data = json.loads((report_dir / "report.json").read_text())
    for entry in data["contributions"].values():
        entry["per_fold"] = {k: {f + PAYLOAD: v for f, v in fs.items()} for k, fs in entry["per_fold"].items()}
    drill = html_report.drill_data(
        *html_report.rankings_from_runs(report_dir, data),
        read_per_query(report_dir / "per_query.tsv"),
        data,
        contributions=html_report.contributions_from_ablation(result, folds),
    )
    qid, docid = drill["queries"][0][0], drill["docs"][0][0][0]
    drill["doc_text"] = {docid: "a document"}
    drill["words"] = {"clsm": {"q": {qid: [[0, "crimson"], [1, "azure"]]}, "d": {docid: [[0, "red"], [2, "x"]]}}}
    drill["queries"][0][1] = "a query"
    names = _names(data)
    return hostile(data, names), hostile(drill, names | set(drill["sets"]) | {qid, docid})


def test_hostile_strings_in_every_field_reach_the_page_as_text(hostile_report, report_dir):
    data, drill = hostile_report
    page = html_report.render(data, drill=drill, report_dir=report_dir)
    assert_no_markup_of_theirs(page)
    assert "neural share" in page and html_report._e("bm25_title" + PAYLOAD) in page  # the contributions' section
    assert html_report._e(PAYLOAD) in page  # shown, as text


def test_numbers_replaced_by_strings_are_text_or_a_one_line_error(report_dir, tmp_path, monkeypatch):
    """Every numeric field of report.json in turn holds PAYLOAD: the page renders it as text (the model selection's
    inner-fold count, the counts of wins and queries ...) or `ltrfeat report --html` says
    in one line that the report is malformed and writes nothing."""
    monkeypatch.setattr(_plots, "forest_figure", lambda *a, **k: None)  # matplotlib's SVG escaping: test above
    data = json.loads((report_dir / "report.json").read_text())
    shown, refused = [], []
    for key in sorted({k for k, v in _leaves(data) if _is_number(v) and k is not None}):
        changed = numbers_as_strings(data, key)
        try:
            page = html_report.render(changed, report_dir=report_dir)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            refused.append((key, changed))
            continue
        assert_no_markup_of_theirs(page)
        shown.append(key)
    assert {"inner_folds", "n_queries", "wins", "ties", "losses", "queries", "rows"} <= set(shown)
    copy = shutil.copytree(report_dir, tmp_path / "copy")
    (copy / "report.html").unlink()
    before = sorted(p.name for p in copy.iterdir())
    for key, changed in refused[:3]:
        (copy / "report.json").write_text(json.dumps(changed))
        res = CliRunner().invoke(cli, ["report", str(copy), "--html"])
        assert res.exit_code == 2, (key, res.output)
        assert res.output.count("\n") <= 2 and "report.json: report does not hold what an ablation writes" in res.output
        assert sorted(p.name for p in copy.iterdir()) == before  # no report.html, no temporary file


def test_a_hostile_report_runs_no_script_in_chromium_and_the_pages_own_script_works(
    hostile_report, report_dir, tmp_path
):
    data, drill = hostile_report
    data = numbers_as_strings(numbers_as_strings(data, "inner_folds"), "n_queries")
    page_path = tmp_path / "report.html"
    page_path.write_text(html_report.render(data, drill=drill, report_dir=report_dir), encoding="utf-8")
    with chromium() as browser:
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        buttons = page.locator("#drill-results button")
        assert buttons.count() > 0  # the page's own script ran: it listed the drill-down's queries
        buttons.first.click()
        view = page.locator("#drill-view")
        assert "max-pool words" in view.inner_text() and PAYLOAD[:20] in view.inner_text()
        assert "moved by: " in view.inner_text()  # the features that moved a document, hostile names as text
        assert view.locator("tbody tr").count() >= 2
        page.locator("#results thead th").first.click()  # sorting runs too
        assert page.evaluate("window.__pwned") is None and page.title() == "Feature ablation"
        assert page.locator("img[src=x], svg[onload], script:not([id=report-data])").count() == 1  # report.js
        assert not errors
