"""The scikit-learn tags of the extractors: transformers of text tables (DataFrames of queries and document fields),
not of numeric arrays.

scikit-learn reads them (``sklearn.utils.get_tags``): ``check_estimator`` then knows it cannot feed these estimators
its numeric test arrays and skips its data checks with a ``SkipTestWarning`` naming the input, as for its own text
vectorizers; the API checks that need no data run in the tests (``tests/features/test_sklearn.py``).
"""

from __future__ import annotations

from sklearn.utils import TransformerTags


class TextTransformerTags:
    """Mixin (before ``BaseEstimator``): a transformer whose input is a table of strings, whose output is float32
    features (no input dtype preserved) and which must be fitted first."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.transformer_tags = tags.transformer_tags or TransformerTags(preserves_dtype=[])
        tags.transformer_tags.preserves_dtype = []
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = False
        tags.requires_fit = True
        return tags
