"""Speed of reading judged pairs: the Home Depot train.csv (74,067 rows, Latin-1).

Baseline (same process): ``pandas.read_csv(dtype=str, keep_default_na=False)`` of the same
file, which does no checking at all. ``read_judged_pairs`` adds per-row line numbers, missing
text and duplicate checks, derived query ids and the label map; ``pairs_to_ranking`` groups
the queries. Prints seconds and ratios; writes results/text.json.
"""

from __future__ import annotations

import sys
import warnings
from _common import SHARED, timed, write_results

import pandas as pd

from ltrfeat.core.text import TextTableWarning, pairs_to_ranking, read_judged_pairs

DATA = SHARED / "datasets" / "home_depot" / "raw" / "train.csv"
MAPPING = "query=search_term,doc=product_title,docid=product_uid,label=relevance"


def main():
    if not DATA.exists():
        sys.exit(f"{DATA} is absent")
    base_s, _ = timed(lambda: pd.read_csv(DATA, dtype=str, keep_default_na=False, encoding="latin-1"))
    read_s, pairs = timed(
        lambda: read_judged_pairs(DATA, columns=MAPPING, encoding="latin-1", label_map="linear:1:3:7")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TextTableWarning)  # 15 retitled products
        split_s, _ = timed(lambda: pairs_to_ranking(pairs, conflicts="first"))
    figures = {
        "rows": len(pairs),
        "pandas_read_csv_s": base_s,
        "read_judged_pairs_s": read_s,
        "read_ratio_vs_pandas": read_s / base_s,
        "pairs_to_ranking_s": split_s,
        "rows_per_s": len(pairs) / read_s,
    }
    for key, value in figures.items():
        print(f"{key:24s} {value:.4g}")
    print(f"wrote {write_results('text', figures)}")


if __name__ == "__main__":
    main()
