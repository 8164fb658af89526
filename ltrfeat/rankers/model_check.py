"""Structural checks of LightGBM / XGBoost model files before the native libraries see them.

The SHA-256 in ``MODEL.meta.json`` catches accidents, not a file that is wrong but consistent
(truncated, edited, produced by another tool, with the checksum fixed up). LightGBM parses
its text model in C++ with few bounds checks: a truncated file kills the process (SIGSEGV or
abort) instead of raising. So every model is checked here first, in pure Python:

- LightGBM text: header fields (``version``, one class and one tree per iteration,
  ``max_feature_idx`` and as many feature names and infos), ``tree_sizes`` consistent with
  the ``Tree=i`` blocks (LightGBM seeks by these offsets), every tree's arrays of the right
  length and parseable, split features in range, child links forming one binary tree
  (every node reached once from the root, so prediction cannot loop), ``end of trees``.
- XGBoost JSON: the learner / gbtree layout, ``num_trees`` and ``tree_info`` against the
  trees, per-tree array lengths against ``num_nodes``, children forming one binary tree,
  split indices below ``num_feature``, categorical segments inside their arrays.
- Both: the number of features equals the bundle's, and there are at least as many trees as
  the metadata's ``best_iteration``.

Any problem is a :class:`ModelFileError` naming the file (and the line for LightGBM).
"""

from __future__ import annotations

import contextlib
import json
import math
import re

from ltrfeat.core.errors import ModelFileError

_FIX = "the model file is damaged or was edited; re-run train-ranker (or restore the file from its run)"


class _Fail(Exception):
    def __init__(self, problem: str, line: int | None = None):
        super().__init__(problem)
        self.problem = problem
        self.line = line


def check_model(engine: str, raw: bytes, *, feature_names: list[str] | None, min_trees: int, path=None) -> None:
    """Raise :class:`ModelFileError` unless ``raw`` is a structurally sound model of ``engine`` over
    ``feature_names`` (the engine's names from the metadata; None skips that comparison) with at least
    ``min_trees`` trees."""
    try:
        if engine == "lightgbm":
            n_trees, model_features = _lightgbm(raw)
        else:
            n_trees, model_features = _xgboost(raw)
        if feature_names is not None and model_features != list(feature_names):
            raise _Fail(
                f"the model's {len(model_features)} features differ from the {len(feature_names)} of its metadata"
            )
        if n_trees < min_trees:
            raise _Fail(f"the model has {n_trees} trees but its metadata uses {min_trees}")
    except _Fail as exc:
        raise ModelFileError(f"not a valid {engine} model: {exc.problem}", path=path, line=exc.line, fix=_FIX) from None


# ------------------------------------------------------------------------------ shared


def _check_tree(left: list, right: list, n_leaves: int | None, *, leaf_of) -> None:
    """``left``/``right`` children of internal nodes; ``leaf_of(child)`` maps a child link to
    ``("leaf", i)`` or ``("node", j)``. Every node and leaf must be reached exactly once from node 0."""
    n_nodes = len(left)
    seen_nodes = [False] * n_nodes
    seen_leaves = set()
    stack = [0] if n_nodes else []
    while stack:
        j = stack.pop()
        if seen_nodes[j]:
            raise _Fail(f"node {j} is reached twice (the child links do not form a tree)")
        seen_nodes[j] = True
        for child in (left[j], right[j]):
            kind, k = leaf_of(child)
            if kind == "node":
                if not 0 <= k < n_nodes:
                    raise _Fail(f"child link {child} of node {j} points outside the tree")
                stack.append(k)
            else:
                if n_leaves is not None and not 0 <= k < n_leaves:
                    raise _Fail(f"child link {child} of node {j} points to a missing leaf")
                if k in seen_leaves:
                    raise _Fail(f"leaf {k} is reached twice")
                seen_leaves.add(k)
    if not all(seen_nodes):
        raise _Fail(f"node {seen_nodes.index(False)} is not reachable from the root")
    if n_leaves is not None and n_nodes and len(seen_leaves) != n_leaves:
        raise _Fail(f"{n_leaves - len(seen_leaves)} leaves are not reachable from the root")


def _ints(text: str, what: str, line: int | None = None) -> list[int]:
    try:
        return [int(t) for t in text.split()]
    except ValueError:
        raise _Fail(f"{what} holds a non-integer", line) from None


def _int(text: str, what: str, line: int | None = None) -> int:
    values = _ints(text, what, line)
    if len(values) != 1:
        raise _Fail(f"{what} is not one integer", line)
    return values[0]


def _floats(text: str, what: str, line: int | None = None) -> list[float]:
    try:
        return [float(t) for t in text.split()]
    except ValueError:
        raise _Fail(f"{what} holds a non-number", line) from None


# ------------------------------------------------------------------------------ LightGBM text


def _lightgbm(raw: bytes) -> tuple[int, list[str]]:
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise _Fail(f"non-ASCII byte at offset {exc.start}", raw.count(b"\n", 0, exc.start) + 1) from None
    if "\r" in text:
        raise _Fail("carriage return in the model text", text.count("\n", 0, text.index("\r")) + 1)
    if not text.startswith("tree\n"):
        raise _Fail("does not start with the 'tree' header line", 1)
    header_end = text.find("\n\n")
    if header_end < 0:
        raise _Fail("the header does not end (file truncated?)", text.count("\n") + 1)
    header = {}
    for k, line in enumerate(text[:header_end].split("\n")[1:], start=2):
        key, sep, value = line.partition("=")
        if not sep:
            raise _Fail(f"header line {line[:40]!r} is not key=value", k)
        header[key] = value
    for key in (
        "version",
        "num_class",
        "num_tree_per_iteration",
        "max_feature_idx",
        "feature_names",
        "feature_infos",
        "tree_sizes",
    ):
        if key not in header:
            raise _Fail(f"header field {key} is missing")
    if header["num_class"] != "1" or header["num_tree_per_iteration"] != "1":
        raise _Fail("expected a ranking model (num_class=1, num_tree_per_iteration=1)")
    if header.get("version") not in ("v3", "v4") or _int(header.get("label_index", ""), "label_index") < 0:
        raise _Fail("version or label_index is missing or unknown")
    if header.get("objective", "").split(" ")[0] not in _LGB_OBJECTIVES:
        raise _Fail(f"objective {header.get('objective', '')[:40]!r} is not a ranking objective")
    max_idx = _int(header["max_feature_idx"], "max_feature_idx")
    if max_idx < 0:
        raise _Fail("max_feature_idx is missing or negative")
    n_features = max_idx + 1
    for key in ("feature_names", "feature_infos"):
        if len(header[key].split(" ")) != n_features:
            raise _Fail(f"{key} has {len(header[key].split(' '))} entries for {n_features} features")
    sizes = _ints(header["tree_sizes"], "tree_sizes")
    if any(s <= 0 for s in sizes):
        raise _Fail("tree_sizes holds a non-positive size")
    pos = header_end + 2
    line0 = text.count("\n", 0, pos) + 1
    for i, size in enumerate(sizes):
        block = text[pos : pos + size]
        if len(block) != size or not block.startswith(f"Tree={i}\n"):
            raise _Fail(f"tree {i} is not where tree_sizes puts it (file truncated or edited?)", line0)
        _lightgbm_tree(block, i, n_features, line0)
        pos += size
        line0 += block.count("\n")
    if not text.startswith("end of trees", pos):
        raise _Fail(
            "'end of trees' does not follow the last tree (file truncated or edited?)", text.count("\n", 0, pos) + 1
        )
    _lightgbm_trailer(text, pos + len("end of trees"))
    return len(sizes), header["feature_names"].split(" ")


def _lightgbm_trailer(text: str, pos: int) -> None:
    """After the trees: optional feature importances, a ``parameters:`` block closed by ``end of
    parameters`` (LightGBM crashes on an unclosed one) and the ``pandas_categorical`` line."""
    line0 = text.count("\n", 0, pos) + 1
    lines = text[pos:].split("\n")
    section = None
    known = _lightgbm_parameter_names()
    for k, line in enumerate(lines[1:], start=line0 + 1):
        if section == "parameters":
            if line == "end of parameters":
                section = "done"
            elif line and not (line.startswith("[") and line.endswith("]") and ": " in line):
                raise _Fail(f"parameter line {line[:40]!r} is not '[key: value]' (file truncated or edited?)", k)
            elif line and known is not None and line[1 : line.index(": ")] not in known:
                raise _Fail(f"unknown parameter {line[1 : line.index(': ')][:40]!r} (file edited?)", k)
        elif line == "parameters:" and section != "done":
            section = "parameters"
        elif line == "feature_importances:" and section is None:
            section = "importances"
        elif line.startswith("pandas_categorical:"):
            try:
                json.loads(line[len("pandas_categorical:") :])
            except json.JSONDecodeError:
                raise _Fail("pandas_categorical is not JSON", k) from None
            section = "end"
        elif line and (section != "importances" or "=" not in line):
            raise _Fail(f"unexpected line {line[:40]!r} after the trees", k)
    if section == "parameters":
        raise _Fail(
            "the parameters block is not closed by 'end of parameters' (file truncated?)", line0 + len(lines) - 1
        )


_LGB_TREE_FIELDS = frozenset(
    (
        "num_leaves",
        "num_cat",
        "split_feature",
        "split_gain",
        "threshold",
        "decision_type",
        "left_child",
        "right_child",
        "leaf_value",
        "leaf_weight",
        "leaf_count",
        "internal_value",
        "internal_weight",
        "internal_count",
        "cat_boundaries",
        "cat_threshold",
        "is_linear",
        "shrinkage",
        "leaf_const",
        "num_features",
        "leaf_features",
        "leaf_coeff",
    )
)
_LGB_OBJECTIVES = ("lambdarank", "rank_xendcg")
_LGB_PER_LEAF = ("leaf_weight", "leaf_count", "leaf_const", "num_features")
_LGB_PER_NODE = ("split_gain", "internal_value", "internal_weight", "internal_count")
_LGB_NUMBER = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)", re.IGNORECASE)
_LGB_NUMBER_CHARS = re.compile(r"[0-9eE.+\- ]*")


def _lightgbm_numbers(value: str) -> bool:
    """Space-separated numbers as LightGBM writes them (one space between tokens)."""
    if _LGB_NUMBER_CHARS.fullmatch(value):  # the common case: a fast scan, then Python's parser per token
        try:
            for token in value.split(" "):
                float(token)
        except ValueError:
            return False
        return "_" not in value
    return all(_LGB_NUMBER.fullmatch(t) for t in value.split(" "))  # inf / nan tokens


def _lightgbm_tree(block: str, i: int, n_features: int, line0: int) -> None:
    fields = {}
    lines = {}
    for k, line in enumerate(block.split("\n")[1:], start=line0 + 1):
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or key not in _LGB_TREE_FIELDS or key in fields:
            raise _Fail(f"tree {i}: line {line[:40]!r} is not a known key=value field", k)
        # LightGBM's own number parser aborts the process on a bad token: check every one here
        if value and not _lightgbm_numbers(value):
            raise _Fail(f"tree {i}: {key} holds something that is not a number", k)
        fields[key], lines[key] = value, k

    def need(key):
        if key not in fields:
            raise _Fail(f"tree {i}: field {key} is missing", line0)
        return fields[key]

    n_leaves = _int(need("num_leaves"), "num_leaves", lines.get("num_leaves"))
    n_cat = _int(need("num_cat"), "num_cat", lines.get("num_cat"))
    if n_leaves < 1 or n_cat < 0:
        raise _Fail(f"tree {i}: num_leaves {n_leaves} or num_cat {n_cat} is out of range", lines["num_leaves"])
    if not all(map(math.isfinite, _floats(need("leaf_value"), "leaf_value", lines.get("leaf_value")))):
        raise _Fail(f"tree {i}: leaf_value holds NaN or an infinity (every score would be one)", lines["leaf_value"])
    lengths = {"leaf_value": n_leaves} | {k: n_leaves for k in _LGB_PER_LEAF if k in fields}
    if n_leaves > 1:
        lengths |= dict.fromkeys(
            ("split_feature", "threshold", "decision_type", "left_child", "right_child"), n_leaves - 1
        )
        lengths |= {k: n_leaves - 1 for k in _LGB_PER_NODE if k in fields}
    if fields.get("is_linear", "0") not in ("0", "1"):
        raise _Fail(f"tree {i}: is_linear is neither 0 nor 1", lines.get("is_linear"))
    if fields.get("is_linear") == "1":
        lengths |= {"leaf_const": n_leaves, "num_features": n_leaves}
    for key, n in lengths.items():
        got = len(need(key).split())
        if got != n:
            raise _Fail(f"tree {i}: {key} has {got} values, expected {n}", lines[key])
    if n_leaves == 1:
        return
    split = _ints(fields["split_feature"], "split_feature", lines["split_feature"])
    if any(not 0 <= f < n_features for f in split):
        raise _Fail(f"tree {i}: split_feature outside 0..{n_features - 1}", lines["split_feature"])
    _floats(fields["threshold"], "threshold", lines["threshold"])
    decision = _ints(fields["decision_type"], "decision_type", lines["decision_type"])
    if any(not 0 <= d < 16 for d in decision):
        raise _Fail(f"tree {i}: decision_type out of range", lines["decision_type"])
    if n_cat or any(d & 1 for d in decision):
        bounds = _ints(need("cat_boundaries"), "cat_boundaries", lines.get("cat_boundaries"))
        cats = need("cat_threshold").split()
        if len(bounds) != n_cat + 1 or bounds[0] != 0 or bounds != sorted(bounds) or bounds[-1] != len(cats):
            raise _Fail(f"tree {i}: cat_boundaries do not match cat_threshold", lines["cat_boundaries"])
    if fields.get("is_linear") == "1":
        n_feat = _ints(fields["num_features"], "num_features", lines["num_features"])
        for key in ("leaf_features", "leaf_coeff"):
            if len(need(key).split()) != sum(n_feat):
                raise _Fail(f"tree {i}: {key} does not match num_features", lines[key])
    left = _ints(fields["left_child"], "left_child", lines["left_child"])
    right = _ints(fields["right_child"], "right_child", lines["right_child"])
    try:
        _check_tree(left, right, n_leaves, leaf_of=lambda c: ("node", c) if c >= 0 else ("leaf", ~c))
    except _Fail as exc:
        raise _Fail(f"tree {i}: {exc.problem}", lines["left_child"]) from None


def _lightgbm_parameter_names() -> set | None:
    """LightGBM's parameter names (None when this LightGBM version does not expose them)."""
    try:
        from lightgbm.basic import _ConfigAliases

        return set(_ConfigAliases._get_all_param_aliases())
    except Exception:  # noqa: BLE001 - a private helper; without it the names are not checked
        return None


# ------------------------------------------------------------------------------ XGBoost JSON


def _xgboost(raw: bytes) -> tuple[int, list[str]]:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _Fail(f"not UTF-8 text (byte offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _Fail(f"not valid JSON ({exc.msg}, file truncated?)", exc.lineno) from None
    try:
        learner = doc["learner"]
        n_features = int(learner["learner_model_param"]["num_feature"])
        params = learner["learner_model_param"]
        if params.get("num_class") not in ("0", "1") or params.get("num_target", "1") != "1":
            raise _Fail("not a single-target ranking model (num_class, num_target)")
        names = learner.get("feature_names", [])
        if len(names) not in (0, n_features) or len(learner.get("feature_types", [])) not in (0, n_features):
            raise _Fail(f"feature_names or feature_types does not list {n_features} features")
        booster = learner["gradient_booster"]
        if booster.get("name") != "gbtree":
            raise _Fail(f"expected a gbtree booster, got {booster.get('name')!r}")
        model = booster["model"]
        trees = model["trees"]
        n_trees = int(model["gbtree_model_param"]["num_trees"])
        if not isinstance(trees, list) or len(trees) != n_trees:
            raise _Fail(f"num_trees says {n_trees} but the file holds {len(trees)} trees")
        if len(model.get("tree_info", [])) != n_trees:
            raise _Fail("tree_info does not list every tree")
        indptr = model.get("iteration_indptr")
        if indptr is not None and (
            not isinstance(indptr, list)
            or indptr != sorted(indptr)
            or not indptr
            or indptr[0] != 0
            or indptr[-1] != n_trees
        ):
            raise _Fail("iteration_indptr does not match the trees")
        for i, tree in enumerate(trees):
            if tree.get("id") != i or model["tree_info"][i] != 0:
                raise _Fail(f"tree {i} has id {tree.get('id')!r} or group {model['tree_info'][i]!r}")
            try:
                _xgboost_tree(tree, n_features)
            except _Fail as exc:
                raise _Fail(f"tree {i}: {exc.problem}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, _Fail):
            raise
        raise _Fail(f"unexpected model layout ({type(exc).__name__}: {exc})") from None
    return n_trees, names or [f"f{i}" for i in range(n_features)]


_XGB_NODE_ARRAYS = (
    "left_children",
    "right_children",
    "parents",
    "split_indices",
    "split_conditions",
    "default_left",
    "base_weights",
    "split_type",
)


def _xgboost_tree(tree: dict, n_features: int) -> None:
    param = tree["tree_param"]
    n = int(param["num_nodes"])
    if n < 1 or int(param.get("num_feature", n_features)) != n_features:
        raise _Fail("num_nodes or num_feature out of range")
    if param.get("size_leaf_vector", "1") not in ("0", "1") or param.get("num_deleted", "0") != "0":
        raise _Fail("size_leaf_vector or num_deleted is not a single-target tree's")
    for key in ("split_type", "default_left"):
        if not isinstance(tree.get(key), list) or any(v not in (0, 1) for v in tree[key]):
            raise _Fail(f"{key} holds values other than 0 and 1")
    for key in _XGB_NODE_ARRAYS:
        if not isinstance(tree[key], list) or len(tree[key]) != n:
            raise _Fail(f"{key} has {len(tree[key])} entries for {n} nodes")
    left, right = tree["left_children"], tree["right_children"]
    if any(type(v) is not int for v in left + right + tree["split_indices"]):
        raise _Fail("child links and split indices must be integers")
    if any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in tree["split_conditions"]):
        raise _Fail("split_conditions must be finite numbers")
    internal = [j for j in range(n) if left[j] != -1]
    if any(right[j] == -1 for j in internal) or any(right[j] != -1 for j in range(n) if left[j] == -1):
        raise _Fail("a node has exactly one child")
    if any(not 0 <= tree["split_indices"][j] < n_features for j in internal):
        raise _Fail(f"split index outside 0..{n_features - 1}")
    # children point to node ids; leaves are nodes without children
    is_leaf = [left[j] == -1 for j in range(n)]
    compact = {j: k for k, j in enumerate(internal)}
    leaves = {j: k for k, j in enumerate(j for j in range(n) if is_leaf[j])}

    def leaf_of(child):
        if not isinstance(child, int) or not 0 <= child < n:
            raise _Fail(f"child link {child} points outside the tree")
        return ("leaf", leaves[child]) if is_leaf[child] else ("node", compact[child])

    if is_leaf[0]:
        if n != 1:
            raise _Fail("the root is a leaf but the tree has more nodes")
    else:
        _check_tree([left[j] for j in internal], [right[j] for j in internal], len(leaves), leaf_of=leaf_of)
        if internal[0] != 0:
            raise _Fail("the root is not node 0")
    cats = tree.get("categories", [])
    nodes, segments, sizes = (tree.get(k, []) for k in ("categories_nodes", "categories_segments", "categories_sizes"))
    if not len(nodes) == len(segments) == len(sizes):
        raise _Fail("categorical arrays differ in length")
    for node, seg, size in zip(nodes, segments, sizes):
        if not (0 <= node < n and 0 <= seg and 0 <= size and seg + size <= len(cats)):
            raise _Fail("categorical split points outside its arrays")


# ------------------------------------------------------------------------------ native messages


@contextlib.contextmanager
def lightgbm_messages():
    """Collect LightGBM's native log lines (which it would print) into the yielded list."""
    import lightgbm as lgb

    messages: list[str] = []

    class _Collect:
        def info(self, msg: str) -> None:
            if msg.strip():
                messages.append(msg.strip())

        warning = info

    basic = lgb.basic
    previous = (basic._LOGGER, basic._INFO_METHOD_NAME, basic._WARNING_METHOD_NAME)
    lgb.register_logger(_Collect())
    try:
        yield messages
    finally:
        lgb.register_logger(previous[0], info_method_name=previous[1], warning_method_name=previous[2])


def engine_message(exc: Exception) -> str:
    """The first line of a LightGBM / XGBoost error without XGBoost's ``[time] source:line:`` prefix."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    text = re.sub(r" at \S+, line \d+ ?\.?$", "", text)
    return re.sub(r"^\[[\d:]+\] [^ ]+:\d+: ", "", text)[:300]


@contextlib.contextmanager
def _stderr_captured():
    """Send what native code writes to file descriptor 2 into the yielded list (after the block)."""
    import os
    import sys
    import tempfile

    captured: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.extend(tmp.read().decode("utf-8", "replace").splitlines())


_ACCEPTED: set[str] = set()  # parameter sets (with their column counts) LightGBM accepted in this process
_MAX_ACCEPTED = 1024


def check_lightgbm_params(params: dict, n_features: int) -> None:
    """Let LightGBM parse ``params`` on a two-row data set first, so that a bad value is a one-line
    :class:`ParameterError` instead of LightGBM's own ``[Fatal]`` line on stderr plus an exception.
    A parameter set accepted once in this process is not probed again (an ablation fits hundreds of
    models with a handful of parameter sets)."""
    import json

    import lightgbm as lgb
    import numpy as np

    from ltrfeat.core.errors import ParameterError

    probe = {k: v for k, v in params.items() if k not in ("eval_at", "metric")} | {"verbosity": -1}
    key = json.dumps([probe, int(n_features)], sort_keys=True, default=repr)
    if key in _ACCEPTED:
        return
    try:
        with _stderr_captured(), lightgbm_messages():
            X = np.arange(2.0 * n_features).reshape(2, n_features)  # as many columns as the real data
            data = lgb.Dataset(X, label=[0, 1], group=[2], params={"verbosity": -1})
            lgb.Booster(probe, data)
    except lgb.basic.LightGBMError as exc:
        raise ParameterError(
            f"lightgbm refused the parameters: {engine_message(exc)}",
            fix="check the --param names and values against LightGBM's documentation",
        ) from None
    if len(_ACCEPTED) >= _MAX_ACCEPTED:
        _ACCEPTED.clear()
    _ACCEPTED.add(key)
