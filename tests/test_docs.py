"""The README and docs/ say what a user types: every `assay …` line in their code blocks parses
with the CLI's own parser, every example config they name exists and loads, every relative link
points at a file of the repository, and docs/extending.md's plug-ins run as written and import
only names its table lists, from modules that export them."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest

from assay.api import _config
from assay.cli import build_parser
from assay.decisions.selective import SelectiveConfig
from assay.emulation import ToolEmuRunConfig
from assay.inputs import EvaluateConfig
from assay.optimization import OptimizeConfig
from assay.reliability import HarnessConfig

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M)


def _command_lines(page: Path) -> list[str]:
    """`assay …` lines of the page's code blocks, continuations joined, prompts and comments
    dropped."""
    lines = []
    for block in _code_blocks(page.read_text(encoding="utf-8")):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("assay "):
                lines.append(line)
    return lines


EXTENDING = ROOT / "docs" / "extending.md"  # its commands run for real (below): they load
# plug-ins, which a parser built here does not know
COMMANDS = [
    (page.name, line) for page in PAGES if page != EXTENDING for line in _command_lines(page)
]


def test_the_pages_show_commands():
    names = {line.split()[1] for _, line in COMMANDS}
    assert {"evaluate", "harness", "agreement", "review", "compare"} <= names


@pytest.mark.parametrize(("page", "line"), COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_every_command_line_parses(page, line):
    words = shlex.split(line, comments=True)
    try:
        build_parser().parse_args(words[1:])
    except SystemExit as exc:  # argparse's way of refusing
        pytest.fail(f"{page}: `{line}` does not parse (exit {exc.code})")


def _kind(path: str) -> type:
    name = Path(path).stem
    if name.startswith("optimize"):
        return OptimizeConfig
    if name == "toolemu_run":
        return ToolEmuRunConfig
    if name.endswith(("_harness", "_bias")):
        return HarnessConfig
    if name.endswith("_selective"):
        return SelectiveConfig
    return EvaluateConfig


CONFIGS = sorted(
    {
        m
        for page in PAGES
        for m in re.findall(r"examples/[\w./-]+\.yaml", page.read_text(encoding="utf-8"))
    }
)


def test_the_pages_name_example_configs():
    assert "examples/harmbench.yaml" in CONFIGS


@pytest.mark.parametrize("path", CONFIGS)
def test_every_named_example_config_loads(path):
    file = ROOT / path
    assert file.is_file(), f"{path} is named in the docs but does not exist"
    if Path(path).stem.endswith("_policy"):  # a policy of `assay certify`, not a run config
        from assay.decisions._certify import load_policy

        assert load_policy(file).name
        return
    config, _ = _config(file, _kind(path), {})
    assert config.name


LINKS = [
    (page, target)
    for page in PAGES
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
]


@pytest.mark.parametrize(("page", "target"), LINKS, ids=[f"{p.name}->{t}" for p, t in LINKS])
def test_every_relative_link_points_at_a_file(page, target):
    assert (page.parent / target).exists(), f"{page.name} links to {target}, which is missing"


NAMED_PATHS = sorted(
    set(
        re.findall(
            r"`((?:assay|tests|docs|examples|benchmarks)/[\w./-]+)`",
            (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"),
        )
    )
)


def test_the_architecture_page_names_paths():
    assert "assay/runs/" in NAMED_PATHS and len(NAMED_PATHS) > 20


@pytest.mark.parametrize("path", NAMED_PATHS)
def test_every_path_the_architecture_page_names_exists(path):
    assert (ROOT / path).exists(), f"ARCHITECTURE.md names {path}, which does not exist"


# -- docs/extending.md: what a plug-in imports -------------------------------------------------


def _import_table() -> dict[str, list[str]]:
    """The page's table "What a plug-in imports": each module with the names its row lists."""
    text = EXTENDING.read_text(encoding="utf-8")
    section = text.split("## What a plug-in imports", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w.]+)` \| (.+) \|$", section, flags=re.M)
    return {module: re.findall(r"`(\w+)`", names) for module, names in rows}


IMPORT_TABLE = _import_table()


@pytest.mark.parametrize("module", IMPORT_TABLE)
def test_every_module_the_import_table_lists_exports_its_names(module):
    imported = importlib.import_module(module)
    for name in IMPORT_TABLE[module]:
        assert hasattr(imported, name), f"{module} has no {name}"
        assert name in imported.__all__, f"{module} does not export {name} in its __all__"


def test_the_import_table_lists_every_name_the_examples_import():
    imports = [
        (module, name.strip())
        for block in _code_blocks(EXTENDING.read_text(encoding="utf-8"))
        for module, names in re.findall(r"^from (assay[\w.]*) import (.+)$", block, flags=re.M)
        for name in names.split(",")
    ]
    assert ("assay.runners", "runner") in imports and ("assay.types", "Item") in imports
    missing = [f"{m}.{n}" for m, n in imports if n not in IMPORT_TABLE.get(m, [])]
    assert not missing, f"the examples import names the table does not list: {missing}"


# -- docs/extending.md: its files written, its commands run --------------------------------------
_BLOCK = re.compile(r"(?:^`([\w.-]+)`:\n\n)?^```(\w*)\n(.*?)^```", flags=re.S | re.M)


@pytest.mark.slow
def test_the_extending_page_runs_as_written(tmp_path):
    """Every file the page shows (a block after "`name`:") is written to one folder, its
    ``pyproject.toml`` installed as a distribution's metadata, and every ``$ assay …`` line run
    there in order as a command of its own: each succeeds and prints the lines shown after it
    — the one shown failing, with a misspelt decorator in its plug-in, prints that line."""
    import shutil
    import tomllib

    from tests.processes import assay_process

    folder, site = tmp_path / "colours", tmp_path / "site"
    folder.mkdir()
    blocks = _BLOCK.findall(EXTENDING.read_text(encoding="utf-8"))
    for name, _, body in blocks:
        if name:
            (folder / name).write_text(body, encoding="utf-8")
    path: tuple[Path, ...] = ()
    ran = 0
    printed: list[str] = []
    for _, lang, body in blocks:
        if lang == "toml":  # the package's metadata, as pip installs it
            project = tomllib.loads(body)["project"]
            info = site / f"{project['name']}-{project['version']}.dist-info"
            info.mkdir(parents=True)
            (info / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
            )
            group = project["entry-points"]["assay.plugins"]
            lines = [f"{key} = {value}" for key, value in group.items()]
            (info / "entry_points.txt").write_text("[assay.plugins]\n" + "\n".join(lines) + "\n")
            for module in group.values():
                shutil.copy(folder / f"{module}.py", site)
            path = (site,)
        if lang != "console":
            continue
        command, *shown = body.splitlines()
        args = shlex.split(command.removeprefix("$ "))[1:]
        failing = bool(shown) and shown[0].startswith("assay: error:")
        good = (folder / "shouting.py").read_text(encoding="utf-8")
        if failing:
            broken = good.replace("@reliability_test(", "@reliability_tset(")
            (folder / "shouting.py").write_text(broken, encoding="utf-8")
        proc = assay_process(*args, cwd=folder, path=path)
        out, err = proc.communicate(timeout=600)
        (folder / "shouting.py").write_text(good, encoding="utf-8")
        ran += 1
        if failing:
            assert proc.returncode == 2
            assert err.strip() == shown[0].replace("/home/me/colours", str(folder))
            continue
        assert proc.returncode == 0, f"`{command}`: {err}"
        assert all(line in out.splitlines() for line in shown), (command, out)
        printed += out.splitlines()
    assert ran == 6
    # the prose's "The console line of `test` ends with `…`"
    told = re.findall(r"console line of `(\w+)` ends with `([^`]+)`", EXTENDING.read_text())
    assert told
    for test, end in told:
        assert any(line.split()[:1] == [test] and line.endswith(end) for line in printed), end
