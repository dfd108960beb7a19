"""The rules ARCHITECTURE.md states, checked on the source: imports point one way, private modules
stay inside their package, the library never imports the command line. Size is
judged by cohesion in review (ARCHITECTURE.md), not by a line count."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "assay"

# layers, left to right: a module imports (at load time) only from its own layer or to the left
LAYERS: list[tuple[str, ...]] = [
    ("assay", "assay.errors", "assay.types", "assay.scale"),
    ("assay.lm", "assay.data", "assay.signatures", "assay.metrics"),
    ("assay.programs",),
    ("assay.experiments.runs",),
    ("assay.experiments", "assay.toolemu"),
    ("assay.web",),
    ("assay.cli", "assay.api"),
]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> int:
    best, found = -1, 0
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), i
    return found


def imports(path: Path, *, top_level_only: bool) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every ``assay`` import (module level only, if asked)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("assay"):
            out.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("assay")]
    return out


def test_imports_point_one_way():
    wrong = []
    for name, path in MODULES.items():
        for line, target, _ in imports(path, top_level_only=True):
            if layer(target) > layer(name):
                wrong.append(f"{name}:{line} imports {target}")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_private_modules_and_names_stay_in_their_package():
    wrong = []
    for name, path in MODULES.items():
        for line, target, names in imports(path, top_level_only=False):
            parts = target.split(".")
            private = [i for i, p in enumerate(parts) if p.startswith("_")]
            if private:
                owner = ".".join(parts[: private[0]])
                if not (name == owner or name.startswith(owner + ".")):
                    wrong.append(f"{name}:{line} imports the private module {target}")
            hidden = [n for n in names if n.startswith("_") and n != "__version__"]
            if hidden and not name.startswith(target.rsplit(".", 1)[0]):
                wrong.append(f"{name}:{line} imports private names {hidden} from {target}")
    assert not wrong, "\n".join(wrong)


def test_the_library_never_imports_the_command_line():
    wrong = [
        f"{name}:{line}"
        for name, path in MODULES.items()
        if not name.startswith("assay.cli")
        for line, target, _ in imports(path, top_level_only=False)
        if target == "assay.cli" or target.startswith("assay.cli.")
    ]
    assert not wrong, "library modules importing assay.cli: " + ", ".join(wrong)


def test_the_web_package_loads_without_the_runners_or_dspy():
    """``assay.web`` is imported by the word-diff helper process a harness starts while its
    judges run, and by ``assay review serve``: loading the harness, ToolEmu, DSPy or MLflow there
    (1.3 s of imports) once held up the end of every harness run."""
    import subprocess
    import sys

    heavy = ("assay.experiments", "assay.toolemu", "dspy", "mlflow")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import assay.web; "
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT.parent)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout


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
from assay.experiments import load_config
from assay.experiments.reliability import HarnessConfig
from assay.experiments.reliability._registry import get_test
import assay.experiments._evaluate, assay.experiments.reliability.engine._harness
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
