"""The rules ARCHITECTURE.md states, checked on the source: imports point one way and no two
packages, folders or top-level packages, reach each other; private modules and names stay inside
their package; every module and name loaded by string exists; the library never imports the
command line or the integrations, and the review app reaches the runners only through the read
sides it serves; the report and web packages, and a run up to its first LM call, load without
what they do not need; no top-level package holds a third of the lines (one that big is several
concepts under one name) and none is named like an API function. Below that bound, a module's
size is judged by cohesion in review (ARCHITECTURE.md), never by a line count.

Every import is read — at module level, inside functions, under ``TYPE_CHECKING`` — and every
module loaded by string: the ``lazy_names`` maps of the packages whose names load on first use,
``"module:function"`` targets run in a helper process, module names handed to
``importlib``/``preload``/``PackageLoader``, and ``from assay… import`` lines of code a helper
interpreter runs."""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "assay"

# layers, left to right: a module imports only from its own layer or to the left. The root
# package ``assay`` is core for the modules that import it (its environment defaults and
# ``__version__``); its own lazy ``assay.evaluate`` & co. are a package's re-exports (below).
LAYERS: list[tuple[str, ...]] = [
    (
        "assay",
        "assay._lazy",
        "assay._files",
        "assay._json",
        "assay._scratch",
        "assay._sorted_runs",
        "assay._yaml",
        "assay._registry",
        "assay._signing",
        "assay._endpoints",
        "assay.errors",
        "assay.types",
    ),
    ("assay.scale", "assay.report"),
    ("assay.lm", "assay.data", "assay.signatures", "assay.metrics"),
    ("assay.programs",),
    ("assay.runs",),
    ("assay.inputs",),
    ("assay.evaluation", "assay.reliability"),
    ("assay.decisions",),
    ("assay.emulation", "assay.optimization", "assay.comparison", "assay.ranking"),
    ("assay.runners",),
    ("assay.web",),
    ("assay.cli", "assay.api", "assay.integrations"),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
PACKAGES = {module_name(p) for p in ROOT.rglob("__init__.py")}


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer(module: str) -> int:
    best, found = -1, None
    for i, names in enumerate(LAYERS):
        for name in names:
            matches = module == name if name == "assay" else inside(module, name)
            if matches and len(name) > best:
                best, found = len(name), i
    assert found is not None, f"{module} is in no layer of LAYERS"
    return found


def package_of(module: str) -> str:
    """The package a module belongs to: itself for a package, else its folder (a top-level
    module of ``assay/`` such as ``assay.errors`` is a unit of its own)."""
    if module in PACKAGES:
        return module
    parent = module.rsplit(".", 1)[0]
    return module if parent == "assay" else parent


@dataclass(frozen=True)
class Import:
    line: int
    target: str  # the module loaded
    names: tuple[str, ...]  # the names taken from it (``from … import``, ``module:function``)
    how: str  # "import", "string" (a module name or "module:function"), "code", "lazy"
    re_export: bool = False  # made by a package's ``__init__`` for a name defined below it
    discovery: bool = False  # a registry loading its plug-in folder (``pkgutil.iter_modules``)

    def __str__(self) -> str:
        return f"{self.line} ({self.how}) {self.target}"


_TARGET = re.compile(r"^(assay(?:\.\w+)+)(?::(\w+))?$")
_CODE = re.compile(r"\b(?:from\s+(assay(?:\.\w+)*)\s+import\s+(\w+)|import\s+(assay(?:\.\w+)*))")


def resolve(module: str) -> str:
    """The module a dotted name loads (``assay.web.serve`` → ``assay.web``)."""
    while module not in MODULES and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def _discovering(tree: ast.Module) -> set[int]:
    """Line numbers of the imports made in a function that walks a package with
    ``pkgutil.iter_modules``: a registry finding its built-in plug-ins."""
    lines = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
            if any(getattr(c.func, "attr", "") == "iter_modules" for c in calls):
                lines |= {n.lineno for n in ast.walk(fn) if isinstance(n, ast.Import)}
    return lines


def _registry_folders(tree: ast.Module) -> set[int]:
    """The string constants naming a plug-in folder to ``assay._registry.Registry(...)``: the
    registry imports that folder's modules by walking it, as ``_discovering`` finds."""
    out = set()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call):
            name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
            if name == "Registry":
                out |= {id(a) for a in call.args if isinstance(a, ast.Constant)}
    return out


@cache
def lazy_maps() -> dict[str, dict[str, str]]:
    """``package -> {name: module}`` of every package whose names load on first use, read from
    the running package (the map may be computed)."""
    out = {}
    for name, path in MODULES.items():
        if "lazy_names(" not in path.read_text(encoding="utf-8") or name == "assay._lazy":
            continue
        getter = importlib.import_module(name).__getattr__
        cells = dict(zip(getter.__code__.co_freevars, getter.__closure__ or (), strict=True))
        where = cells["where"].cell_contents
        out[name] = {n: f"{name}.{m}" if m.startswith("_") else m for n, m in where.items()}
    return out


@cache
def imports(module: str) -> tuple[Import, ...]:
    """Every ``assay`` module ``module`` loads, however it loads it."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if module in PACKAGES else module.rsplit(".", 1)[0]
    skip, discovery = _docstrings(tree), _discovering(tree)
    folders = _registry_folders(tree)
    found: list[tuple[int, str, tuple[str, ...], str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up ``level - 1``
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            if base == "assay" or base.startswith("assay."):
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    target = sub if sub in MODULES else base
                    found.append((node.lineno, target, (alias.name,), "import", False))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "assay" or alias.name.startswith("assay."):
                    found.append((node.lineno, alias.name, (), "import", node.lineno in discovery))
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        ):
            m = _TARGET.match(node.value)
            if m and resolve(m.group(1)) == m.group(1):
                names = tuple(filter(None, [m.group(2)]))
                found.append((node.lineno, m.group(1), names, "string", id(node) in folders))
            elif "\n" in node.value or ";" in node.value:  # code a helper interpreter runs
                for c in _CODE.finditer(node.value):
                    target = c.group(1) or c.group(3)
                    names = (c.group(2),) if c.group(2) else ()
                    found.append((node.lineno, target, names, "code", False))
    for name, target in lazy_maps().get(module, {}).items():
        found.append((0, target, (name,), "lazy", False))
    out = []
    for line, target, names, how, disc in found:
        target = resolve(target) if how == "import" else target  # by string: as written
        re_export = module in PACKAGES and inside(target, module) and target != module
        out.append(Import(line, target, names, how, re_export, disc))
    return tuple(out)


def dependencies(module: str) -> list[Import]:
    """The imports that make ``module`` depend on another: not a package's re-exports of what
    is defined below it (its curated surface), nor a registry finding its plug-in folder (the
    plug-ins depend on the registry, not the other way round)."""
    return [
        i
        for i in imports(module)
        if not i.re_export and not (i.discovery and inside(i.target, package_of(module)))
    ]


def test_the_reading_sees_function_level_and_string_loaded_imports():
    """The checks below would pass vacuously if the reading missed these; each is in the code."""
    seen = {(m, i.target, i.how) for m in MODULES for i in imports(m)}
    assert ("assay.cli.review", "assay.web", "import") in seen  # inside a function
    assert ("assay.runs._run", "assay.runs._tracking", "string") in seen
    assert ("assay.runs", "assay.runs._run", "lazy") in seen
    assert ("assay.report._diff", "assay.report._diff", "code") in seen


def test_imports_point_one_way():
    wrong = [
        f"{name}:{i} against the layering"
        for name in MODULES
        for i in dependencies(name)
        if layer(i.target) > layer(name)
    ]
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def package_graph() -> dict[str, dict[str, list[str]]]:
    """``package -> {package it imports: [where]}`` over every dependency of every module."""
    graph: dict[str, dict[str, list[str]]] = {package_of(m): {} for m in MODULES}
    for name in MODULES:
        for i in dependencies(name):
            a, b = package_of(name), package_of(i.target)
            if a != b:
                graph[a].setdefault(b, []).append(f"{name}:{i}")
    return graph


def find_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """One cycle of ``graph`` (its nodes, first repeated last), or None."""
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_two_packages_import_each_other():
    graph = package_graph()
    cycle = find_cycle(graph)
    where = [
        f"{a} -> {b}: {', '.join(graph[a][b][:3])}"
        for a, b in zip(cycle or [], (cycle or [])[1:], strict=False)
    ]
    assert cycle is None, "a cycle of packages:\n" + "\n".join(where)


def top_level(module: str) -> str:
    """The top-level package (or module) of ``assay`` a module belongs to."""
    return ".".join(module.split(".")[:2])


def test_no_two_top_level_packages_import_each_other():
    """A folder is a package, so the test above sees ``assay.x.sub -> assay.y -> assay.x`` as
    no cycle; between the top-level packages — the concepts ARCHITECTURE.md names — it is."""
    folders = package_graph()
    graph: dict[str, dict[str, list[str]]] = {}
    for a, targets in folders.items():
        for b, where in targets.items():
            if top_level(a) != top_level(b):
                graph.setdefault(top_level(a), {}).setdefault(top_level(b), []).extend(where)
    cycle = find_cycle(graph)
    where = [
        f"{a} -> {b}: {', '.join(graph[a][b][:3])}"
        for a, b in zip(cycle or [], (cycle or [])[1:], strict=False)
    ]
    assert cycle is None, "a cycle of top-level packages:\n" + "\n".join(where)


def test_no_top_level_package_holds_a_third_of_the_lines():
    """One concept per top-level package: a package holding a third of the library is several
    concepts under one name."""
    lines: dict[str, int] = {}
    for name, path in MODULES.items():
        lines[top_level(name)] = lines.get(top_level(name), 0) + len(
            path.read_text(encoding="utf-8").splitlines()
        )
    total = sum(lines.values())
    big = {p: n for p, n in lines.items() if n > total / 3}
    assert not big, f"top-level packages above a third of {total} lines: {big}"


def test_no_package_shadows_a_function_of_the_api():
    """``assay.<runner>(...)`` is the Python API; a subpackage of the same name replaces that
    function on the package as soon as it is imported (a package ``assay/toolemu/`` would hide
    ``assay.toolemu(...)``)."""
    from assay.runners import known_runners

    names = {top_level(m).split(".")[1] for m in MODULES if m != "assay"}
    assert not names & set(known_runners())


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b": []}, "b": {"c": []}, "c": {"a": []}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": []}, "b": {}, "c": {"a": []}}) is None


def private_problems(name: str, i: Import) -> list[str]:
    """What is wrong with ``name``'s import ``i``: a private module (``_name``) of a package
    ``name`` is not inside, or a private name taken from outside the package that defines it
    (the target itself when it is a package, else the target module's package)."""
    wrong = []
    parts = i.target.split(".")
    private = [k for k, p in enumerate(parts) if p.startswith("_")]
    if private and not inside(name, ".".join(parts[: private[0]])):
        wrong.append(f"{name}:{i} is a private module of another package")
    owner = i.target if i.target in PACKAGES else i.target.rsplit(".", 1)[0]
    hidden = [n for n in i.names if n.startswith("_") and n != "__version__"]
    if hidden and not inside(name, owner):
        wrong.append(f"{name}:{i} takes the private names {hidden} of {owner}")
    return wrong


def test_private_modules_and_names_stay_in_their_package():
    """Loaded by string or not (tests excepted)."""
    wrong = [w for name in MODULES for i in imports(name) for w in private_problems(name, i)]
    assert not wrong, "\n".join(wrong)


def test_a_private_name_belongs_to_the_package_that_defines_it():
    """Not to that package's parent: the harness's private names are not the evaluate
    runner's."""
    harness, evaluate = "assay.reliability", "assay.evaluation._evaluate"
    assert private_problems(evaluate, Import(1, harness, ("_x",), "import"))
    assert private_problems(evaluate, Import(1, f"{harness}._report", ("_x",), "string"))
    assert private_problems("assay.decisionsx", Import(1, "assay.decisions", ("_x",), "import"))
    assert not private_problems(
        f"{harness}._harness", Import(1, f"{harness}._report", ("_x",), "string")
    )
    assert not private_problems(
        f"{harness}.tests.label_flip", Import(1, harness, ("_x",), "import")
    )


def test_every_module_named_by_string_has_what_it_names():
    """A ``"module:function"`` target, a lazily loaded name, a module loaded by name: a module
    moved or a function renamed breaks it only when the helper process or the first use runs."""
    missing = []
    for name in MODULES:
        for i in imports(name):
            if i.how in ("string", "lazy", "code") and i.target in MODULES:
                module = importlib.import_module(i.target)
                missing += [f"{name}:{i} has no {n}" for n in i.names if not hasattr(module, n)]
            elif i.how in ("string", "lazy", "code"):
                missing.append(f"{name}:{i} is no module")
    assert not missing, "\n".join(missing)


READ_SIDES = (
    "assay.reliability",
    "assay.decisions.review_queue",
    "assay.decisions.selective.review",
)


def test_the_review_app_reads_only_the_harness_read_side():
    """``assay.web`` renders nothing a runner builds and imports no runner but the runs' public
    read sides it serves: the harness's (``ReviewRun`` and the review decisions) and the
    review queues of people's verdicts (``ReviewQueue``: a selective apply run's abstained
    items, an estimate run's items to label)."""
    runners = [p for p in MODULES if layer("assay.inputs") <= layer(p) < layer("assay.web")]
    wrong = [
        f"{name}:{i}"
        for name in MODULES
        if inside(name, "assay.web")
        for i in imports(name)
        if any(inside(i.target, r) for r in runners) and i.target not in READ_SIDES
    ]
    assert not wrong, "assay.web reaching into the runners: " + ", ".join(wrong)


def test_the_library_never_imports_the_command_line():
    wrong = [
        f"{name}:{i}"
        for name in MODULES
        if not inside(name, "assay.cli")
        for i in imports(name)
        if inside(i.target, "assay.cli")
    ]
    assert not wrong, "library modules importing assay.cli: " + ", ".join(wrong)


def test_the_library_never_imports_the_integrations():
    """``assay.integrations`` (assay's judges as MLflow and Inspect scorers) is for users: no
    module of the library depends on it."""
    wrong = [
        f"{name}:{i}"
        for name in MODULES
        if not inside(name, "assay.integrations")
        for i in imports(name)
        if inside(i.target, "assay.integrations")
    ]
    assert not wrong, "library modules importing assay.integrations: " + ", ".join(wrong)


def _loaded_by(statement: str, heavy: tuple[str, ...]) -> str:
    import subprocess
    import sys

    code = (
        f"import sys; sys.path.insert(0, sys.argv[1]); {statement}; "
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT.parent)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_the_report_and_web_packages_load_without_the_runners_or_dspy():
    """``assay.report`` is imported by the word-diff helper process a harness starts while its
    judges run, and ``assay.web`` by ``assay review serve``: loading the harness, ToolEmu, DSPy
    or MLflow there (1.3 s of imports) once held up the end of every harness run. Rendering a
    report needs none of them either."""
    runners = ("assay.inputs", "assay.evaluation", "assay.decisions", "assay.reliability")
    runners += ("assay.optimization", "assay.comparison", "assay.runners", "assay.emulation")
    heavy = (*runners, "assay.web", "dspy", "mlflow")
    assert _loaded_by("import assay.report; assay.report.render_html", heavy) == "[]"
    assert _loaded_by("import assay.web", (*runners, "dspy", "mlflow")) == "[]"


def test_a_run_reaches_its_first_lm_call_without_the_statistics_libraries():
    """NumPy, SciPy and scikit-learn load while the calls are in flight (``runs.preload``), not
    on the way to the first request (~0.1 s of it): loading a harness config, a judge config
    with a calibration map and the tests a run runs, and importing both runners, needs none."""
    import subprocess
    import sys

    code = """
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from assay.inputs import load_config
from assay.reliability import HarnessConfig
from assay.reliability._registry import get_test
import assay.evaluation._evaluate, assay.reliability.engine._harness
from assay.programs import JudgeConfig
config, _ = load_config(Path(sys.argv[2]), {}, model=HarnessConfig)
tests = [get_test(name, settings) for name, settings in config.tests.items()]
judge = JudgeConfig.model_validate({
    **config.judges[0].model_dump(mode="json"),
    "score_mode": "expected",
    "calibration": {"kind": "isotonic", "x": [0.2, 0.8], "y": [0.1, 0.9], "n_fit": 20},
})
assert judge.calibration is not None and len(tests) == len(config.tests)
print(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "scipy", "sklearn")))
"""
    example = ROOT.parent / "examples" / "harmbench_harness.yaml"
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT.parent), str(example)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
