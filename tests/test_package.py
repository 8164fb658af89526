"""The installed namespace: one light `ltrfeat` package whose public API resolves name by name."""

from __future__ import annotations

import subprocess
import sys

import ltrfeat


def test_import_is_light_and_versioned():
    code = (
        "import sys, ltrfeat; heavy = [m for m in ('torch', 'lightgbm', 'xgboost', 'sklearn') if m in sys.modules];"
        " print(ltrfeat.__version__, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] and out[0] != "0+unknown" and out[1:] == ["[]"]


def test_the_cli_reads_its_choices_without_the_engines():
    """Generating the options from the configs and registries must not import torch, LightGBM or XGBoost."""
    code = (
        "import sys, ltrfeat.cli.main; print([m for m in ('torch', 'lightgbm', 'xgboost', 'matplotlib') "
        "if m in sys.modules])"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_every_public_name_resolves():
    for name in ltrfeat.__all__:
        assert getattr(ltrfeat, name) is not None, name
    assert ltrfeat.LambdaMART.__module__ == "ltrfeat.rankers.lambdamart"
    assert sorted(dir(ltrfeat)) == sorted(ltrfeat.__all__)


def test_the_console_script_runs_the_namespaced_cli():
    out = subprocess.run(
        [sys.executable, "-m", "ltrfeat.cli.main", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("ltrfeat, version ")


LAYERS = ["core", "clicks", "encoders", {"features", "rankers"}, "datasets", "experiments", "export", "serving", "cli"]


def _imported_modules(path, root):
    """Every ``ltrfeat`` module ``path`` imports, absolute or relative (read from the source)."""
    import ast

    package = ".".join(("ltrfeat", *path.relative_to(root).parent.parts))
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = node.module if node.level == 0 else ".".join(filter(None, [base, node.module]))
            found += [module or ""]
    return found


def test_layers_keep_their_direction():
    """Each layer imports only the layers below it (core < clicks < encoders < features, rankers < datasets <
    experiments < export < serving < cli); features and rankers never import each other; rankers never imports torch,
    nor the encoders (torch models): a ranker runs on a feature matrix, whichever layer made its columns."""
    from pathlib import Path

    root = Path(ltrfeat.__file__).parent
    level = {name: i for i, layer in enumerate(LAYERS) for name in ([layer] if isinstance(layer, str) else layer)}
    assert {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(level)
    for path in root.rglob("*.py"):
        here = path.relative_to(root).parts[0]
        if here not in level:
            continue
        for module in _imported_modules(path, root):
            parts = module.split(".")
            if here == "rankers":
                assert parts[0] != "torch" and parts[:2] != ["ltrfeat", "encoders"], f"{path}: {module}"
            if parts[0] == "ltrfeat" and len(parts) > 1 and parts[1] in level:
                there = parts[1]
                allowed = there == here or level[there] < level[here]
                assert allowed, f"{path.relative_to(root)} imports {module}: {here} may not import {there}"


def test_tests_share_builders_not_each_other():
    """Test modules import shared data from builders.py (fixtures from conftest.py), never from another test."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent
    pattern = re.compile(r"^\s*(from|import)\s+(tests\.)?(test_\w+|conftest)\b", re.M)
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_benchmarks_and_tests_call_the_library_not_the_commands():
    """What a command does beyond parsing and printing lives in the library: no benchmark or test imports a command
    module (``from ltrfeat.cli.demo_cmd import _folds``); commands are reached through ``ltrfeat.cli.main.cli``, and
    the shared option builders of ``cli/_options.py`` are the CLI's own subject."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(r"^\s*from\s+ltrfeat\.cli\.\w+_cmd\s+import\b", re.M)
    files = [*root.joinpath("tests").rglob("*.py"), *root.joinpath("benchmarks").rglob("*.py")]
    offenders = [str(p.relative_to(root)) for p in files if pattern.search(p.read_text())]
    assert offenders == []


def test_no_function_takes_more_than_ten_parameters():
    """Trainers and runners take a config object (encoders.config, crossfit.CrossFitConfig, ablation.AblationConfig,
    rankers.config.RankerConfig), click commands their options in groups (cli.options.option_group); ``*args`` /
    ``**settings`` (single-field overrides of a config) are not counted."""
    import ast
    from pathlib import Path

    root = Path(ltrfeat.__file__).parent
    wide = {}
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                count = len(names) - (names[:1] in (["self"], ["cls"]))
                if count > 10:
                    wide[f"{module}:{node.name}"] = count
    assert not wide, f"take a config object or an option group instead of more than 10 parameters: {wide}"


def test_no_library_function_sits_at_the_parameter_cap_without_a_settings_object():
    """A function at the cap (10 parameters) takes a settings object: a parameter annotated with a
    :class:`~ltrfeat.core.settings.Settings` class (``Conventions``, ``CrossFitConfig``, ``converters.Options``...),
    whose single fields keyword ``**settings`` may replace. Exempt: click commands (their options are their settings, grouped with
    ``option_group``) and scikit-learn style estimators' ``__init__`` and ``fit`` (get_params settings, fit data)."""
    import ast
    import importlib
    from pathlib import Path

    from ltrfeat.core.settings import Settings

    def is_command(node) -> bool:
        calls = [d.func for d in node.decorator_list if isinstance(d, ast.Call)]
        return any(getattr(f, "attr", getattr(f, "id", "")) in ("command", "group") for f in calls)

    def takes_settings(node, module) -> bool:
        args = node.args
        annotations = [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.annotation]
        names = {n.id for a in annotations for n in ast.walk(a) if isinstance(n, ast.Name)}
        return any(isinstance(c, type) and issubclass(c, Settings) for c in (getattr(module, n, None) for n in names))

    root = Path(ltrfeat.__file__).parent
    at_cap = []
    for path in sorted(root.rglob("*.py")):
        name = ".".join(("ltrfeat", *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        estimator_methods = {
            id(item)
            for cls in ast.walk(tree)
            if isinstance(cls, ast.ClassDef) and any(getattr(b, "id", "") == "BaseEstimator" for b in cls.bases)
            for item in cls.body
            if isinstance(item, ast.FunctionDef) and item.name in ("__init__", "fit")
        }
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            count = len(names) - (names[:1] in (["self"], ["cls"]))
            if count < 10 or is_command(node) or id(node) in estimator_methods:
                continue
            if not takes_settings(node, importlib.import_module(name)):
                at_cap.append(f"{name}:{node.name}")
    assert not at_cap, f"group real settings of these in a settings dataclass (keyword-only, documented): {at_cap}"


def _import_graph(*, lazy: bool) -> dict[str, set[str]]:
    """``{module: the ltrfeat modules it imports}``; ``lazy``: imports inside functions count too."""
    import ast
    from pathlib import Path

    root = Path(ltrfeat.__file__).parent

    def name_of(path):
        parts = ("ltrfeat", *path.relative_to(root).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    paths = {name_of(p): p for p in root.rglob("*.py")}

    def imports(node, package: str, in_function: bool):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import) and (lazy or not in_function):
                yield from (a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and (lazy or not in_function):
                base = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                module = child.module if child.level == 0 else ".".join(filter(None, [base, child.module]))
                yield from (f"{module}.{a.name}" if f"{module}.{a.name}" in paths else module for a in child.names)
            yield from imports(child, package, inner)

    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = imports(ast.parse(path.read_text()), package, False)
        graph[name] = {m for m in found if m in paths and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    """No two modules import each other, directly or through others -- counting the imports inside functions
    (made lazily so that commands start fast), which would close a cycle at run time."""
    assert _import_graph(lazy=False)["ltrfeat.experiments._fold_trainer"] >= {"ltrfeat.experiments._encoder_pool"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles(_import_graph(lazy=False)) == []
    assert _cycles(_import_graph(lazy=True)) == []


def test_private_modules_stay_in_their_subpackage():
    """A module named ``_name.py`` is private: only modules of its own subpackage import it (tests may too); what
    other layers use is a public module or a name its subpackage re-exports."""
    graph = _import_graph(lazy=True)
    outside = sorted(
        f"{user} imports {module}"
        for user, imported in graph.items()
        for module in imported
        if module.rpartition(".")[2].startswith("_")
        and (package := module.rpartition(".")[0]) != user
        and not user.startswith(package + ".")
    )
    assert not outside, f"import the public module or re-export the name instead: {outside}"


def test_no_public_name_is_defined_in_two_modules():
    """A public top-level name (function, class, constant) is defined in one module of the package: two ``FORMATS``
    or two ``read_qrels`` holding different things read alike where they are imported. Click commands are left out
    (each is named after its command); a name may repeat only with a reason here."""
    import ast
    from collections import defaultdict
    from pathlib import Path

    allowed = {"log": "each module's own logger, logging.getLogger('ltrfeat.<area>')"}

    def is_command(node) -> bool:
        calls = [d.func for d in node.decorator_list if isinstance(d, ast.Call)]
        return any(getattr(f, "attr", getattr(f, "id", "")) in ("command", "group") for f in calls)

    root = Path(ltrfeat.__file__).parent
    where = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not is_command(node):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = []
            for name in names:
                if not name.startswith("_") and name not in allowed:
                    where[name].append(module)
    twice = {name: modules for name, modules in where.items() if len(modules) > 1}
    assert not twice, f"define each once, or give them names that say what they hold: {twice}"


def test_every_subpackage_lists_its_public_names():
    """``__all__`` in every subpackage: its API names, or its public modules (then all of them)."""
    import importlib
    import pkgutil
    from pathlib import Path

    root = Path(ltrfeat.__file__).parent
    for init in sorted(root.rglob("__init__.py")):
        name = ".".join(("ltrfeat", *init.parent.relative_to(root).parts)).rstrip(".")
        if name == "ltrfeat":
            continue
        package = importlib.import_module(name)
        assert hasattr(package, "__all__"), f"{name} has no __all__"
        public = {m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")}
        for item in package.__all__:
            assert item in public or hasattr(package, item), f"{name}.__all__ names {item!r}, which is not there"
        if public & set(package.__all__):
            assert sorted(public - set(package.__all__)) == [], f"{name}.__all__ misses public modules"


def test_every_config_class_follows_the_settings_policy():
    """Every ``*Config`` class derives from the one settings base and refuses bad values with ParameterError."""
    import dataclasses
    import importlib
    import inspect
    import pkgutil

    from ltrfeat.core.errors import LtrfeatError, ParameterError
    from ltrfeat.core.settings import Settings

    assert issubclass(ParameterError, LtrfeatError) and issubclass(ParameterError, ValueError)
    found = {}
    for info in pkgutil.walk_packages(ltrfeat.__path__, "ltrfeat."):
        if info.name.startswith("ltrfeat.cli") or info.name.rpartition(".")[2].lstrip("_").startswith("dask_"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.endswith("Config") and inspect.isclass(obj) and obj.__module__ == info.name:
                found[name] = obj
    assert {"EncoderConfig", "RankerConfig", "SelectionConfig", "AblationConfig", "CrossFitConfig"} <= set(found)
    for name, cls in found.items():
        assert issubclass(cls, Settings) and dataclasses.is_dataclass(cls), name
        assert cls.from_dict(cls().to_dict()) == cls(), name


def test_tests_mirror_the_package_tree():
    """Unit and command tests live in ``tests/<subpackage>/`` beside the code they test; only checks of the
    whole project (layout, docs, benchmarks runner) stay at the top of ``tests/``."""
    from pathlib import Path

    import ltrfeat

    here = Path(__file__).resolve().parent
    subpackages = {p.parent.name for p in Path(ltrfeat.__file__).parent.glob("*/__init__.py")}
    folders = {p.parent.name for p in here.glob("*/test_*.py")} - {"robustness"}
    assert folders <= subpackages, f"test folders without a subpackage: {sorted(folders - subpackages)}"
    assert subpackages <= folders, f"subpackages without a test folder: {sorted(subpackages - folders)}"
    named_private = sorted(p.name for p in here.glob("*/test__*.py"))
    assert not named_private, f"a test of _foo.py is test_foo.py: rename {named_private}"
    top = sorted(p.stem for p in here.glob("test_*.py"))
    whole_project = ("test_package", "test_bench_runner", "test_code_shape")
    assert all(n in whole_project or n.startswith("test_docs_") for n in top), top
