"""``assay certify`` end to end: a labelled evaluate run on the stub server →
a certificate admitted under lax bars (exit 0) and refused under strict ones (exit 1), bound to
the judge config's hash and the items consumed; the items used once (a second certificate on
any of them is refused, whatever the config); ``--require-certificate`` on evaluate, harness and
estimate refuses a missing, refused or stale certificate before any request reaches the stub."""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from assay.cli import main
from assay.inputs._config import EvaluateConfig
from assay.inputs._items import item_set_tags, load_items
from assay.lm import StubServer
from assay.lm._stub_server import default_respond
from assay.metrics._certify import value_range
from tests.stub_judge import stub_config, write_items
from tests.web.test_report_parity import assert_same_sections

N = 40  # items i0..i39; the reference of item k is k % 2 (20 positives, 20 negatives)
LAX = {"name": "lax", "confidence": 0.95, "bars": {"tpr": 0.7, "tnr": 0.7}}
STRICT = {"name": "strict", "confidence": 0.95, "bars": {"tpr": 0.95, "kappa_categorical": 0.9}}


def oracle(request: dict) -> str:
    """The stub as a judge that gets every item right (item k's verdict: True when k is odd);
    item 0 gets an answer that does not parse (one unscored judgment)."""
    k = int(re.search(r"item (\d+)", json.dumps(request["messages"])).group(1))
    if k == 0:
        return "no idea"
    answer = default_respond(request)
    return answer.replace("False", "True") if k % 2 else answer


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """One finished labelled evaluate run (judged once for the module), and the stub serving."""
    folder = tmp_path_factory.mktemp("judged")
    with StubServer(respond=oracle) as stub:
        csv = write_items(folder, N)
        cfg = stub_config(folder, csv, stub.base_url, name="cert", retries=0)
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(folder)
            assert main(["evaluate", str(cfg), "--quiet"]) == 0
        (run_dir,) = (folder / "runs").glob("cert-*")
        yield run_dir, cfg, stub


@pytest.fixture
def run(judged, tmp_path, monkeypatch, capsys):
    """The module's run copied into ``tmp_path/runs`` (a ledger of its own), run from there."""
    run_dir, cfg, stub = judged
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    copy = tmp_path / "runs" / run_dir.name
    shutil.copytree(run_dir, copy)
    return copy, cfg, stub


def fresh_run(
    tmp_path: Path, cfg: Path, ks: range, name: str, text: Any = None, **judge: object
) -> Path:
    """A finished evaluate run of the module's judge config (``judge``: entries changed) on
    newly labelled items ``ks`` (item k's response: ``text(k)``), in ``tmp_path/runs``."""
    text = text or (lambda k: f"Item {k} is blue.")
    rows = ["id,request,response,expected"]
    rows += [f"i{k},What colour is item {k}?,{text(k)},{k % 2}" for k in ks]
    csv = tmp_path / f"{name}.csv"
    csv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    data = json.loads(cfg.read_text())
    data["name"], data["data"]["path"] = name, str(csv)
    data["judge"] |= judge
    assert main(["evaluate", str(write(tmp_path / f"{name}.yaml", data)), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "runs").glob(f"{name}-*")
    return run_dir


def certify(tmp_path: Path, run_dir: Path, policy: dict, capsys, *extra: str) -> tuple[int, str]:
    pol = write(tmp_path / f"{policy['name']}.yaml", policy)
    code = main(["certify", str(run_dir), "--policy", str(pol), *extra])
    out = capsys.readouterr()
    return code, out.out + out.err


def one_line_refusal(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def test_lax_bars_admit_the_judge_and_the_certificate_binds_config_and_items(run, tmp_path, capsys):
    run_dir, cfg, stub = run
    calls = stub.n_requests
    code, out = certify(tmp_path, run_dir, LAX, capsys, "--out", str(tmp_path / "cert.json"))
    assert code == 0, out
    assert stub.n_requests == calls  # no LM call
    assert "ADMITTED" in out
    cert = json.loads((tmp_path / "cert.json").read_text())
    folder = Path(cert["ledger"])
    assert cert == json.loads((folder / "certificate.json").read_text())
    assert folder.parent == tmp_path / "runs" / "certificates"
    # the report shows the table the console printed
    table = [line for line in out.splitlines() if line.startswith("| tpr ")]
    assert table and table[0] in (folder / "report.md").read_text()
    assert "tnr" in (folder / "report.html").read_text()
    assert_same_sections(folder)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert cert["config_hash"] == metrics["config_hash"]
    assert cert["decision"] == "admitted" and cert["items"] == [f"i{k}" for k in range(N)]
    # the item set's fingerprint is the one MLflow's assay.items tag gives the run
    config = EvaluateConfig.model_validate_json(json.dumps(json.loads(cfg.read_text())))
    items = load_items(config.data, config.judge.scale)
    assert cert["data_fingerprint"][:16] == item_set_tags(items, split="all")["assay.items"]
    # item 0 (a negative) is unscored: it counts as a false alarm, not dropped
    assert cert["unscored"] == {"parse_error": 1}
    tpr, tnr = cert["results"]
    assert (tpr["successes"], tpr["n"]) == (20, 20)
    assert (tnr["successes"], tnr["n"]) == (19, 20)
    assert tpr["bound"] == pytest.approx((0.05 / 2) ** (1 / 20))  # 20/20 at 1 - 0.05/2
    assert cert["assay_version"] and cert["issued"] and cert["policy"]["name"] == "lax"


def test_strict_bars_refuse_the_judge_with_exit_code_1(run, tmp_path, capsys):
    run_dir, _, _ = run
    code, out = certify(tmp_path, run_dir, STRICT, capsys, "--json")
    assert code == 1
    cert = json.loads(out)
    assert cert["decision"] == "refused"
    assert [r["passed"] for r in cert["results"]] == [False, False]  # 0.83 < 0.95; κ < 0.9


def test_a_validation_set_is_used_once_whatever_the_judge_config(run, tmp_path, capsys):
    run_dir, cfg, stub = run
    first, _ = certify(tmp_path, run_dir, STRICT, capsys)
    assert first == 1  # refused: its items are consumed all the same
    (earlier,) = (tmp_path / "runs" / "certificates").glob("*/certificate.json")
    pol = write(tmp_path / "lax.yaml", LAX)
    line = one_line_refusal(capsys, ["certify", str(run_dir), "--policy", str(pol)])
    assert f"consumed by certificate {earlier}" in line and "used once" in line
    # another judge config (another rubric) on the same items: refused too
    data = json.loads(cfg.read_text())
    data["judge"]["rubric"] = "A good response names a colour, any colour."
    other = write(tmp_path / "other.yaml", data)
    assert main(["evaluate", str(other), "--quiet"]) == 0
    capsys.readouterr()
    (other_run,) = [d for d in (tmp_path / "runs").glob("cert-*") if d != run_dir]
    line = one_line_refusal(capsys, ["certify", str(other_run), "--policy", str(pol)])
    assert str(earlier) in line
    assert len(list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))) == 1


def test_require_certificate_passes_refuses_and_says_stale_before_any_call(run, tmp_path, capsys):
    run_dir, cfg, stub = run
    code, _ = certify(tmp_path, run_dir, LAX, capsys, "--out", str(tmp_path / "ok.json"))
    assert code == 0
    ok = str(tmp_path / "ok.json")
    # the certified config: runs (a re-run of the finished config: re-read, no new call)
    assert main(["evaluate", str(cfg), "--quiet", "--require-certificate", ok]) == 0
    capsys.readouterr()
    before = stub.n_requests
    # the judge changed since: stale
    data = json.loads(cfg.read_text())
    data["judge"]["rubric"] = "Another rubric."
    changed = write(tmp_path / "changed.yaml", data)
    line = one_line_refusal(
        capsys, ["evaluate", str(changed), "--quiet", "--require-certificate", ok]
    )
    assert line.startswith("assay: error: stale: no certificate for judge stub-judge (config ")
    assert json.loads(Path(ok).read_text())["config_hash"] in line
    # --model overrides the config: another judge, stale too
    line = one_line_refusal(
        capsys,
        ["evaluate", str(cfg), "--quiet", "--model", "openai/other", "--require-certificate", ok],
    )
    assert "stale" in line
    # a refused certificate is no certificate (the same judge config refused on other items);
    # a missing file is one line
    other = fresh_run(tmp_path, cfg, range(100, 140), "more")
    capsys.readouterr()
    before = stub.n_requests
    refused = tmp_path / "refused.json"
    code, _ = certify(tmp_path, other, STRICT, capsys, "--out", str(refused))
    assert code == 1
    line = one_line_refusal(
        capsys, ["evaluate", str(cfg), "--quiet", "--require-certificate", str(refused)]
    )
    assert "refused judge stub-judge" in line
    line = one_line_refusal(
        capsys, ["evaluate", str(cfg), "--require-certificate", str(tmp_path / "none.json")]
    )
    assert "none.json: certificate or policy file not found" in line
    assert stub.n_requests == before  # no request reached the stub
    assert not any(
        d.name.startswith(("cert-", "more-")) and d not in (run_dir, other)
        for d in (tmp_path / "runs").iterdir()
    )


def test_estimate_and_harness_require_a_certificate_of_their_judge(run, tmp_path, capsys):
    run_dir, cfg, stub = run
    assert certify(tmp_path, run_dir, LAX, capsys, "--out", str(tmp_path / "ok.json"))[0] == 0
    ok = str(tmp_path / "ok.json")
    est = ["estimate", str(run_dir), "--validation", str(run_dir), "--require-certificate"]
    assert main([*est, ok]) == 0
    capsys.readouterr()
    data = json.loads(cfg.read_text())
    harness = {
        "name": "h",
        "data": data["data"],
        "scale": data["judge"]["scale"],
        "judges": [data["judge"] | {"name": "a"}, data["judge"] | {"name": "b", "rubric": "X."}],
        "tests": {"format_vertical": {}},
        "tracking": {"enabled": False},
    }
    h = write(tmp_path / "harness.yaml", harness)
    before = stub.n_requests
    line = one_line_refusal(capsys, ["harness", str(h), "--quiet", "--require-certificate", ok])
    assert "no certificate for judge b" in line  # judge a is the certified config
    assert stub.n_requests == before


def test_mlflow_gets_the_bounds_and_the_decision_on_the_evaluate_run(tmp_path, monkeypatch, capsys):
    import mlflow

    monkeypatch.chdir(tmp_path)
    with StubServer(respond=oracle) as stub:
        csv = write_items(tmp_path, 12)
        cfg = stub_config(tmp_path, csv, stub.base_url, name="t", tracking={"enabled": True})
        assert main(["evaluate", str(cfg), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "runs").glob("t-*")
    code, out = certify(tmp_path, run_dir, LAX, capsys)
    assert code == 1  # 6/6 positives: bound (0.025)^(1/6) = 0.54 < 0.7
    run_id = json.loads((run_dir / "run.json").read_text())["mlflow_run_id"]
    logged = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_run(run_id)
    assert logged.data.tags["assay.certified"] == "refused"
    assert logged.data.metrics["certify_tpr_bound"] == pytest.approx(0.025 ** (1 / 6))
    assert logged.data.metrics["certify_admitted"] == 0.0


def test_policy_mistakes_are_one_line(run, tmp_path, capsys):
    run_dir, _, _ = run
    pol = write(tmp_path / "p.yaml", {"bars": {"recall": 0.8}})
    line = one_line_refusal(capsys, ["certify", str(run_dir), "--policy", str(pol)])
    assert "p.yaml: field 'bars': unknown metric 'recall'" in line
    failure = write(tmp_path / "f.yaml", {"bars": {"failure_precision": 0.5}})
    line = one_line_refusal(capsys, ["certify", str(run_dir), "--policy", str(failure)])
    assert "f.yaml: failure_precision counts failures below the run's threshold" in line
    good = write(tmp_path / "good.yaml", LAX)
    line = one_line_refusal(capsys, ["certify", str(tmp_path), "--policy", str(good)])
    assert "not a run directory" in line
    line = one_line_refusal(capsys, ["certify", str(run_dir), "--policy", str(tmp_path / "no")])
    assert "policy file not found" in line


def test_the_api_takes_a_policy_object_and_returns_the_certificate(run, tmp_path):
    import assay
    from assay.metrics import Policy

    run_dir, _, _ = run
    cert = assay.certify(run_dir, Policy(bars={"accuracy": 0.8}), workdir=tmp_path)
    assert cert.admitted and cert.results[0].successes == N - 1  # the unscored item: wrong
    assert cert.results[0].method == "clopper-pearson"


def test_a_data_set_changed_since_the_run_is_refused(run, tmp_path, capsys):
    """The certificate is of the items the run judged: read back, they must give the run's
    hash. One response edited in the data file since: refused, one line."""
    run_dir, _, _ = run
    (data,) = re.findall(r"path: (\S+items\.csv)", (run_dir / "config.yaml").read_text())
    original = Path(data).read_text()
    pol = write(tmp_path / "lax.yaml", LAX)
    try:  # the module's data file, edited for this test only
        Path(data).write_text(original.replace("Item 3 is blue.", "Item 3 is red."))
        line = one_line_refusal(capsys, ["certify", str(run_dir), "--policy", str(pol)])
    finally:
        Path(data).write_text(original)
    assert "differ from those the run judged" in line and "the data changed" in line
    assert not (tmp_path / "runs" / "certificates").exists() or not list(
        (tmp_path / "runs" / "certificates").glob("*/certificate.json")
    )


def test_an_edited_certificate_is_refused_before_any_call(run, tmp_path, capsys):
    """A refused certificate edited to admit: its decision against its own bounds is one line;
    edited consistently (bars lowered, results passed), it differs from the ledger's copy."""
    run_dir, cfg, stub = run
    code, _ = certify(tmp_path, run_dir, STRICT, capsys, "--out", str(tmp_path / "no.json"))
    assert code == 1
    cert = json.loads((tmp_path / "no.json").read_text())
    before = stub.n_requests
    flipped = write(tmp_path / "flipped.json", cert | {"decision": "admitted"})
    line = one_line_refusal(
        capsys, ["evaluate", str(cfg), "--quiet", "--require-certificate", str(flipped)]
    )
    assert "flipped.json: not a certificate" in line
    assert "the decision is admitted against its results: edited after it was issued?" in line
    lowest = {m: value_range(m)[0] for m in cert["policy"]["bars"]}  # a bar nothing fails
    lowered = {m: {"side": "at_least", "value": v} for m, v in lowest.items()}
    forged = cert | {
        "decision": "admitted",
        "policy": cert["policy"] | {"bars": lowered},
        "results": [r | {"bar": lowest[r["metric"]], "passed": True} for r in cert["results"]],
    }
    forged_file = write(tmp_path / "forged.json", forged)
    line = one_line_refusal(
        capsys, ["evaluate", str(cfg), "--quiet", "--require-certificate", str(forged_file)]
    )
    assert "forged.json: certificate " in line and "differs from the ledger's copy" in line
    assert stub.n_requests == before


def test_a_forged_certificate_is_refused_whatever_it_says(run, tmp_path, capsys, monkeypatch):
    """What decides is the ledger of the command's own runs folder, and there only a
    certificate signed by the key and issued by that ledger: edited consistently, pointed at
    its own folder, another judge's with the config hash swapped, copied in unsigned, or
    issued by another ledger and copied in — each is refused before any call."""
    run_dir, cfg, stub = run
    assert certify(tmp_path, run_dir, STRICT, capsys, "--out", str(tmp_path / "a.json"))[0] == 1
    other_judge = fresh_run(tmp_path, cfg, range(200, 240), "b", rubric="Name a colour.")
    assert certify(tmp_path, other_judge, LAX, capsys, "--out", str(tmp_path / "b.json"))[0] == 0
    a, b = (json.loads((tmp_path / f"{x}.json").read_text()) for x in "ab")
    ledger = tmp_path / "runs" / "certificates"
    kept = ledger / a["certificate"] / "certificate.json"
    lax = write(tmp_path / "lax.yaml", LAX)
    before = stub.n_requests

    def require(path: Path) -> str:
        argv = ["evaluate", str(cfg), "--quiet", "--require-certificate", str(path)]
        return one_line_refusal(capsys, argv)

    # the refused certificate with its bars lowered and its results passed: consistent
    lowest = {m: value_range(m)[0] for m in a["policy"]["bars"]}  # a bar nothing fails
    lowered = {m: {"at_least": v} for m, v in lowest.items()}
    forged = a | {
        "decision": "admitted",
        "policy": a["policy"] | {"bars": lowered},
        "results": [r | {"bar": lowest[r["metric"]], "passed": True} for r in a["results"]],
    }
    assert "differs from the ledger's copy" in require(write(tmp_path / "forged.json", forged))
    # ... under a new id, its ledger field pointed at its own folder: not in this ledger
    own = tmp_path / "own" / "forged-1"
    own.mkdir(parents=True)
    pointed = write(
        own / "certificate.json", forged | {"certificate": "forged-1", "ledger": str(own)}
    )
    assert "certificate forged-1 is not in the ledger" in require(pointed)
    # ... written over the ledger's copy: the signature no longer matches, by file or policy
    write(kept, forged)
    assert "does not match its signature" in require(kept)
    assert "does not match its signature" in require(lax)
    # ... copied in unsigned
    write(kept, forged | {"signature": ""})
    assert "the certificate is not signed" in require(kept)
    # another judge's admitted certificate with this judge's config hash swapped in
    swapped = b | {"config_hash": a["config_hash"]}
    write(ledger / b["certificate"] / "certificate.json", swapped)
    assert "does not match its signature" in require(write(tmp_path / "swapped.json", swapped))
    write(ledger / b["certificate"] / "certificate.json", b)
    # a genuine certificate of this judge on these items, issued by another runs folder's
    # ledger — on this machine refused, the items consumed; on another machine with the same
    # key (its own records of the key), where they never were — and copied over this ledger's
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(run_dir, elsewhere / "runs" / run_dir.name)
    monkeypatch.chdir(elsewhere)
    argv = ["certify", str(elsewhere / "runs" / run_dir.name), "--policy", str(lax)]
    assert "were already consumed by certificate" in one_line_refusal(capsys, argv)
    with monkeypatch.context() as another_machine:
        another_machine.setenv("XDG_STATE_HOME", str(elsewhere / "state"))
        assert certify(elsewhere, elsewhere / "runs" / run_dir.name, LAX, capsys)[0] == 0
    monkeypatch.chdir(tmp_path)
    shutil.rmtree(kept.parent)
    shutil.copytree(elsewhere / "runs" / "certificates" / a["certificate"], kept.parent)
    assert "was issued by another ledger" in require(kept)
    assert "was issued by another ledger" in require(lax)
    assert stub.n_requests == before


def test_a_laxer_policy_does_not_admit_a_judge_for_a_stricter_use(run, tmp_path, capsys):
    """``--require-certificate POLICY``: the ledger must hold a certificate of the judge under
    bars at least as strict, at a confidence at least as high."""
    run_dir, cfg, stub = run
    assert certify(tmp_path, run_dir, LAX, capsys)[0] == 0  # tpr ≥ 0.7, tnr ≥ 0.7 at 95%
    capsys.readouterr()
    before = stub.n_requests

    def use(policy: dict) -> list[str]:
        path = write(tmp_path / f"{policy['name']}.yaml", policy)
        return ["evaluate", str(cfg), "--quiet", "--require-certificate", str(path)]

    assert main(use(LAX)) == 0
    assert main(use({"name": "weaker", "confidence": 0.9, "bars": {"tpr": 0.6}})) == 0
    capsys.readouterr()
    strict = {"name": "strict-use", "confidence": 0.95, "bars": {"tpr": 0.8, "tnr": 0.7}}
    line = one_line_refusal(capsys, use(strict))
    assert "admitted judge stub-judge under policy lax, which does not hold for" in line
    assert "its tpr bar ≥ 0.7 is laxer than strict-use's ≥ 0.8" in line
    surer = {"name": "surer", "confidence": 0.99, "bars": LAX["bars"]}
    assert "its confidence 0.95 is below surer's 0.99" in one_line_refusal(capsys, use(surer))
    more = {"name": "more", "bars": {**LAX["bars"], "accuracy": 0.5}}
    assert "it has no bar on accuracy" in one_line_refusal(capsys, use(more))
    assert stub.n_requests == before


@pytest.mark.parametrize(
    "respell",
    [
        pytest.param(lambda t: t + " ", id="trailing space"),
        pytest.param(str.upper, id="case"),
        pytest.param(lambda t: unicodedata.normalize("NFD", t), id="NFD"),
        pytest.param(lambda t: t.replace(" ", "  "), id="double spaces"),
        pytest.param(lambda t: t.replace("bleu", "bl\u200beu"), id="zero-width space"),
        pytest.param(lambda t: t.replace("bleu", "bl\u00adeu"), id="soft hyphen"),
        pytest.param(lambda t: "\ufeff" + t, id="leading byte-order mark"),
        pytest.param(lambda t: t.replace("café", "café\u2060\u200d"), id="joiners"),
        pytest.param(lambda t: t.replace("au", "a\u034fu\ufe0f"), id="CGJ and selector"),
        pytest.param(lambda t: t.replace("Item", "\u0399tem"), id="Greek capital iota for I"),
        pytest.param(lambda t: t.replace("bleu", "bl\u0435u"), id="Cyrillic e"),
        pytest.param(lambda t: t.replace("bleu", "b\u0399eu"), id="Greek capital iota for l"),
        pytest.param(lambda t: t.replace("Item", "ltem"), id="lowercase L for I"),
        pytest.param(
            lambda t: t.upper().replace("E", "\u0415").replace("A", "\u0391"),
            id="capitals, Cyrillic E and Greek A",
        ),
        pytest.param(lambda t: t.replace("café", "\u0441\u0430f\u0435\u0301"), id="Cyrillic c a e"),
        pytest.param(lambda t: t + "\x07", id="trailing BEL"),
        pytest.param(lambda t: t.replace("bleu", "bl\x7feu\x01"), id="DEL and SOH"),
        pytest.param(lambda t: t + "\ue000", id="private-use character"),
        pytest.param(lambda t: t.replace(" is ", " is\u2800"), id="braille blank"),
        pytest.param(lambda t: t.replace(" is ", " is\u3164"), id="Hangul filler for a space"),
        pytest.param(lambda t: t.replace(" ", "\uffa0"), id="halfwidth fillers for spaces"),
        pytest.param(lambda t: f"\x1b[1;31m{t}\x1b[0m", id="ANSI colours"),
        pytest.param(lambda t: f"\x1b]8;;http://x\x1b\\{t}\x1b]8;;\x1b\\", id="OSC 8 link"),
    ],
)
def test_the_same_items_respelled_are_still_consumed(run, tmp_path, capsys, respell):
    """The items are fingerprinted on their normalised text (invisible characters dropped,
    NFKC, case-folded, whitespace collapsed and stripped, look-alike letters folded — Unicode's
    confusables, UTS #39): respelled, they are the same 40 items, refused."""
    _, cfg, _ = run
    text = "Item {} is bleu café au lait."  # é composed (NFC)
    first = fresh_run(tmp_path, cfg, range(300, 340), "first", text=text.format)
    assert certify(tmp_path, first, LAX, capsys)[0] == 0
    again = fresh_run(
        tmp_path, cfg, range(300, 340), "again", text=lambda k: respell(text.format(k))
    )
    assert (
        json.loads((again / "run.json").read_text())["run_hash"]
        != json.loads((first / "run.json").read_text())["run_hash"]
    )  # other texts as read: another data set
    pol = write(tmp_path / "lax.yaml", LAX)
    line = one_line_refusal(capsys, ["certify", str(again), "--policy", str(pol)])
    assert "40 of these 40 items were already consumed by certificate" in line


def test_items_consumed_under_the_previous_rule_are_still_consumed(
    run, tmp_path, capsys, monkeypatch
):
    """A certificate issued before invisible characters were dropped recorded its items under
    the previous rule (invisible characters kept): those items with a zero-width space slipped
    in, and the same items verbatim, are still consumed."""
    from assay.decisions import _certify
    from assay.inputs._item_text import NORMALISED, normalised
    from assay.types import stable_hash

    _, cfg, _ = run
    text = "Item {} is bleu.".format
    first = fresh_run(tmp_path, cfg, range(300, 340), "first", text=text)
    with monkeypatch.context() as before:  # what certify wrote before
        before.setattr(_certify, "CONFUSABLES", NORMALISED)
        before.setattr(
            _certify,
            "used_keys",
            lambda it: [stable_hash(normalised(_certify_text(it), keep_invisible=True), n=32)],
        )
        assert certify(tmp_path, first, LAX, capsys)[0] == 0
    (cert,) = (tmp_path / "runs" / "certificates").glob("*/certificate.json")
    assert json.loads(cert.read_text())["fingerprint_rule"] == NORMALISED
    pol = write(tmp_path / "lax.yaml", LAX)
    for name, respell in (("hidden", "\u200b{}".format), ("verbatim", str)):
        again = fresh_run(
            tmp_path, cfg, range(300, 340), name, text=lambda k, r=respell: r(text(k))
        )
        line = one_line_refusal(capsys, ["certify", str(again), "--policy", str(pol)])
        assert "40 of these 40 items were already consumed by certificate" in line


def test_items_consumed_before_look_alikes_were_folded_are_still_consumed(
    run, tmp_path, capsys, monkeypatch
):
    """A certificate issued before look-alike letters were folded recorded its items under the
    rule before (:data:`VISIBLE`): those items verbatim, and with look-alikes of other scripts
    swapped in (a Greek Ι for I, a Cyrillic е for e), are still consumed — and items the
    certificate never saw are not."""
    from assay.decisions import _certify
    from assay.inputs._item_text import VISIBLE, normalised
    from assay.types import stable_hash

    _, cfg, _ = run
    text = "Item {} is bleu.".format
    first = fresh_run(tmp_path, cfg, range(300, 340), "first", text=text)
    with monkeypatch.context() as before:  # what certify wrote before
        before.setattr(_certify, "CONFUSABLES", VISIBLE)
        before.setattr(
            _certify, "used_keys", lambda it: [stable_hash(normalised(_certify_text(it)), n=32)]
        )
        assert certify(tmp_path, first, LAX, capsys)[0] == 0
    (cert,) = (tmp_path / "runs" / "certificates").glob("*/certificate.json")
    assert json.loads(cert.read_text())["fingerprint_rule"] == VISIBLE
    pol = write(tmp_path / "lax.yaml", LAX)
    for name, respell in (
        ("verbatim", str),
        ("look-alikes", lambda t: t.replace("Item", "\u0399tem").replace("bleu", "bl\u0435u")),
        ("capital-look-alikes", lambda t: t.upper().replace("E", "\u0395")),
    ):
        again = fresh_run(
            tmp_path, cfg, range(300, 340), name, text=lambda k, r=respell: r(text(k))
        )
        line = one_line_refusal(capsys, ["certify", str(again), "--policy", str(pol)])
        assert "40 of these 40 items were already consumed by certificate" in line
    other = fresh_run(tmp_path, cfg, range(400, 440), "other", text=text)
    assert (
        certify(tmp_path, other, {"name": "lax-other", "bars": {"accuracy": 0.5}}, capsys)[0] == 0
    )


def test_items_consumed_before_escape_sequences_were_dropped_are_still_consumed(
    run, tmp_path, capsys, monkeypatch
):
    """Certificates issued before a terminal's escape sequences were dropped whole recorded
    their items under the rule before (:data:`ESCAPES_KEPT`: an ESC dropped, ``[1m`` kept):
    items consumed then in colour are still consumed verbatim, and items consumed then without
    colour are still consumed in colour."""
    from assay.decisions import _certify
    from assay.inputs._item_text import ESCAPES_KEPT, _hashes, _seen_escapes_kept, _variants

    _, cfg, _ = run
    plain = "Item {} is bleu.".format

    def coloured(k: int) -> str:
        return f"\x1b[1m{plain(k)}\x1b[0m"

    def keys_then(it: Any) -> list[str]:  # what certify recorded under that rule
        return _hashes(_variants(_certify_text(it), _seen_escapes_kept)[1:4])

    consumed = [
        (range(300, 340), plain, LAX),
        (range(400, 440), coloured, {"name": "lax-other", "bars": {"accuracy": 0.5}}),
    ]
    with monkeypatch.context() as before:  # what certify wrote before
        before.setattr(_certify, "CONFUSABLES", ESCAPES_KEPT)
        before.setattr(_certify, "used_keys", keys_then)
        for ks, text, policy in consumed:
            first = fresh_run(tmp_path, cfg, ks, f"first-{ks[0]}", text=text)
            assert certify(tmp_path, first, policy, capsys)[0] == 0
    for cert in (tmp_path / "runs" / "certificates").glob("*/certificate.json"):
        assert json.loads(cert.read_text())["fingerprint_rule"] == ESCAPES_KEPT
    pol = write(tmp_path / "lax.yaml", LAX)
    for ks in (range(300, 340), range(400, 440)):  # in colour: the first in colour now
        again = fresh_run(tmp_path, cfg, ks, f"again-{ks[0]}", text=coloured)
        line = one_line_refusal(capsys, ["certify", str(again), "--policy", str(pol)])
        assert "40 of these 40 items were already consumed by certificate" in line


def _certify_text(item: Any) -> dict[str, Any]:
    return item.model_dump(mode="json", include={"request", "response", "transcript"})


def test_attempts_are_counted_and_each_takes_its_share_of_delta(run, tmp_path, capsys):
    """A judge refused and certified again on fresh items until it passes: under a policy of
    one attempt (the default) the second is refused, as is one past a planned budget; with
    ``attempts: 3`` each certificate says which attempt it is and its bounds are taken at
    δ / (3 × bars), so the three together hold at the policy's confidence."""
    from scipy.stats import binomtest

    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, STRICT, capsys)[0] == 1
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    line = one_line_refusal(
        capsys, ["certify", str(second), "--policy", str(write(tmp_path / "s.yaml", STRICT))]
    )
    assert "attempt 2 for judge stub-judge under policy strict: its error budget" in line
    # planning more attempts after the first spent the budget does not help
    replanned = write(tmp_path / "s3.yaml", STRICT | {"attempts": 3})
    assert "is spent" in one_line_refusal(
        capsys, ["certify", str(second), "--policy", str(replanned)]
    )
    assert len(list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))) == 1

    planned = {"name": "planned", "attempts": 3, "bars": {"tpr": 0.5, "tnr": 0.5}}
    for attempt, ks in enumerate((range(100, 120), range(120, 140), range(140, 160)), 1):
        batch = second if attempt == 1 else fresh_run(tmp_path, cfg, ks, f"batch{attempt}")
        capsys.readouterr()
        code, out = certify(tmp_path, batch, planned, capsys, "--json")
        assert code == 0
        cert = json.loads(out)
        assert cert["attempt"] == attempt and cert["delta_per_bar"] == pytest.approx(0.05 / 6)
        tpr = cert["results"][0]
        assert (tpr["successes"], tpr["n"]) == (10, 10)
        exact = binomtest(10, 10).proportion_ci(confidence_level=1 - 2 * 0.05 / 6, method="exact")
        assert tpr["bound"] == pytest.approx(exact.low)
    fourth = fresh_run(tmp_path, cfg, range(160, 180), "batch4")
    line = one_line_refusal(
        capsys, ["certify", str(fourth), "--policy", str(tmp_path / "planned.yaml")]
    )
    assert "attempt 4 for judge stub-judge under policy planned" in line


def test_an_unwritable_out_leaves_no_item_consumed(run, tmp_path, capsys):
    run_dir, _, _ = run
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    pol = write(tmp_path / "lax.yaml", LAX)
    argv = ["certify", str(run_dir), "--policy", str(pol), "--out", str(blocker / "cert.json")]
    assert "cannot write the certificate there" in one_line_refusal(capsys, argv)
    assert not list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))
    assert certify(tmp_path, run_dir, LAX, capsys, "--out", str(tmp_path / "ok.json"))[0] == 0


# -- the ledger's journal: what a certificate consumed and spent outlives its folder -------------


CERT = "certificate.json"
PLANNED = {"name": "planned", "attempts": 3, "bars": {"tpr": 0.5, "tnr": 0.5}}


def test_a_deleted_certificate_folder_frees_no_item_and_no_attempt(run, tmp_path, capsys):
    """Cleaning up old certificates (``rm -rf runs/certificates/<id>``) does not make their items
    new or give back the attempt's share of δ: the ledger's journal keeps both."""
    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, STRICT, capsys)[0] == 1
    ledger = tmp_path / "runs" / "certificates"
    (folder,) = [d for d in ledger.iterdir() if d.is_dir()]
    shutil.rmtree(folder)
    lax = str(write(tmp_path / "lax.yaml", LAX))
    line = one_line_refusal(capsys, ["certify", str(run_dir), "--policy", lax])
    assert "were already consumed by certificate" in line and folder.name in line
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    strict = str(write(tmp_path / "strict.yaml", STRICT))
    line = one_line_refusal(capsys, ["certify", str(second), "--policy", strict])
    assert "attempt 2 for judge stub-judge under policy strict" in line


def test_a_journal_edited_cut_or_removed_is_refused(run, tmp_path, capsys):
    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, PLANNED, capsys)[0] == 0
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    assert certify(tmp_path, second, PLANNED, capsys)[0] == 0
    third = fresh_run(tmp_path, cfg, range(120, 140), "third")
    path = tmp_path / "runs" / "certificates" / "journal.jsonl"
    written = path.read_text(encoding="utf-8")
    first, last = written.splitlines(keepends=True)
    argv = ["certify", str(third), "--policy", str(tmp_path / "planned.yaml")]
    record = json.loads(first)
    record["entry"]["item_fingerprints"] = []  # the first certificate's items set free
    path.write_text(json.dumps(record) + "\n" + last, encoding="utf-8")
    assert "line 1: not the line this ledger wrote there" in one_line_refusal(capsys, argv)
    path.write_text(last, encoding="utf-8")  # the first line removed
    assert "line 1: not the line this ledger wrote there" in one_line_refusal(capsys, argv)
    path.write_text(first, encoding="utf-8")  # the last line removed
    line = one_line_refusal(capsys, argv)
    assert "the journal holds 1 certificates, but this ledger recorded 2" in line
    path.unlink()
    assert "the ledger's journal is gone, but it held 2 certificates" in one_line_refusal(
        capsys, argv
    )
    path.write_text(written, encoding="utf-8")  # restored: the third attempt is the third
    code, out = certify(tmp_path, third, PLANNED, capsys, "--json")
    assert code == 0 and json.loads(out)["attempt"] == 3


def test_a_ledger_written_before_the_journal_adopts_its_certificates(run, tmp_path, capsys):
    from assay.decisions._ledger_journal import head_file

    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, STRICT, capsys)[0] == 1
    ledger = tmp_path / "runs" / "certificates"
    ledger_id = (ledger / "ledger-id").read_text(encoding="utf-8").strip()
    (ledger / "journal.jsonl").unlink()  # as an assay before the journal left it
    head_file(ledger_id).unlink()
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    assert certify(tmp_path, second, PLANNED, capsys)[0] == 0
    lines = (ledger / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["entry"]["decision"] for line in lines] == ["refused", "admitted"]
    folders = [d for d in ledger.iterdir() if d.is_dir()]
    (refused,) = [d for d in folders if json.loads((d / CERT).read_text())["decision"] == "refused"]
    shutil.rmtree(refused)  # adopted: its items stay consumed without it
    line = one_line_refusal(
        capsys, ["certify", str(run_dir), "--policy", str(write(tmp_path / "lax.yaml", LAX))]
    )
    assert "were already consumed by certificate" in line


def test_a_kill_while_the_journal_is_written_leaves_a_ledger_that_counts(run, tmp_path, capsys):
    """Killed half-way through a journal line, or between the line and its head beside the key:
    the next certify reads on — the torn line cut off and its certificate adopted from its
    folder, the lagging head moved — and the items stay consumed."""
    from assay.decisions._ledger_journal import head_file

    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, PLANNED, capsys)[0] == 0
    ledger = tmp_path / "runs" / "certificates"
    path = ledger / "journal.jsonl"
    written = path.read_text(encoding="utf-8")
    path.write_text(written[: len(written) // 2], encoding="utf-8")  # torn, no newline
    head = head_file((ledger / "ledger-id").read_text().strip())
    head.unlink()  # as if this machine had not seen it: only the torn line is in question
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    capsys.readouterr()
    code, out = certify(tmp_path, second, PLANNED, capsys, "--json")
    assert code == 0, out
    assert json.loads(out)["attempt"] == 2  # the first counted, from its folder
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    kept = head.read_text(encoding="utf-8")
    third = fresh_run(tmp_path, cfg, range(120, 140), "third")
    assert certify(tmp_path, third, PLANNED, capsys)[0] == 0
    head.write_text(kept, encoding="utf-8")  # killed after the line, before the head moved
    fourth = fresh_run(tmp_path, cfg, range(140, 160), "fourth")
    capsys.readouterr()
    line = one_line_refusal(
        capsys, ["certify", str(fourth), "--policy", str(tmp_path / "planned.yaml")]
    )
    assert "attempt 4 for judge stub-judge under policy planned" in line  # counted, not refused
    line = one_line_refusal(
        capsys, ["certify", str(run_dir), "--policy", str(write(tmp_path / "lax.yaml", LAX))]
    )
    assert "were already consumed by certificate" in line


@pytest.mark.parametrize(
    ("bound", "side", "bar", "shown"),
    [
        (0.746577, "at_least", 0.7466, "0.7465"),  # was "0.747": it seemed to clear the bar
        (0.7467, "at_least", 0.7466, "0.7467"),
        (0.7497, "at_least", 0.75, "0.749"),  # was "0.750" beside "≥ 0.75", NO
        (0.75, "at_least", 0.75, "0.750"),
        (-0.1904, "at_least", 0.6, "-0.191"),
        (0.1001, "at_most", 0.1, "0.101"),  # an upper bound is rounded up
        (0.1, "at_most", 0.1, "0.100"),
    ],
)
def test_a_printed_bound_clears_the_printed_bar_exactly_when_it_clears_the_bar(
    bound, side, bar, shown
):
    from assay.decisions._certify import bound_text
    from assay.metrics import MetricBound

    passed = bound >= bar if side == "at_least" else bound <= bar
    r = MetricBound(
        metric="tnr", point=0.8, bound=bound, side=side, bar=bar, passed=passed,
        method="clopper-pearson", n=100, successes=80,
    )  # fmt: skip
    assert bound_text(r) == shown
    printed = float(shown)
    assert (printed >= bar if side == "at_least" else printed <= bar) == passed


def test_one_item_repeated_under_new_ids_is_refused(run, tmp_path, capsys):
    """30 items, each four times under new ids (one copy re-cased): 120 rows, but 30 items'
    evidence — and copies of only the items a judge gets right would raise its bounds at will
    (60 of 60 bound TPR at 0.940 where the 15 items' own 15 of 15 give 0.782). Refused in one
    line naming a copy and its original, before anything is consumed."""
    _, cfg, _ = run
    rows = ["id,request,response,expected"]
    rows += [
        f"d{copy}_{k},What colour is item {k}?,{'ITEM' if copy == 3 else 'Item'} {k} is blue.,{k % 2}"
        for copy in range(4)
        for k in range(301, 331)
    ]
    csv = tmp_path / "repeated.csv"
    csv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    data = json.loads(cfg.read_text())
    data["name"], data["data"]["path"] = "repeated", str(csv)
    config = write(tmp_path / "repeated.yaml", data)
    assert main(["evaluate", str(config), "--quiet"]) == 0
    (repeated,) = (tmp_path / "runs").glob("repeated-*")
    capsys.readouterr()
    sure = write(tmp_path / "sure.yaml", {"name": "sure", "bars": {"tpr": 0.9, "tnr": 0.9}})
    line = one_line_refusal(capsys, ["certify", str(repeated), "--policy", str(sure)])
    assert "90 of these 120 items repeat the text of another under another id" in line
    assert "(item 'd1_301' is item 'd0_301' again)" in line
    assert not list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))


def test_a_renamed_judge_or_policy_is_the_same_attempt_count(run, tmp_path, capsys):
    """Refused once under the default single attempt, the same judge config under another name
    — or the same bars under another policy name — is the same judge tried again: refused as
    attempt 2 (each was admitted on a fresh count before)."""
    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, STRICT, capsys)[0] == 1
    again = json.loads(cfg.read_text())
    again["judge"]["name"] = "stub-judge-again"  # the same config hash: the name is not in it
    renamed = fresh_run(tmp_path, write(tmp_path / "again.yaml", again), range(100, 120), "renamed")
    line = one_line_refusal(
        capsys, ["certify", str(renamed), "--policy", str(write(tmp_path / "s.yaml", STRICT))]
    )
    assert "attempt 2 for judge stub-judge-again under policy strict" in line
    second = fresh_run(tmp_path, cfg, range(120, 140), "second")
    copy = write(tmp_path / "v2.yaml", {**STRICT, "name": "strict-v2", "attempts": 2})
    line = one_line_refusal(capsys, ["certify", str(second), "--policy", str(copy)])
    assert "attempt 2 for judge stub-judge under policy strict-v2" in line
    other_bars = {"name": "accurate", "bars": {"accuracy": 0.5}}
    assert certify(tmp_path, second, other_bars, capsys)[0] == 0  # another claim: its own count


def test_items_consumed_in_one_ledger_are_consumed_in_every_other(run, tmp_path, capsys):
    """The signing key keeps its own journal of every certificate it signed: the same items
    certified again in another runs folder — a new project, ``--output-dir`` elsewhere — are
    refused as consumed, naming the certificate where it is; and a judge refused in one ledger
    is on its second attempt in the other. A certificate's items consumed nowhere else are
    certified there as anywhere."""
    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, LAX, capsys)[0] == 0
    first = next((tmp_path / "runs" / "certificates").glob("*/certificate.json"))
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    copy = elsewhere / "runs" / run_dir.name
    shutil.copytree(run_dir, copy)
    pol = write(tmp_path / "lax.yaml", LAX)
    argv = ["certify", str(copy), "--policy", str(pol), "--output-dir", str(elsewhere / "runs")]
    line = one_line_refusal(capsys, argv)
    assert f"already consumed by certificate {first}" in line
    assert not list((elsewhere / "runs" / "certificates").glob("*/certificate.json"))

    strict = write(tmp_path / "strict.yaml", STRICT)
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    assert main(["certify", str(second), "--policy", str(strict)]) == 1  # refused by its bars
    third = fresh_run(tmp_path, cfg, range(120, 140), "third")
    moved = elsewhere / "runs" / third.name
    shutil.copytree(third, moved)
    capsys.readouterr()
    argv = ["certify", str(moved), "--policy", str(strict), "--output-dir", str(elsewhere / "runs")]
    assert "attempt 2 for judge stub-judge under policy strict" in one_line_refusal(capsys, argv)
    fourth = fresh_run(tmp_path, cfg, range(140, 160), "fourth")
    shutil.copytree(fourth, elsewhere / "runs" / fourth.name)
    other = {"name": "elsewhere", "bars": {"accuracy": 0.5}}
    argv = [
        "certify",
        str(elsewhere / "runs" / fourth.name),
        "--policy",
        str(write(tmp_path / "elsewhere.yaml", other)),
        "--output-dir",
        str(elsewhere / "runs"),
    ]
    assert main(argv) == 0


def test_the_signing_keys_journal_removed_is_refused(run, tmp_path, capsys):
    """The key's journal of the certificates it signed cannot be removed to free their items
    in another ledger: its head, kept with the key's records, says what it held."""
    from assay.decisions._ledger_journal import signed_folder

    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, LAX, capsys)[0] == 0
    (signed_folder() / "signed.jsonl").unlink()
    fresh = fresh_run(tmp_path, cfg, range(300, 320), "fresh")
    pol = write(
        tmp_path / "other.yaml", {"name": "other", "confidence": 0.85, "bars": {"tpr": 0.5}}
    )
    line = one_line_refusal(capsys, ["certify", str(fresh), "--policy", str(pol)])
    assert "journal of every certificate this signing key signed is gone, but it held 1" in line


def test_a_ledger_older_than_the_keys_journal_joins_it_even_when_refused(run, tmp_path, capsys):
    """A ledger whose certificates the key's journal never held (issued before it existed):
    the next certify in that ledger adds them, whatever it decides, and from then on their
    items are consumed in every other runs folder."""
    from assay.decisions._ledger_journal import SIGNED_ID, head_file, signed_folder

    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, LAX, capsys)[0] == 0
    (signed_folder() / "signed.jsonl").unlink()  # as before the key kept a journal
    head_file(SIGNED_ID).unlink()
    again = fresh_run(tmp_path, cfg, range(100, 120), "again")
    refused = ["certify", str(again), "--policy", str(write(tmp_path / "lax.yaml", LAX))]
    assert "attempt 2" in one_line_refusal(capsys, refused)  # refused, and the ledger joined
    elsewhere = tmp_path / "project"
    shutil.copytree(run_dir, elsewhere / "runs" / run_dir.name)
    other = write(tmp_path / "other.yaml", {"name": "o", "confidence": 0.85, "bars": {"tpr": 0.5}})
    argv = [
        "certify",
        str(elsewhere / "runs" / run_dir.name),
        "--policy",
        str(other),
        "--output-dir",
        str(elsewhere / "runs"),
    ]
    assert "were already consumed by certificate" in one_line_refusal(capsys, argv)


def test_a_kill_after_the_keys_line_leaves_the_items_consumed(run, tmp_path, capsys, monkeypatch):
    """Killed after the key's journal took the certificate's line and before its folder was
    written: the items are consumed — in another runs folder they are refused — and the same
    certificate, issued again in its own ledger, completes."""
    from assay.decisions import _certify

    run_dir, _, _ = run
    real = _certify.write_json

    def killed(path, data):
        if path.name == "certificate.json":
            raise KeyboardInterrupt
        real(path, data)

    lax = write(tmp_path / "lax.yaml", LAX)
    with monkeypatch.context() as kill:
        kill.setattr(_certify, "write_json", killed)
        assert main(["certify", str(run_dir), "--policy", str(lax)]) == 130
    capsys.readouterr()
    assert not list((tmp_path / "runs" / "certificates").glob("*/certificate.json"))
    elsewhere = tmp_path / "project"
    shutil.copytree(run_dir, elsewhere / "runs" / run_dir.name)
    argv = ["certify", str(elsewhere / "runs" / run_dir.name), "--policy", str(lax)]
    argv += ["--output-dir", str(elsewhere / "runs")]
    assert "were already consumed by certificate" in one_line_refusal(capsys, argv)
    assert certify(tmp_path, run_dir, LAX, capsys)[0] == 0  # the same certificate completes


@pytest.mark.parametrize(
    "spelt",
    [
        pytest.param({"positive": "True"}, id="the positive class written out"),
        pytest.param({"bars": {"tpr": 0.949, "kappa_categorical": 0.9}}, id="a bar a hair laxer"),
        pytest.param({"bars": {"tpr": 0.9}}, id="one of its bars, laxer"),
        pytest.param({"confidence": 0.9499999}, id="a confidence a hair lower"),
    ],
)
def test_the_same_claim_spelt_otherwise_is_the_same_attempt_count(run, tmp_path, capsys, spelt):
    """Refused under ``strict``, the judge tried again under a policy whose admission the
    refused one's would have implied — the same event written out, a bar a hair laxer, fewer
    bars, a hair less confidence — is on its second attempt: refused (each was attempt 1)."""
    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, STRICT, capsys)[0] == 1
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    policy = write(tmp_path / "again.yaml", {**STRICT, "name": "again", **spelt})
    line = one_line_refusal(capsys, ["certify", str(second), "--policy", str(policy)])
    assert "attempt 2 for judge stub-judge under policy again" in line


def test_another_event_or_other_metrics_are_a_count_of_their_own(run, tmp_path, capsys):
    """Refused under ``strict``, the judge certified on another positive class, or on metrics
    ``strict`` does not name, is on a count of its own (neither admission admits the other)."""
    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, STRICT, capsys)[0] == 1
    second = fresh_run(tmp_path, cfg, range(100, 120), "second")
    negatives = {**STRICT, "name": "negatives", "positive": "False"}
    code, out = certify(tmp_path, second, negatives, capsys)
    assert code in (0, 1) and "attempt 2" not in out
    third = fresh_run(tmp_path, cfg, range(120, 140), "third")
    others = {**STRICT, "name": "others", "bars": {"tnr": 0.5}}
    code, out = certify(tmp_path, third, others, capsys)
    assert code in (0, 1) and "attempt 2" not in out


TPR_90 = {"name": "A", "confidence": 0.95, "bars": {"tpr": 0.9}}
TPR_91 = {"name": "B", "confidence": 0.95, "bars": {"tpr": 0.91}}
TPR_90_PLUS = {"name": "A-plus", "confidence": 0.95, "bars": {"tpr": 0.9, "tnr": 0.0}}


def clopper_pearson_all_right(n: int, delta: float) -> float:
    """The one-sided Clopper–Pearson lower bound of n successes in n trials at 1 − δ."""
    from scipy.stats import beta

    return float(beta.ppf(delta, n, 1))


@pytest.mark.parametrize(
    ("first", "then"),
    [
        pytest.param(TPR_90, TPR_91, id="refused, then a bar a hair stricter"),
        pytest.param(TPR_90, TPR_90_PLUS, id="refused, then the same bar and one more"),
        pytest.param(TPR_91, TPR_90, id="refused, then a bar a hair laxer"),
    ],
)
def test_a_claim_comparable_to_a_refused_one_is_its_second_attempt(
    run, tmp_path, capsys, first, then
):
    """Refused under a claim, the judge tried again on fresh items under one whose admission
    would admit it (bars as strict or stricter, more bars, more confidence) — or one it would
    have admitted — is on its second attempt: refused before anything is written. Each was
    attempt 1 before, and the stricter certificate then admitted the judge at the gate for the
    refused claim: that use tried twice at its whole δ."""
    run_dir, cfg, _ = run
    code, out = certify(tmp_path, run_dir, first, capsys, "--json")
    assert code == 1, out
    (tpr,) = [r for r in json.loads(out)["results"] if r["metric"] == "tpr"]
    assert tpr["bound"] == pytest.approx(clopper_pearson_all_right(20, 0.05))  # 20/20 positives
    # on 40 positives each of these claims would pass its bars (tpr at δ/2 at worst): only the
    # count refuses it
    assert clopper_pearson_all_right(40, 0.05 / 2) > 0.91
    second = fresh_run(tmp_path, cfg, range(100, 180), "second")
    folders = set((tmp_path / "runs" / "certificates").glob("*/certificate.json"))
    policy = write(tmp_path / "then.yaml", then)
    line = one_line_refusal(capsys, ["certify", str(second), "--policy", str(policy)])
    assert f"attempt 2 for judge stub-judge under policy {then['name']}: its error" in line
    assert set((tmp_path / "runs" / "certificates").glob("*/certificate.json")) == folders


def test_the_gate_refuses_a_use_tried_again_under_a_stricter_claim(
    run, tmp_path, capsys, monkeypatch
):
    """A ledger written before a stricter claim counted a refused laxer one (the refusal under
    ``tpr ≥ 0.9``, then an admission under ``tpr ≥ 0.91`` as attempt 1 of its own): the gate
    admits neither ``tpr ≥ 0.9`` through the stricter certificate (the two took twice its δ)
    nor ``tpr ≥ 0.8``; it still admits ``tpr ≥ 0.91``, whose one attempt it was."""
    from assay.decisions import _certify

    run_dir, cfg, _ = run
    assert certify(tmp_path, run_dir, TPR_90, capsys)[0] == 1
    second = fresh_run(tmp_path, cfg, range(100, 180), "second")

    def by_stricter_claims_only(entry, policy, event):  # how attempts were counted before
        bars = (entry.get("policy") or {}).get("bars") or {}
        mine = policy.model_dump(mode="json")["bars"]
        stricter = all(
            side == "at_least" and bars.get(metric, {}).get(side, -1) >= value
            for metric, bar in mine.items()
            for side, value in bar.items()
        )
        return entry["policy"]["name"] == policy.name or (entry.get("event") == event and stricter)

    capsys.readouterr()
    with monkeypatch.context() as before:
        before.setattr(_certify, "_same_policy", by_stricter_claims_only)
        code, out = certify(tmp_path, second, TPR_91, capsys, "--json")
    assert code == 0, out
    cert = json.loads(out)
    assert cert["attempt"] == 1
    assert cert["results"][0]["bound"] == pytest.approx(clopper_pearson_all_right(40, 0.05))
    laxer = {**TPR_90, "name": "laxer", "bars": {"tpr": 0.8}}
    for use in (TPR_90, laxer):
        argv = ["evaluate", str(cfg), "--require-certificate", str(write(tmp_path / "u.yaml", use))]
        line = one_line_refusal(capsys, argv)
        assert "2 certificates of judge stub-judge" in line and "δ = 0.05" in line, line
    argv = ["evaluate", str(cfg), "--require-certificate", str(write(tmp_path / "b.yaml", TPR_91))]
    assert main([*argv, "--quiet"]) == 0


def test_the_gate_refuses_a_use_two_claims_counted_apart_both_admit(run, tmp_path, capsys):
    """Refused under ``tpr ≥ 0.9, tnr ≥ 0.5``, the judge admitted under ``tpr ≥ 0.9, fpr ≤ 0.1``
    (neither claim admits the other: a count of its own) is admitted for that claim's use, not
    for ``tpr ≥ 0.9``, which both certificates would admit: they took twice its δ."""
    run_dir, cfg, _ = run
    with_tnr = {"name": "with-tnr", "bars": {"tpr": 0.9, "tnr": 0.5}}
    assert certify(tmp_path, run_dir, with_tnr, capsys)[0] == 1
    second = fresh_run(tmp_path, cfg, range(100, 180), "second")
    capsys.readouterr()
    with_fpr = {"name": "with-fpr", "bars": {"tpr": 0.9, "fpr": 0.1}}
    code, out = certify(tmp_path, second, with_fpr, capsys, "--json")
    assert code == 0, out
    cert = json.loads(out)
    assert cert["attempt"] == 1
    tpr, fpr = cert["results"]
    assert tpr["bound"] == pytest.approx(clopper_pearson_all_right(40, 0.05 / 2))
    assert fpr["bound"] == pytest.approx(1 - clopper_pearson_all_right(40, 0.05 / 2))
    use = write(tmp_path / "use.yaml", TPR_90)
    line = one_line_refusal(capsys, ["evaluate", str(cfg), "--require-certificate", str(use)])
    assert "2 certificates of judge stub-judge" in line and "δ = 0.05" in line, line
    own = write(tmp_path / "own.yaml", with_fpr)
    assert main(["evaluate", str(cfg), "--quiet", "--require-certificate", str(own)]) == 0
