"""Reading human annotations of ToolEmu trajectories; every bad input is a one-line DataError."""

from __future__ import annotations

import json

import pytest

from assay.emulation._annotations import load_annotations
from assay.errors import DataError
from assay.types import Item

TRAJECTORIES = [Item(id=f"official_{i}", meta={"line": i}) for i in range(4)]
HEADER = "trajectory,annotator,safety,helpfulness,emulator_issues,true_failure\n"


def write(tmp_path, text, name="ann.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_rows_ids_aliases_and_derived_true_failure(tmp_path):
    path = write(
        tmp_path,
        "Trajectory, Annotator ,SAFETY,helpfulness,emulator_issues,true_failure,note\n"
        "official_0,ann_a,1,2,none,,derived: safety 1 -> true failure\n"
        "line:1,ann_a,3,0,Critical_Issues,no,\n"
        "\n"
        "official_0,ann_b,2,3,minor,yes,given wins over the derivation\n"
        "official_3,ann_b,0,1,no_issues,,\n",
    )
    ann = load_annotations(path, TRAJECTORIES)
    assert ann.path == path.resolve()
    assert ann.annotators == ("ann_a", "ann_b")
    assert ann.annotated == ("official_0", "official_1", "official_3")
    first, second, third, fourth = ann.rows
    assert (first.trajectory, first.safety, first.true_failure, first.true_failure_given) == (
        "official_0",
        1,
        True,
        False,
    )
    assert (second.trajectory, second.emulator_issues, second.true_failure) == (
        "official_1",
        "critical",
        False,
    )
    assert (third.row, third.true_failure, third.true_failure_given) == (3, True, True)
    assert (fourth.emulator_issues, fourth.true_failure) == ("none", True)
    assert ann.table("safety") == {
        "official_0": {"ann_a": 1, "ann_b": 2},
        "official_1": {"ann_a": 3},
        "official_3": {"ann_b": 0},
    }


def test_jsonl_rows(tmp_path):
    rows = [
        {
            "trajectory": "official_2",
            "annotator": "x",
            "safety": 3,
            "helpfulness": 2.0,
            "emulator_issues": "minor",
            "true_failure": False,
        },
        {
            "trajectory": "line:0",
            "annotator": "x",
            "safety": "0",
            "helpfulness": 1,
            "emulator_issues": "none",
        },
    ]
    path = write(tmp_path, "\n".join(json.dumps(r) for r in rows) + "\n", "ann.jsonl")
    ann = load_annotations(path, TRAJECTORIES)
    assert [(a.trajectory, a.helpfulness, a.true_failure) for a in ann.rows] == [
        ("official_2", 2, False),
        ("official_0", 1, True),
    ]


BAD_CSV = [
    # (body after the header, row, field, words the message must contain)
    (
        "official_9,a,1,1,none,\n",
        1,
        "trajectory",
        ["unknown trajectory 'official_9'", "official_0"],
    ),
    ("line:7,a,1,1,none,\n", 1, "trajectory", ["unknown trajectory 'line:7'", "line:0..3"]),
    ("official_0,a,1,1,none,\nofficial_1,a,4,1,none,\n", 2, "safety", ["score 4 is outside 0–3"]),
    ("official_0,a,1,-1,none,\n", 1, "helpfulness", ["score -1 is outside 0–3"]),
    ("official_0,a,high,1,none,\n", 1, "safety", ["'high' is not a score 0–3"]),
    ("official_0,a,1.5,1,none,\n", 1, "safety", ["'1.5' is not a score 0–3"]),
    ("official_0,a,,1,none,\n", 1, "safety", ["empty value"]),
    ("official_0,a,1,1,severe,\n", 1, "emulator_issues", ["unknown emulator-issue label 'severe'"]),
    ("official_0,a,1,1,none,maybe\n", 1, "true_failure", ["'maybe' is not yes or no"]),
    ("official_0, ,1,1,none,\n", 1, "annotator", ["empty value"]),
    (
        "official_0,a,1,1,none,\nofficial_1,a,1,1,none,\nline:0,a,2,2,none,\n",
        3,
        "annotator",
        ["duplicate annotation of 'official_0' by 'a' (first in row 1)"],
    ),
]


@pytest.mark.parametrize(("body", "row", "field", "words"), BAD_CSV)
def test_bad_rows_name_file_row_and_field(tmp_path, body, row, field, words):
    path = write(tmp_path, HEADER + body)
    with pytest.raises(DataError) as info:
        load_annotations(path, TRAJECTORIES)
    err = info.value
    assert (err.path, err.row, err.field) == (path.resolve(), row, field)
    message = str(err)
    assert "\n" not in message
    assert message.startswith(f"{path.resolve()}, row {row}, field '{field}': ")
    for word in words:
        assert word in message


def test_missing_columns_in_the_header(tmp_path):
    path = write(tmp_path, "trajectory,annotator,safety,emulator_issues\nofficial_0,a,1,none\n")
    with pytest.raises(DataError) as info:
        load_annotations(path, TRAJECTORIES)
    assert info.value.field == "helpfulness"
    assert "missing column 'helpfulness' in the header" in str(info.value)
    assert str(path.resolve()) in str(info.value)


def test_missing_key_in_a_jsonl_row(tmp_path):
    good = {"trajectory": "official_0", "annotator": "a", "safety": 1, "helpfulness": 1}
    lines = [json.dumps({**good, "emulator_issues": "none"}), json.dumps(good)]
    path = write(tmp_path, "\n".join(lines) + "\n", "ann.jsonl")
    with pytest.raises(DataError) as info:
        load_annotations(path, TRAJECTORIES)
    assert (info.value.row, info.value.field) == (2, "emulator_issues")


def test_unknown_id_suggests_a_close_one(tmp_path):
    path = write(tmp_path, HEADER + "oficial_1,a,1,1,none,\n")
    with pytest.raises(DataError, match="did you mean 'official_1'"):
        load_annotations(path, TRAJECTORIES)


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("ann.csv", "", "no header row"),
        ("ann.csv", HEADER, "no annotation rows"),
        ("ann.xlsx", HEADER, "unsupported annotation file type '.xlsx'"),
        ("ann.jsonl", '["not", "an", "object"]\n', "not a JSON object"),
    ],
)
def test_unusable_files(tmp_path, name, text, words):
    with pytest.raises(DataError, match=words):
        load_annotations(write(tmp_path, text, name), TRAJECTORIES)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        load_annotations(tmp_path / "nope.csv", TRAJECTORIES)
