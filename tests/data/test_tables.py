"""Tests for assay.data.load_table: CSV/JSON/JSONL/Parquet files, column maps and bad input."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from assay.data import ColumnMap, load_table
from assay.errors import ConfigError, DataError
from assay.scale import Scale
from assay.types import Item

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "data"
SHARED = Path(__file__).resolve().parents[2] / "examples" / "data"
BINARY = Scale(kind="binary")

ANSWERS = ColumnMap(id="qid", request="question", response="answer", expected="grade")


def test_csv_rows_become_items_with_text_kept_as_written():
    items = load_table(str(FIXTURES / "answers.csv"), columns=ANSWERS, scale=BINARY)
    assert [i.id for i in items] == ["q1", "q2", "q3", "007", "q5"]  # "007" keeps its zeros
    by_id = {i.id: i for i in items}
    assert by_id["q1"].request == "What is the boiling point of water at sea level?"
    assert by_id["q1"].response == "100 degrees Celsius."
    assert by_id["q2"].response == "N/A"  # not read as a missing value
    assert by_id["q3"].response == ""  # an empty cell is empty text, not NaN
    assert by_id["007"].response == "4"
    assert [i.expected for i in items] == [1, 0, 0, 1, None]  # blank label → None
    assert by_id["q1"].meta == {"topic": "physics", "difficulty": 0.2}
    assert by_id["q2"].meta == {"topic": "art", "difficulty": None}  # NaN → None


def test_jsonl_labels_are_coerced_through_the_scale_and_meta_keeps_json_types():
    scale = Scale(kind="binary", labels=["fail", "pass"])
    columns = ColumnMap(request="question", response="answer", expected="grade")
    items = load_table(str(FIXTURES / "answers.jsonl"), columns=columns, scale=scale)
    assert [i.expected for i in items] == [1, 1, 0]
    assert items[0].meta == {
        "tags": ["geography", "europe"],
        "extra": {"source": "quiz", "round": 1},
    }
    # no id column: the id is the content hash, stable across loads
    assert items[0].id == Item.content_id("What is the capital of France?", "Paris.")
    again = load_table(str(FIXTURES / "answers.jsonl"), columns=columns, scale=scale)
    assert [i.id for i in again] == [i.id for i in items]


def test_json_array_with_an_ordinal_scale():
    columns = ColumnMap(id="essay_id", request="prompt", response="text", expected="score")
    items = load_table(str(FIXTURES / "essays.json"), columns=columns, scale=Scale.parse("1-6"))
    assert [(i.id, i.expected) for i in items] == [("e1", 3), ("e2", 1), ("e3", 5)]
    assert items[1].response == "Summer."
    assert items[0].meta == {}


def test_parquet_file_written_with_pyarrow(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table(
        {
            "n": [10, 11, 12],
            "request": ["Say hi.", "Say bye.", "Say thanks."],
            "response": ["Hi!", "", "Thanks!"],
            "expected": [1, 0, 1],
            "tags": [["a"], [], ["b", "c"]],
            "weight": [0.5, 1.0, 2.0],
        }
    )
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path)
    items = load_table(str(path), columns=ColumnMap(id="n"), scale=BINARY)
    assert [i.id for i in items] == ["10", "11", "12"]
    assert items[1].response == ""
    assert [i.expected for i in items] == [1, 0, 1]
    assert items[2].meta == {"tags": ["b", "c"], "weight": 2.0}


def _null_response_tables(tmp_path: Path) -> dict[str, Path]:
    """The same second row without a response, as each format spells it."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"id": "a", "request": "Say hi.", "response": "Hi!"}, {"id": "b", "request": "Bye?"}]
    lines = tmp_path / "missing_key.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    nulls = tmp_path / "null.json"
    nulls.write_text(json.dumps([rows[0], {**rows[1], "response": None}]))
    parquet = tmp_path / "null.parquet"
    pq.write_table(pa.table({k: [rows[0][k], rows[1].get(k)] for k in rows[0]}), parquet)
    return {"jsonl": lines, "json": nulls, "parquet": parquet}


def test_a_response_the_table_lacks_is_refused_not_judged_as_empty(tmp_path):
    """A null or a missing key is no text: judged as "", a response that does not exist would
    get a verdict. The error names the file, the row and the field; "" itself is read as an
    empty response (the Parquet test above)."""
    for path in _null_response_tables(tmp_path).values():
        with pytest.raises(DataError) as err:
            load_table(str(path), columns=ColumnMap(expected=None))
        assert str(err.value) == (
            f"{path}, row 2, field 'response': no value (null, or the key is missing); "
            'an empty text is written ""'
        )


def test_format_argument_overrides_the_extension(tmp_path):
    path = tmp_path / "rows.txt"
    shutil.copy(FIXTURES / "answers.jsonl", path)
    columns = ColumnMap(request="question", response="answer", expected=None)
    items = load_table(str(path), columns=columns, format="jsonl")
    assert len(items) == 3 and all(i.expected is None for i in items)
    with pytest.raises(DataError) as err:  # the Python API's own option is suggested
        load_table(str(path), columns=columns)
    assert str(err.value) == (
        f"{path}: cannot tell the table format from the extension '.txt': rename the file to "
        "end in .csv, .json, .jsonl, .ndjson, .parquet, .pq or .tsv, or pass format= (csv, "
        "json, jsonl, parquet or tsv)"
    )
    bare = tmp_path / "rows"
    shutil.copy(FIXTURES / "answers.jsonl", bare)
    with pytest.raises(DataError, match="cannot tell the table format: the file has no ext"):
        load_table(str(bare), columns=columns)
    with pytest.raises(ConfigError, match="unknown table format"):
        load_table(str(path), columns=columns, format="xlsx")


def test_tsv_file(tmp_path):
    path = tmp_path / "rows.tsv"
    path.write_text("request\tresponse\texpected\nSay hi.\tHi, there!\t1\n", encoding="utf-8")
    items = load_table(str(path), columns=ColumnMap(), scale=BINARY)
    assert [(i.request, i.response, i.expected) for i in items] == [("Say hi.", "Hi, there!", 1)]


def test_limit_takes_the_first_rows():
    items = load_table(str(FIXTURES / "answers.csv"), columns=ANSWERS, scale=BINARY, limit=2)
    assert [i.id for i in items] == ["q1", "q2"]
    with pytest.raises(ConfigError, match="limit"):
        load_table(str(FIXTURES / "answers.csv"), columns=ANSWERS, limit=0)


def test_unmapped_fields_and_no_files_written_outside_the_cache_dir(tmp_path, monkeypatch):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    columns = ColumnMap(request="question", response=None, expected=None)
    items = load_table(str(FIXTURES / "answers.csv"), columns=columns)
    assert items[0].response == "" and items[0].expected is None
    assert set(items[0].meta) == {"qid", "answer", "grade", "topic", "difficulty"}
    assert list(work.iterdir()) == []  # nothing written relative to the CWD
    cache = tmp_path / "cache"
    assert load_table(str(FIXTURES / "answers.csv"), columns=columns, cache_dir=cache) == items
    # a CSV is read with pandas directly (nothing to cache); other formats use the caller's cache
    assert list(work.iterdir()) == []


def test_column_map_forbids_unknown_keys():
    with pytest.raises(ValueError):
        ColumnMap(request="q", label="x")  # type: ignore[call-arg]


# -- bad input ------------------------------------------------------------------------------
def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nowhere.csv"
    with pytest.raises(DataError, match="file not found") as err:
        load_table(str(path), columns=ColumnMap())
    assert str(path) in str(err.value)


def test_misnamed_column_names_file_field_and_suggests_the_closest():
    with pytest.raises(DataError) as err:
        load_table(str(FIXTURES / "answers.csv"), columns=ColumnMap(request="questoin"))
    message = str(err.value)
    assert "answers.csv" in message
    assert "field 'questoin'" in message
    assert "did you mean 'question'?" in message
    assert "available columns: qid, question, answer, grade, topic, difficulty" in message
    assert err.value.field == "questoin"


def test_off_scale_label_names_file_row_and_field():
    with pytest.raises(DataError) as err:
        load_table(str(FIXTURES / "off_scale.csv"), columns=ColumnMap(), scale=BINARY)
    message = str(err.value)
    assert "off_scale.csv" in message and "row 3" in message and "field 'expected'" in message
    assert "7 is not on the binary 0/1 scale" in message
    assert err.value.row == 3


def test_text_label_without_a_scale_asks_for_one():
    columns = ColumnMap(request="question", response="answer", expected="grade")
    with pytest.raises(DataError, match=r"row 1, field 'grade'.*pass a scale"):
        load_table(str(FIXTURES / "answers.jsonl"), columns=columns)


def test_header_only_and_zero_byte_files_are_empty_data(tmp_path):
    with pytest.raises(DataError, match=r"header_only\.csv: no data rows"):
        load_table(str(FIXTURES / "header_only.csv"), columns=ColumnMap())
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match=r"empty\.csv: the file is empty"):
        load_table(str(empty), columns=ColumnMap())


def test_malformed_jsonl_line_names_file_and_row():
    with pytest.raises(DataError) as err:
        load_table(str(FIXTURES / "malformed.jsonl"), columns=ColumnMap())
    assert "malformed.jsonl, row 3: line 3 is not valid JSON" in str(err.value)


def test_duplicate_ids_name_the_row():
    with pytest.raises(DataError) as err:
        load_table(str(FIXTURES / "duplicate_ids.csv"), columns=ColumnMap(id="id"))
    message = str(err.value)
    assert "duplicate_ids.csv, row 3, field 'id'" in message and "first seen in row 1" in message


def test_duplicate_content_without_an_id_column_is_reported(tmp_path):
    path = tmp_path / "dupes.csv"
    path.write_text("request,response\nSay hi.,Hi!\nSay hi.,Hi!\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 2.*map an id column"):
        load_table(str(path), columns=ColumnMap(expected=None))


def test_hub_name_offline_is_a_data_error(monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="hub could not be reached") as err:
        load_table("someone/some-dataset", columns=ColumnMap())
    assert str(err.value).startswith("someone/some-dataset: ")


def test_missing_path_with_a_data_extension_is_not_taken_for_a_hub_name():
    with pytest.raises(DataError, match="file not found"):
        load_table("no-such-dir/rows.parquet", columns=ColumnMap())


# -- the real shared data sets --------------------------------------------------------------
def _shared(relative: str) -> Path:
    path = SHARED / relative
    assert path.is_file(), f"example data file {path} is missing from the repository"
    return path


def test_harmbench_human_labels():
    path = _shared("jrh/harmbench/harmbench.csv")
    columns = ColumnMap(
        id="idx", request="test_case", response="generation", expected="human_consensus"
    )
    items = load_table(str(path), columns=columns, scale=BINARY)
    assert len(items) == 596
    assert Counter(i.expected for i in items) == {0: 326, 1: 270}
    assert len({i.id for i in items}) == 596 and items[0].id == "0"
    assert {"behavior_id", "SemanticCategory", "human_mean", "human_sum"} <= set(items[0].meta)
    assert all(i.request and i.response for i in items)


def test_persuade_essays_on_a_six_point_scale():
    path = _shared("jrh/persuade/persuade_sample.csv")
    columns = ColumnMap(
        id="essay_id", request="assignment", response="full_text", expected="holistic_essay_score"
    )
    items = load_table(str(path), columns=columns, scale=Scale.parse("1-6"))
    assert len(items) == 93
    assert Counter(i.expected for i in items) == {1: 3, 2: 25, 3: 34, 4: 20, 5: 9, 6: 2}
    assert all(len(i.response) > 100 for i in items)
    assert "prompt_name" in items[0].meta


def test_a_hub_data_set_is_read_into_a_file_the_run_streams(tmp_path, monkeypatch):
    """A hub data set (here an Arrow data set built in place of the download) is not a file to
    key an items cache by: its items go, a batch of rows at a time, to a spool file the run
    reads them from, which goes with their stream — never a list of every item."""
    import gc

    datasets = pytest.importorskip("datasets")
    import assay.data._reading as reading
    from assay.inputs import DataConfig, data_fingerprint, stream_items

    rows = [
        {"id": f"r{i:04d}", "q": f"Question {i}?", "a": f"Answer {i}.", "label": i % 2}
        for i in range(2500)  # over two of the reader's batches
    ]
    asked = []
    monkeypatch.setattr(reading, "_load_hub",
                        lambda name, split, cache: asked.append((name, split)) or datasets.Dataset.from_list(rows))  # fmt: skip
    columns = {"id": "id", "request": "q", "response": "a", "expected": "label"}
    config = DataConfig.model_validate({"path": "someone/some-dataset", "columns": columns})
    scale = Scale(kind="binary")
    whole = load_table("someone/some-dataset", columns=ColumnMap(**columns), scale=scale)
    stream = stream_items(config, scale, cache_dir=tmp_path / "hf")
    (spool,) = (tmp_path / "items").iterdir()  # no items cache kept for it, the spool only
    assert spool.name.startswith("table-")
    streamed = list(stream)
    assert [it.model_dump() for it in streamed] == [it.model_dump() for it in whole]
    assert [it.expected for it in streamed[:4]] == [0, 1, 0, 1]
    assert data_fingerprint(stream) == data_fingerprint(whole)
    assert asked == [("someone/some-dataset", "train")] * 2
    del stream, streamed
    gc.collect()
    assert not spool.exists()


# -- a row with another number of fields than the header -----------------------------------------
ROWS = ColumnMap(id="id")


@pytest.mark.parametrize("sep", [",", "\t"])
@pytest.mark.parametrize(
    ("rows", "says"),
    [
        # pandas padded a short row with empty cells: judged with an empty response
        (["x1,q1,a1,1", "x2,q2"], "row 2, field 'response': line 3 has 2 fields where the "
         "header has 4 (response and expected are missing)"),
        # also when the missing cell is a text column's (kept as written: "" either way)
        (["x1,q1,a1,1", "x2,q2,a2"], "row 2, field 'expected': line 3 has 3 fields where the "
         "header has 4 (expected is missing)"),
        # an over-long first row: pandas took its first field for an index, and read every
        # row one column to the left (the ids were the requests)
        (["x1,q1,a1,1,", "x2,q2,a2,0,"], "row 1: line 2 has 5 fields where the header has 4"),
        (["x1,q1,a1,1", "x2,q2,a2,0,extra", "x3,q3,a3,1"],
         "row 2: line 3 has 5 fields where the header has 4"),
    ],
)  # fmt: skip
def test_a_row_with_other_than_the_headers_number_of_fields_is_refused(tmp_path, sep, rows, says):
    path = tmp_path / ("t.csv" if sep == "," else "t.tsv")
    lines = ["id,request,response,expected", *rows]
    path.write_text("".join(line.replace(",", sep) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_table(str(path), columns=ROWS, missing_expected="keep")
    assert str(err.value).startswith(f"{path}, {says}"), str(err.value)
    assert "\n" not in str(err.value)


def test_a_short_row_is_found_past_multi_line_cells_blank_lines_and_empty_cells(tmp_path):
    """The line named is the row's first; blank lines are not rows (pandas skips them) and
    empty cells are fields."""
    path = tmp_path / "t.csv"
    path.write_text(
        'id,request,response\nx1,"two\nlines",a1\n\n   \nx2,,\nx3,q3,""\nx4,q4\n',
        encoding="utf-8",
    )
    with pytest.raises(DataError) as err:
        load_table(str(path), columns=ColumnMap(id="id", expected=None))
    assert str(err.value).startswith(
        f"{path}, row 4, field 'response': line 8 has 2 fields where the header has 3"
    )


def test_a_table_whose_last_column_has_empty_cells_reads_as_before(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,response,expected\nx1,a1,\nx2,a2,1\nx3,"",\n', encoding="utf-8")
    items = load_table(str(path), columns=ColumnMap(id="id", request=None))
    assert [(i.id, i.response, i.expected) for i in items] == [
        ("x1", "a1", None),
        ("x2", "a2", 1),
        ("x3", "", None),
    ]
    one = tmp_path / "one.csv"  # one column: a blank line is a row with an empty cell
    one.write_text("response\na\n\nb\n", encoding="utf-8")
    items = load_table(str(one), columns=ColumnMap(request=None, expected=None, id="@row"))
    assert [i.response for i in items] == ["a", "", "b"]


def test_a_short_row_in_a_table_read_through_datasets_is_refused(tmp_path, monkeypatch):
    """A file over the direct-read size is read by ``datasets`` (pandas in chunks): the same
    check."""
    from assay.data import _reading

    monkeypatch.setattr(_reading, "_DIRECT_MAX_BYTES", 0)
    path = tmp_path / "t.csv"
    path.write_text("id,request,response,expected\nx1,q1,a1,1\nx2,q2\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"t\.csv, row 2, field 'response': line 3 has 2 fields"):
        load_table(str(path), columns=ROWS, missing_expected="keep")
    path.write_text("id,request,response,expected\nx1,q1,a1,1,\nx2,q2,a2,0,\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"t\.csv, row 1: line 2 has 5 fields"):
        load_table(str(path), columns=ROWS, missing_expected="keep")


# -- a key given twice in a JSON row -----------------------------------------------------------
def test_a_key_given_twice_deep_in_json_lines_names_the_line_and_the_key(tmp_path):
    """pyarrow refused the file, and the error named pandas' fallback instead: ``cannot read
    as json (ValueError: Trailing data at position 62)`` — a position on line 1."""
    rows = [{"id": f"r{i}", "request": f"q{i}", "response": f"a{i}"} for i in range(2000)]
    lines = [json.dumps(r) for r in rows]
    lines[1500] = lines[1500].replace('"response"', '"response": "dup", "response"')
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_table(str(path), columns=ColumnMap(id="id", expected=None))
    assert str(err.value) == (
        f"{path}, row 1501, field 'response': line 1501 gives key 'response' twice; keep one"
    )
    lines[0] = lines[0].replace('"id"', '"id": "x", "id"')  # the first line too
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"t\.jsonl, row 1, field 'id': line 1 gives key 'id'"):
        load_table(str(path), columns=ColumnMap(id="id", expected=None))


def test_a_key_given_twice_in_a_json_array_is_refused_not_read_as_the_last(tmp_path):
    """Python's json (and so the array reader) kept the last value: the item was judged on
    one of the two responses, silently."""
    path = tmp_path / "t.json"
    path.write_text(
        '[{"id": "a", "response": "r"},\n {"id": "b",\n  "response": "first", "response": '
        '"second"}]\n',
        encoding="utf-8",
    )
    with pytest.raises(DataError) as err:
        load_table(str(path), columns=ColumnMap(id="id", request=None, expected=None))
    assert str(err.value) == (
        f"{path}, row 2, field 'response': row 2 (from line 2) gives key 'response' twice; keep one"
    )


def test_a_key_given_twice_in_a_nested_object_is_refused_too(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"id": "a", "response": "r", "meta": {"k": 1}}\n'
        '{"id": "b", "response": "r", "meta": {"k": 1, "k": 2}}\n',
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=r"row 2, field 'k': line 2 gives key 'k' twice"):
        load_table(str(path), columns=ColumnMap(id="id", request=None, expected=None))
