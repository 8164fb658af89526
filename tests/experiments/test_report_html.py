"""report.html, the verdict in words, the tie analysis, ``ltrfeat report`` and ``ltrfeat compare-runs``."""

from __future__ import annotations

import json
import re
import types

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from builders import FAST, chromium, selection_ablation
from ltrfeat.cli.main import cli
from ltrfeat.experiments.compare_runs import compare_systems
from ltrfeat.experiments import html_report
from ltrfeat.experiments.html_report import drill_data, rankings_from_ablation
from ltrfeat.experiments.in_words import p_words, report_warnings, summary_in_words, tie_analysis, verdict_words
from ltrfeat.experiments.report import report_markdown
from ltrfeat.experiments.summary_types import Summary
from ltrfeat.core.dataset import FeatureMap, RankingSet
from ltrfeat.experiments.folds import Fold
from ltrfeat.experiments.stats import holm, randomization_test
from ltrfeat.core.trec import evaluate_run, read_qrels, read_run, write_qrels, write_trec_run


@pytest.fixture(scope="module")
def selection_report(tmp_path_factory):
    return selection_ablation(tmp_path_factory.mktemp("html") / "report")


def _payload(page: str) -> dict:
    found = re.search(r"<script type=application/json id=report-data>(.*?)</script>", page, flags=re.S)
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_report_html_is_self_contained_and_opens_with_the_verdict(selection_report):
    out, result, _ = selection_report
    page = (out / "report.html").read_text(encoding="utf-8")
    data = json.loads((out / "report.json").read_text())
    assert data["verdict"]["summary"] == data["summary"]
    assert page.index("id=verdict") < page.index("id='s-results'")
    assert "lifts NDCG@" in page and "Holm-adjusted over the" in page
    assert page.index("Holm-adjusted over the") > page.index("id='s-results'")  # a detail, not the verdict
    # nothing to fetch: no external script, style, font or image
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "<link" not in page
    assert page.count("<svg") >= 1 and "<canvas" not in page
    for section in ("s-results", "s-forest", "s-wtl", "s-drill", "s-comparisons", "s-selection", "s-setup"):
        assert f"id='{section}'" in page and f"href='#{section}'" in page
    assert data["stage_seconds"] is None and "s-stages" not in page  # nothing to show: no section, no link
    drill = _payload(page)["drill"]
    assert (
        drill["sets"][drill["default_base"]] == "lexical" and drill["sets"][drill["default_variant"]] == "recommended"
    )
    assert len(drill["queries"]) == drill["n_queries"] == 90
    for docs in drill["docs"]:
        assert all(any(r is not None and r <= drill["top"] for r in d[2]) for d in docs)


def test_drill_down_is_bounded(selection_report):
    out, result, folds = selection_report
    data = json.loads((out / "report.json").read_text())
    drill = drill_data(*rankings_from_ablation(result, folds), result.per_query, data, top=3, max_queries=7)
    assert len(drill["queries"]) == 7 and drill["n_queries"] == 90
    assert all(len(docs) <= 3 * len(drill["sets"]) for docs in drill["docs"])
    base, variant = drill["default_base"], drill["default_variant"]
    changes = [abs(q[2][variant] - q[2][base]) for q in drill["queries"]]
    assert changes == sorted(changes, reverse=True)  # the queries that move most come first
    contrib = html_report.contributions_from_ablation(result, folds)
    drill = drill_data(
        *rankings_from_ablation(result, folds), result.per_query, data, contributions=contrib, max_explained=3
    )
    assert drill["explained"] == 3  # the features that moved a document: for the 3 queries that change most
    assert [{len(d) for d in docs} for docs in drill["docs"]] == [{5}] * 3 + [{4}] * (len(drill["docs"]) - 3)


def test_report_command_words_and_rewrites_the_page(selection_report, tmp_path):
    out, _, _ = selection_report
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(out, copy)
    (copy / "report.html").unlink()
    res = CliRunner().invoke(cli, ["report", str(copy)])
    assert res.exit_code == 0 and res.output.strip() == json.loads((copy / "report.json").read_text())["summary"]
    assert not (copy / "report.html").exists()
    res = CliRunner().invoke(cli, ["report", str(copy), "--html"])
    assert res.exit_code == 0, res.output
    drill = _payload((copy / "report.html").read_text())["drill"]  # rebuilt from runs/
    assert drill is not None and len(drill["queries"]) == 90
    res = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "no report.json here" in res.output


def test_report_open_without_a_browser_says_so_in_one_line(selection_report, tmp_path, monkeypatch):
    import shutil
    import webbrowser

    out, _, _ = selection_report
    shutil.copytree(out, tmp_path / "copy")

    def no_browser(*args, **kwargs):
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr(webbrowser, "get", no_browser)
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "copy"), "--open"])
    assert res.exit_code == 2
    error = res.output.strip().splitlines()[-1]
    assert error == (
        f"error: {tmp_path / 'copy' / 'report.html'}: written, but no web browser was found to open it; open the file "
        "in a browser yourself (it is one self-contained page), or leave out --open"
    )
    assert (tmp_path / "copy" / "report.html").is_file()


def test_summary_names_the_family_and_what_does_not_change():
    comp = dict(base_mean=0.5, variant_mean=0.515, ci95_delta=[0.01, 0.02], wins=5, ties=1, losses=2, n_queries=8)
    comp |= dict(p_ttest=0.01, p_randomization=0.001)  # every key a report.json comparison has
    data = {
        "config": {
            "baseline": "lexical",
            "metrics": ["ndcg@1", "ndcg@10"],
            "feature_sets": [
                {"name": "lexical", "columns": ["bm25"], "kind": "ranker"},
                {"name": "lexical+clsm", "columns": ["bm25", "clsm_cos"], "kind": "ranker"},
            ],
        },
        "comparisons": [
            comp
            | dict(
                baseline="lexical", variant="lexical+clsm", metric="ndcg@10", delta=0.015, relative=0.03, p_holm=0.004
            ),
            comp
            | dict(
                baseline="lexical", variant="lexical+clsm", metric="ndcg@1", delta=0.001, relative=0.002, p_holm=0.6
            ),
        ],
        "verdict": None,
    }
    text = summary_in_words(data)
    assert text.startswith("Adding clsm_cos to the `lexical` features (set `lexical+clsm`) lifts NDCG@10 by 3.0%")
    assert "(0.5000 → 0.5150, Holm p < .01)" in text
    assert "changes nothing significant at NDCG@1 (+0.2%, Holm p = .60)" in text
    assert "Holm-adjusted over the 2 comparisons in this report" in text
    assert [p_words(p) for p in (0.0004, 0.004, 0.031, float("nan"))] == ["p < .001", "p < .01", "p = .03", "p n/a"]


def test_tie_analysis_gives_every_tie_order():
    # one query, two documents with the same score: relevant first in input order, last in trec_eval's
    test = RankingSet(["q"] * 2, [1.0, 0.0], np.zeros((2, 1)), FeatureMap.dense(1), docid=np.array(["a", "b"], object))
    fold = Fold("F1", test, None, test)
    result = types.SimpleNamespace(
        config={"conventions": {"gain": "exp2", "no_relevant": "exclude"}},
        metrics=["ndcg@1"],
        feature_sets=[],
        test_scores={"lexical": {"F1": {"seeds": [0], "scores": [np.array([0.5, 0.5])]}}},
    )
    ties = tie_analysis(result, [fold], sets=["lexical"])
    t = ties["sets"]["lexical"]["ndcg@1"]
    assert t["tied_queries"] == 1 and t["share"] == 1.0
    assert t["mean"] == {"expected": 0.5, "input_order": 1.0, "trec_eval": 0.0, "worst": 0.0, "best": 1.0}
    assert ties["reported"] == "expected"  # the conventions' default
    words = summary_in_words(
        {"config": {"baseline": "lexical", "metrics": ["ndcg@1"]}, "comparisons": [], "ties": ties}
    )
    assert "Ties: `lexical` has tied scores that change NDCG@1 for 1 of 1 queries (100%)" in words
    assert "This report's NDCG@1, 0.5000, is the mean over every order of its ties" in words
    assert "input order 1.0000 (+0.5000) or by trec_eval's docid order 0.0000 (-0.5000)" in words
    assert "anywhere in 0.0000–1.0000" in words
    # a report written before the default changed (no "reported", no "expected") words its input order
    old = {k: v for k, v in ties.items() if k != "reported"}
    old_words = summary_in_words(
        {"config": {"baseline": "lexical", "metrics": ["ndcg@1"]}, "comparisons": [], "ties": old}
    )
    assert "NDCG@1, 1.0000, breaks its ties by input order" in old_words


def _runs(tmp_path):
    rng = np.random.default_rng(3)
    q = np.repeat([f"q{i}" for i in range(30)], 8)
    d = np.array([f"d{j}" for j in range(8)] * 30, dtype=object)
    label = rng.integers(0, 3, len(q))
    write_qrels(tmp_path / "qrels.txt", q, d, label)
    for name, noise in (("bm25", 1.5), ("rerank", 0.8), ("random", 9.0)):
        write_trec_run(tmp_path / f"{name}.run", q, d, label + rng.normal(0, noise, len(q)), tag=name)
    return tmp_path


def test_compare_runs_agrees_with_pytrec_eval_and_the_randomisation_test(tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    _runs(tmp_path)
    qrels = read_qrels(tmp_path / "qrels.txt")
    names = ["bm25", "rerank", "random"]
    per_query = {n: evaluate_run(qrels, read_run(tmp_path / f"{n}.run"), ["ndcg@10", "map", "mrr"]) for n in names}
    data = compare_systems(per_query, ["ndcg@10", "map", "mrr"], n_resamples=2000)
    judged = {}
    for row in qrels.itertuples():
        judged.setdefault(row.qid, {})[row.docid] = int(row.label)
    evaluator = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut_10", "map", "recip_rank"})
    for name in names:
        run = {}
        for row in read_run(tmp_path / f"{name}.run").itertuples():
            run.setdefault(row.qid, {})[row.docid] = float(row.score)
        oracle = evaluator.evaluate(run)
        for metric, key in (("ndcg@10", "ndcg_cut_10"), ("map", "map"), ("mrr", "recip_rank")):
            assert data["means"][name][metric]["mean"] == pytest.approx(np.mean([v[key] for v in oracle.values()]))
    for c in data["comparisons"]:  # queries pooled in qid order, as in an ablation report
        a, b = (per_query[c[k]][c["metric"]].sort_index() for k in ("baseline", "variant"))
        assert c["p_randomization"] == randomization_test(a.to_numpy(), b.to_numpy(), n_resamples=2000, seed=0)
    assert [c["p_holm"] for c in data["comparisons"]] == list(holm([c["p_randomization"] for c in data["comparisons"]]))
    random = [c for c in data["comparisons"] if c["variant"] == "random"]
    assert all(c["delta"] < 0 for c in random) and min(c["p_holm"] for c in random) < 0.05


def test_compare_runs_cli_prints_markdown_json_and_html(tmp_path):
    _runs(tmp_path)
    args = ["compare-runs", "--qrels", str(tmp_path / "qrels.txt"), f"bm25={tmp_path / 'bm25.run'}"]
    args += [str(tmp_path / "rerank.run"), "--resamples", "500", "--metrics", "ndcg@10,map"]
    res = CliRunner().invoke(cli, [*args, "--html", str(tmp_path / "c.html")])
    assert res.exit_code == 0, res.output
    assert "| `rerank` | ndcg@10 |" in res.output and "Holm-adjusted over the 2 comparisons printed" in res.output
    page = (tmp_path / "c.html").read_text()
    assert "<svg" in page and "rerank" in page and not re.search(r"""(src|href)=["']?https?:""", page)
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    assert data["systems"] == ["bm25", "rerank"] and len(data["comparisons"]) == 2
    res = CliRunner().invoke(cli, ["compare-runs", str(tmp_path / "bm25.run"), str(tmp_path / "rerank.run")])
    assert res.exit_code == 2 and "--qrels" in res.output


def test_compare_runs_of_models_on_one_test_set(tmp_path, planted):
    from ltrfeat.core.letor import write_letor
    from ltrfeat.rankers.lambdamart import LambdaMART
    from ltrfeat.rankers.models import save_ranker

    fold = planted[0]
    write_letor(tmp_path / "test.letor", fold.test)
    for name, columns in (("lex", fold.train.feature_map.names[:3]), ("all", None)):
        model = LambdaMART(**FAST, features=columns).fit(fold.train, fold.valid)
        save_ranker(model, tmp_path / f"{name}.txt")
    res = CliRunner().invoke(
        cli,
        ["compare-runs", "--test", str(tmp_path / "test.letor"), str(tmp_path / "lex.txt"), str(tmp_path / "all.txt")],
    )
    assert res.exit_code == 0, res.output
    assert "`all` against `lex` lifts NDCG@10" in res.output
    assert "tied scores: expected value over every order of the tied documents" in res.output
    args = [
        "compare-runs",
        "--test",
        str(tmp_path / "test.letor"),
        str(tmp_path / "lex.txt"),
        str(tmp_path / "all.txt"),
    ]
    res = CliRunner().invoke(cli, [*args, "--ties", "pessimistic"])
    assert res.exit_code == 0 and "tied scores: lower labels first (worst case)" in res.output


# -- the page, for a reader -----------------------------------------------------------------------
SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
TIES = {  # tied scores change NDCG@1 for 9 of 10 queries of the baseline
    "threshold": 0.05,
    "sets": {
        "lexical": {
            "ndcg@1": {
                "tied_queries": 9,
                "queries": 10,
                "share": 0.9,
                "mean": {"expected": 0.5, "input_order": 1.0, "trec_eval": 0.2, "worst": 0.0, "best": 1.0},
            }
        }
    },
}


def _report(selection_report, **changes) -> dict:
    data = json.loads((selection_report[0] / "report.json").read_text())
    return data | changes


def _between(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end, page.index(start))]


def _recommend(data: dict, recommended: str) -> dict:
    return data | {"verdict": data["verdict"] | {"recommended": recommended}}


def test_the_verdict_is_two_sentences_and_the_details_sit_under_their_sections(selection_report):
    data = _report(selection_report)
    page = html_report.render(data)
    verdict = _between(page, "<div id=verdict>", "</div>")
    first = re.search(r"<p>(.*?)</p>", verdict).group(1)
    assert len(SENTENCE_END.findall(re.sub(r"<[^>]+>", "", first))) == 2
    assert "lifts NDCG@" in first and "To ship: <code>lexical+clsm / linear</code>" in first
    for detail in ("Rule tiered", "selection cost", "Holm-adjusted over the", "not adjusted"):
        assert detail not in verdict
    selection = _between(page, "id='s-selection'", "<h2")
    assert "Rule tiered" in selection and "selection cost" in selection
    results = _between(page, "id='s-results'", "<h2")
    assert "Holm-adjusted over the 26 comparisons" in results
    assert "The 95% intervals are not adjusted" in results and "Holm-adjusted over the whole report" in results


def test_a_lift_the_recommendation_leaves_out_is_explained(selection_report):
    data = _recommend(_report(selection_report), "lexical / linear")
    page = html_report.render(data)
    reconcile = re.findall(r"<p>(.*?)</p>", _between(page, "<div id=verdict>", "</div>"))[1]
    assert reconcile.startswith("Why ship <code>lexical / linear</code> when <code>lexical+clsm</code> lifts a metric")
    assert "test queries of all folds pooled" in reconcile and "training queries only" in reconcile
    # no such sentence when the set that lifts is the one to ship
    assert "Why ship" not in html_report.render(_report(selection_report))


def test_the_warning_box_explains_itself_counts_and_holds_the_ties(selection_report):
    data = _report(selection_report, ties=TIES)
    held = data["verdict"]["warnings"]
    warnings = report_warnings(data)
    assert warnings[: len(held)] == held and len(warnings) == len(held) + 1 and warnings[-1].startswith("Ties:")
    assert all("you could ship the single feature" in w or "ship the single feature" in w for w in held)
    page = html_report.render(data)
    box = _between(page, "<div class=warning id=warnings>", "</div>")
    assert f"<b>{len(warnings)} warnings</b>" in box and box.count("<li>") == len(warnings)
    assert "used alone as the ranking score" in box and "Ties: <code>lexical</code>" in box
    assert f"; {len(warnings)} warnings below." in verdict_words(data)[1]
    assert "Ties:" not in _between(page, "<div id=verdict>", "</div>")
    # the summary words the ties the verdict's warnings do not hold; held there, the box shows them once
    both = data | {"verdict": data["verdict"] | {"warnings": warnings}}
    assert summary_in_words(data).count("Ties: `lexical`") == 1 and "Ties:" not in summary_in_words(both)
    assert report_warnings(both) == warnings


def test_the_markdown_report_reads_like_the_page(selection_report):
    out, result, _ = selection_report
    data = _report(selection_report, ties=TIES)
    md = report_markdown(result, Summary.from_report(data), data=data)
    verdict = md.split("\n\n")[1]
    assert verdict.startswith("**Verdict**: ") and len(SENTENCE_END.findall(verdict)) == 2
    warnings = report_warnings(data)
    assert f"**{len(warnings)} warnings**:" in md and all(f"- {w}" in md for w in warnings)
    assert md.index("## Model selection") < md.index("Rule tiered") and "Holm-adjusted over the whole report" in md
    line = next(x for x in md.splitlines() if x.startswith("- `lexical+clsm`: ") and "neural share" in x)
    assert "clsm_title_cos" in line and md.index("Mean |contribution|") < md.index(line)


def test_drill_down_knows_each_sets_neural_columns_per_fold(selection_report):
    out, result, folds = selection_report
    data = json.loads((out / "report.json").read_text())
    drill = drill_data(*rankings_from_ablation(result, folds), result.per_query, data)
    neural = dict(zip(drill["sets"], drill["neural"]))
    assert neural["lexical"] == [[], [], []] and neural["lexical+clsm"] == [["clsm_title_cos"]] * 3
    picked = [data["config"]["selection"]["recommended"][f["name"]]["feature_set"] for f in data["config"]["folds"]]
    assert neural["recommended"] == [neural[name][0] for name in picked]
    fold_of = dict(zip(result.per_query["qid"].astype(str), result.per_query["fold"]))
    names = [f["name"] for f in data["config"]["folds"]]
    assert all(names[q[3]] == fold_of[q[0]] for q in drill["queries"])


def test_report_json_holds_each_folds_mean_abs_contributions_and_the_neural_share(selection_report):
    out, result, _ = selection_report
    data = json.loads((out / "report.json").read_text())
    table = data["contributions"]
    folds = [f["name"] for f in data["config"]["folds"]]
    assert {"lexical", "lexical+clsm", "recommended", "best-single"} <= set(table)
    assert not any("/" in name for name in table)  # candidates are summed up in the recommended set
    for name in ("lexical", "lexical+clsm"):
        per_fold, share = table[name]["per_fold"], table[name]["neural_share"]
        assert list(per_fold) == folds and all(v >= 0 for f in per_fold.values() for v in f.values())
        for fold in folds:
            values = list(per_fold[fold].values())
            assert values == sorted(values, reverse=True)
            neural = per_fold[fold].get("clsm_title_cos", 0.0)
            assert share[fold] == pytest.approx(neural / sum(values))
    assert all(s == 0 for s in table["lexical"]["neural_share"].values())
    assert all(0 < s <= 1 for s in table["lexical+clsm"]["neural_share"].values())  # the planted signal
    page = (out / "report.html").read_text(encoding="utf-8")
    section = page[page.index("id='s-contributions'") :]
    assert "neural share" in section and "split-gain share" in section and "clsm_title_cos" in section


def test_moved_documents_carry_the_features_that_moved_them(selection_report):
    """The best-single baseline's one contribution is its score, so relative to the query's average document it is
    the score minus the query's mean score: the drill-down's values are checked against that exactly."""
    out, result, folds = selection_report
    drill = _payload((out / "report.html").read_text(encoding="utf-8"))["drill"]
    rankings, _ = rankings_from_ablation(result, folds)
    single = rankings["best-single"].astype({"qid": str, "docid": str})
    centred = single["score"] - single.groupby("qid")["score"].transform("mean")
    centred.index = pd.MultiIndex.from_frame(single[["qid", "docid"]])
    columns = {s["name"]: s["columns"] for s in json.loads((out / "report.json").read_text())["config"]["feature_sets"]}
    at = drill["sets"].index("best-single")
    checked = 0
    for query, docs in zip(drill["queries"], drill["docs"]):
        for doc in docs:
            why, expected = dict(zip(drill["sets"], doc[4])), centred[(query[0], doc[0])]
            if why["best-single"] is None:  # rounds to 0.000: nothing moved it
                assert abs(expected) < 5e-4
            else:
                assert [p[0] for p in why["best-single"]] == [drill["features"].index("bm25_title")]
                assert why["best-single"][0][1] == pytest.approx(expected, abs=6e-4)
            for name in ("lexical", "lexical+clsm"):
                named = [drill["features"][i] for i, _ in why[name] or []]
                assert len(named) <= 3 and set(named) <= set(columns[name])
            checked += doc[2][at] is not None
    assert checked > 100
    assert any(
        drill["features"][p[0]] == "clsm_title_cos" for docs in drill["docs"] for d in docs for p in d[4][1] or []
    )


def test_the_page_at_1280_px_in_chromium(selection_report, tmp_path):
    """At 1280 x 800: the results table scrolls sideways inside its box with its first column in view, the page
    does not; the verdict's first paragraph has two sentences; the warning box explains itself; every section and
    link has content; the drill-down's moves read higher/lower and only a set holding a CLSM encoder's columns
    shows its words."""
    out, result, folds = selection_report
    data = _report(selection_report, ties=TIES)
    contrib = html_report.contributions_from_ablation(result, folds)
    drill = drill_data(*rankings_from_ablation(result, folds), result.per_query, data, contributions=contrib)
    qid, docid = drill["queries"][0][0], drill["docs"][0][0][0]
    drill["words"] = {"clsm": {"q": {qid: [[0, "crimson"], [1, "azure"]]}, "d": {docid: [[0, "red"], [2, "x"]]}}}
    path = tmp_path / "report.html"
    path.write_text(html_report.render(data, drill=drill, report_dir=out), encoding="utf-8")
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        box = "document.querySelector('#results').parentElement"
        assert page.evaluate(f"{box}.scrollWidth > {box}.clientWidth")  # the table is wider than its box ...
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # ... not the page
        first = page.locator("#results tbody tr td").first
        assert first.evaluate("c => getComputedStyle(c).position") == "sticky"
        before = first.bounding_box()["x"]
        page.evaluate(f"{box}.scrollLeft = 400")
        assert page.evaluate(f"{box}.scrollLeft") > 0 and first.bounding_box()["x"] == before  # stays in view
        verdict = page.locator("#verdict p").first.inner_text()
        assert "To ship:" in verdict and len(SENTENCE_END.findall(verdict)) <= 2
        warning = page.locator("#warnings").inner_text()
        assert warning.startswith(f"{len(report_warnings(data))} warnings")
        assert "you could ship the single feature" in warning and "Ties: lexical" in warning
        links = page.locator("nav a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
        headings = page.locator("h2").evaluate_all("hs => hs.map(h => '#' + h.id)")
        assert links == headings and "#s-stages" not in links
        for heading in headings:  # each section has something to read before the next heading
            text = page.evaluate(
                "id => { let t = '', n = document.querySelector(id).nextElementSibling;"
                " while (n && n.tagName !== 'H2' && n.tagName !== 'SCRIPT') {"
                " t += n.innerText + (n.querySelector('img, svg') ? 'figure' : ''); n = n.nextElementSibling; }"
                " return t.trim(); }",
                heading,
            )
            assert text, heading
        page.fill("#drill-search", qid)
        page.locator("#drill-results button").first.click()
        sides = page.locator("#drill-view .side > div")
        base, variant = sides.nth(0).inner_text(), sides.nth(1).inner_text()
        assert "max-pool words" not in base  # lexical holds no CLSM column
        assert "max-pool words" in variant  # the recommended set holds clsm_title_cos in every fold
        moves = page.locator("#drill-view td.move").all_inner_texts()
        assert moves and all(re.fullmatch(r"▲ \d+ higher|▼ \d+ lower|same", m) for m in moves)
        assert any(m != "same" for m in moves)
        # a moved document says which features moved it, signed; one ranked the same says nothing
        for row in page.locator("#drill-view .side > div").nth(1).locator("tbody tr").all():
            why = row.locator(".why").all_inner_texts()
            if row.locator("td.move").inner_text() == "same":
                assert not why
            else:
                assert len(why) == 1 and re.fullmatch(r"moved by: [+−]\d\.\d\d \S+(, [+−]\d\.\d\d \S+){0,2}", why[0])
        assert "clsm_title_cos" in variant and "moved by" in page.locator("#s-drill ~ div p.note").first.inner_text()
        # words of an encoder the variant does not hold are not shown as its explanation; the page says so
        page.select_option("#drill-variant", label="lexical+clsm")
        drill["words"] = {"dssm": drill["words"]["clsm"]}
        path.write_text(html_report.render(data, drill=drill, report_dir=out), encoding="utf-8")
        page.goto(path.as_uri())
        page.fill("#drill-search", qid)
        page.locator("#drill-results button").first.click()
        view = page.locator("#drill-view").inner_text()
        assert "max-pool words:" not in view and "no word-level explanation for this set's neural features" in view
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert not errors
