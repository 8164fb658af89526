"""Table reading at library speed: ltrfeat's readers against pandas on the same file, same process.

Files: the Home Depot train.csv (74,067 rows, Latin-1, 8 MB) and, in a temp dir, the same table as
UTF-8 TSV and as Parquet (written once by pandas). For each file the baseline is the plain pandas
reader (``pandas.read_csv`` / ``read_csv(sep="\\t")`` / ``read_parquet``, default options, no checks);
ltrfeat's readers add what they promise on top: ids as strings, source line numbers as the index,
empty-id / missing-text / duplicate checks with line-numbered errors, the label map and (for judged
pairs without a qid column) ids derived from the query text. A second baseline does the reading work
ltrfeat does: pandas keeping every cell as text (``dtype=str, keep_default_na=False``), as ids such as
``00123`` must be read. Figures are best-of-N wall times and
ratios ltrfeat / pandas (lower is better; the target is <= 1.5). ``parse`` is the reading step alone
(records, source lines, every column as text, no checks). ``exact_parser_*`` is the
line-by-line Python parser that the fast reader hands unusual files to (the previous reader).

    python benchmarks/bench_tables.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from pathlib import Path

import pandas as pd
from _common import HOME_DEPOT, HOME_DEPOT_COLUMNS, timed, write_results

from ltrfeat.core import _raw_tables
from ltrfeat.core import text as T


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    if not HOME_DEPOT.exists():
        sys.exit(f"{HOME_DEPOT} is absent")
    warnings.simplefilter("ignore", T.TextTableWarning)
    rep = args.repeat
    figures: dict = {"rows": None, "load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        frame = pd.read_csv(HOME_DEPOT, encoding="latin-1", dtype=str, keep_default_na=False)
        tsv, parquet = Path(tmp) / "train.tsv", Path(tmp) / "train.parquet"
        frame.to_csv(tsv, sep="\t", index=False)
        frame.to_parquet(parquet, index=False)
        as_text = {"dtype": str, "keep_default_na": False}
        files = {
            "csv": (
                HOME_DEPOT,
                "latin-1",
                lambda: pd.read_csv(HOME_DEPOT, encoding="latin-1"),
                lambda: pd.read_csv(HOME_DEPOT, encoding="latin-1", **as_text),
            ),
            "tsv": (tsv, "utf-8", lambda: pd.read_csv(tsv, sep="\t"), lambda: pd.read_csv(tsv, sep="\t", **as_text)),
            "parquet": (parquet, "utf-8", lambda: pd.read_parquet(parquet), lambda: pd.read_parquet(parquet)),
        }
        for fmt, (path, encoding, baseline, text_baseline) in files.items():
            base_s, base = timed(baseline, repeat=rep)
            text_s, _ = timed(text_baseline, repeat=rep)
            # the parse alone (records, source lines, every column as text), before any check
            parse_s, _ = timed(lambda: _raw_tables._read_raw(path, encoding=encoding, fmt=None), repeat=rep)
            # a checked table: unique ids (the row id), two text fields, line numbers as the index
            docs_s, docs = timed(
                lambda: T.read_docs(path, docid_col="id", fields="product_title,search_term", encoding=encoding),
                repeat=rep,
            )
            # judged pairs as the ablation reads them: qid derived from the query text, label map
            pairs_s, pairs = timed(
                lambda: T.read_judged_pairs(
                    path, columns=HOME_DEPOT_COLUMNS, encoding=encoding, label_map="linear:1:3:7"
                ),
                repeat=rep,
            )
            assert len(base) == len(docs) == len(pairs) == 74_067
            figures["rows"] = len(pairs)
            figures[fmt] = {
                "pandas_s": base_s,
                "pandas_text_s": text_s,
                "parse_s": parse_s,
                "parse_vs_pandas": parse_s / base_s,
                "parse_vs_pandas_text": parse_s / text_s,
                "read_docs_vs_pandas_text": docs_s / text_s,
                "read_judged_pairs_vs_pandas_text": pairs_s / text_s,
                "read_docs_s": docs_s,
                "read_judged_pairs_s": pairs_s,
                "read_docs_vs_pandas": docs_s / base_s,
                "read_judged_pairs_vs_pandas": pairs_s / base_s,
            }
        raw = HOME_DEPOT.read_bytes().decode("latin-1")
        exact_s, _ = timed(lambda: _raw_tables._parse_csv(raw, str(HOME_DEPOT)), repeat=3)
        figures["csv"]["exact_parser_s"] = exact_s
        figures["csv"]["exact_parser_vs_pandas"] = exact_s / figures["csv"]["pandas_s"]
    figures["load_average_after"] = os.getloadavg()
    print(
        f"Home Depot train.csv, {figures['rows']} rows; load average {figures['load_average_before'][0]:.2f} "
        f"before, {figures['load_average_after'][0]:.2f} after; best of {rep}"
    )
    print("ratios: ltrfeat / pandas default (numbers inferred) | ltrfeat / pandas keeping text (equal reading work)")
    print(
        f"{'file':8s} {'pandas':>9s} {'as text':>9s} {'parse':>9s} {'ratios':>13s} {'read_docs':>10s} {'ratios':>13s} "
        f"{'read_judged_pairs':>18s} {'ratios':>13s}"
    )
    for fmt in files:
        f = figures[fmt]
        print(
            f"{fmt:8s} {f['pandas_s'] * 1e3:7.1f}ms {f['pandas_text_s'] * 1e3:7.1f}ms {f['parse_s'] * 1e3:7.1f}ms "
            f"{f['parse_vs_pandas']:5.2f}x|{f['parse_vs_pandas_text']:5.2f}x "
            f"{f['read_docs_s'] * 1e3:8.1f}ms {f['read_docs_vs_pandas']:5.2f}x|{f['read_docs_vs_pandas_text']:5.2f}x "
            f"{f['read_judged_pairs_s'] * 1e3:16.1f}ms "
            f"{f['read_judged_pairs_vs_pandas']:5.2f}x|{f['read_judged_pairs_vs_pandas_text']:5.2f}x"
        )
    print(f"exact line-by-line CSV parser (pre-fast path): {figures['csv']['exact_parser_vs_pandas']:.1f}x pandas")
    print(f"wrote {write_results('tables', figures)}")


if __name__ == "__main__":
    main()
