"""A run's plug-ins are part of its identity, as an ``@file`` is: the same plug-in again reuses
the run (no LM call), an edited one makes another run; a module counts by its content too. The
run's hash is the one its readers check (``assay certify`` reads the items back against it),
and a config that names no plug-in keeps the hash it had."""

from __future__ import annotations

import json
from pathlib import Path

import assay
from assay.inputs import EvaluateConfig, load_config
from assay.inputs._items import data_fingerprint, load_items
from tests.plugin_files import first_sentence_kind

SHEET = {"rules": [{"match": "is red", "output": {"verdict": "incorrect"}}]}
SHEET["default"] = {"verdict": "correct"}


def project(folder: Path, task: str, plugins: list[str]) -> Path:
    (folder / "items.csv").write_text(
        "request,response,expected\n"
        "What colour is the sky?,The sky is blue. Snow is red.,1\n"
        "What colour is snow?,Snow is red. The sky is blue.,0\n"
    )
    (folder / "sheet.json").write_text(json.dumps(SHEET))
    config = {
        "name": "kind",
        "plugins": plugins,
        "data": {"path": "items.csv"},
        "judge": {
            "name": "j",
            "task": task,
            "model": "scripted:sheet.json",
            "rubric": "Names the right colour.",
            "scale": {"kind": "binary", "labels": ["incorrect", "correct"]},
        },
        "tracking": {"enabled": False},
    }
    path = folder / "config.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def evaluate(config: Path, workdir: Path):
    return assay.evaluate(config, workdir=workdir, progress=False)


def test_an_edited_plugin_file_makes_another_run(tmp_path):
    (tmp_path / "kind.py").write_text(first_sentence_kind("identity_first_sentence"))
    config = project(tmp_path, "identity_first_sentence", ["kind.py"])
    first = evaluate(config, tmp_path)
    assert first.new_judgments == 2
    assert [j.score for j in first.judgments] == [1, 0]  # the first sentences, judged

    again = evaluate(config, tmp_path)
    assert again.run_dir == first.run_dir and again.new_judgments == 0
    run_hash = json.loads((first.run_dir / "run.json").read_text())["run_hash"]
    assert first.summary.run_hash == run_hash
    certificate = assay.api.certify(
        first.run_dir, {"name": "lax", "bars": {"accuracy": 0.01}}, workdir=tmp_path
    )
    assert certificate.run_hash == run_hash  # its items read back against the run's hash

    (tmp_path / "kind.py").write_text(first_sentence_kind("identity_first_sentence") + "# v2\n")
    edited = evaluate(config, tmp_path)
    assert edited.run_dir != first.run_dir and edited.new_judgments == 2


def test_a_module_counts_by_its_content_and_no_plugin_keeps_the_hash(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    module = tmp_path / "lib" / "identity_kind_module.py"
    module.write_text(first_sentence_kind("identity_module_kind"))
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    config = project(tmp_path, "identity_module_kind", ["identity_kind_module"])
    first = evaluate(config, tmp_path)
    assert (
        (first.run_dir / "config.yaml")
        .read_text()
        .startswith("name: kind\nplugins:\n- identity_kind_module\n")
    )
    module.write_text(first_sentence_kind("identity_module_kind") + "# v2\n")
    assert evaluate(config, tmp_path).run_dir != first.run_dir

    (tmp_path / "plain").mkdir()
    plain = project(tmp_path / "plain", "response", [])
    res = evaluate(plain, tmp_path)
    cfg, _ = load_config(plain, model=EvaluateConfig)
    items = load_items(cfg.data, cfg.judge.scale)
    assert json.loads((res.run_dir / "run.json").read_text())["run_hash"] == cfg.run_hash(
        data_fingerprint(items)
    )


def test_a_package_counts_by_every_file_in_it(tmp_path, monkeypatch):
    """A plug-in of several files is a package named by its module: an edit to any of its
    files, not only ``__init__.py``, makes another run."""
    package = tmp_path / "lib" / "identity_package"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from identity_package import kinds  # noqa: F401\n")
    kinds = package / "kinds.py"
    kinds.write_text(first_sentence_kind("identity_package_kind"))
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    config = project(tmp_path, "identity_package_kind", ["identity_package"])
    first = evaluate(config, tmp_path)
    assert first.new_judgments == 2
    assert evaluate(config, tmp_path).run_dir == first.run_dir
    kinds.write_text(first_sentence_kind("identity_package_kind") + "# v2\n")
    assert evaluate(config, tmp_path).run_dir != first.run_dir


def test_the_api_s_plugins_keyword_is_the_config_s_plugins(tmp_path, monkeypatch):
    """``assay.evaluate(config, plugins=[...])`` (a file relative to the current directory)
    imports the plug-in, records it in config.yaml and makes the run the config naming it
    makes."""
    (tmp_path / "kind.py").write_text(first_sentence_kind("api_first_sentence"))
    (tmp_path / "named").mkdir()
    named = project(tmp_path / "named", "api_first_sentence", [str(tmp_path / "kind.py")])
    (tmp_path / "given").mkdir()
    given = project(tmp_path / "given", "api_first_sentence", [])
    monkeypatch.chdir(tmp_path)
    res = assay.evaluate(given, workdir=tmp_path / "given", progress=False, plugins=["kind.py"])
    assert [j.score for j in res.judgments] == [1, 0]
    recorded = (res.run_dir / "config.yaml").read_text()
    assert f"plugins:\n- {tmp_path / 'kind.py'}\n" in recorded
    same = evaluate(named, tmp_path / "named")
    assert same.run_dir.name == res.run_dir.name


def test_a_package_s_identity_reads_a_linked_folder_once_and_no_bytecode(tmp_path, monkeypatch):
    """Every file of a module plug-in's package counts — its data as its code —, a linked
    folder read once (a link back up the tree is no loop), Python's bytecode not at all."""
    from assay._registry import plugin_identity

    package = tmp_path / "lib" / "identity_data_package"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data" / "prompt.txt").write_text("lenient")
    (package / "data" / "up").symlink_to(package, target_is_directory=True)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    first = plugin_identity(["identity_data_package"])

    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"bytecode")
    (package / "data" / "old.pyc").write_bytes(b"bytecode")
    assert plugin_identity(["identity_data_package"]) == first
    (package / "data" / "prompt.txt").write_text("strict")
    assert plugin_identity(["identity_data_package"]) != first


def test_a_module_s_version_is_its_distribution_s_as_importlib_names_it(monkeypatch):
    """A module plug-in's identity holds the version of the distribution that provides it: for
    every top-level name installed here, the one ``importlib.metadata.packages_distributions``
    names (the independent computation); found without that scan of every distribution where
    the distribution is named after the package, and the scan made once a process otherwise."""
    from importlib import metadata

    from assay import _registry

    providers = metadata.packages_distributions()

    def scanned(top: str) -> str:
        for dist in providers.get(top, []):
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
        return ""

    assert len(providers) > 50
    for top in providers:
        assert _registry._version(top) == scanned(top), top

    scans = []
    monkeypatch.setattr(_registry, "_PACKAGES", {})
    monkeypatch.setattr(
        metadata, "packages_distributions", lambda: scans.append(1) or providers, raising=True
    )
    assert _registry._version("dspy") == metadata.version("dspy") and not scans
    assert _registry._version("sklearn") == metadata.version("scikit-learn")  # named otherwise
    assert _registry._version("no_such_module_here") == ""
    assert _registry._version("yaml.constructor") == metadata.version("PyYAML")
    assert len(scans) == 1


def test_a_plugin_file_runs_as_its_text_is_not_as_bytecode_cached_for_it(tmp_path):
    """Python trusts a cached ``.pyc`` while the source's size and modification time, to the
    second, match: a plug-in put right by an edit of the same length within that second
    (``reliability_tset`` → ``reliability_test``, as the extending page's test does) ran the old
    code in the next command — under the hash of the new text, which the run's identity holds.
    A plug-in file is compiled from its text each time it is imported."""
    import os
    import subprocess
    import sys

    from tests.processes import REPO

    plugin = tmp_path / "value.py"
    plugin.write_text('VALUE = "old"\n')
    stamp = plugin.stat().st_mtime_ns
    code = (
        "import sys; from assay._registry import _import_plugin; "
        "print(sys.modules[_import_plugin(sys.argv[1])].VALUE)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(REPO)

    def imported() -> str:
        done = subprocess.run(
            [sys.executable, "-c", code, str(plugin)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert imported() == "old"
    plugin.write_text('VALUE = "new"\n')  # the same length
    os.utime(plugin, ns=(stamp, stamp))  # within the same second
    assert imported() == "new"
