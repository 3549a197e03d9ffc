"""pathkit_sdk.reports: the one JSON report loader of the report datasets (reg2025, histai,
tcga-pathtext): which file, which records, which part, and one-line errors naming the file."""

from __future__ import annotations

import json

import pytest

from pathkit_core.contracts import PathkitError
from pathkit_sdk import ReportRecords, find_json_file, read_json, read_report_records

LAYOUT = "<root>/train.json"


def write(path, value):
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_a_list_a_wrapped_list_and_the_split_layout(tmp_path):
    plain = write(tmp_path / "a.json", [{"id": "x", "report": "r"}, {"id": "y", "report": "s"}])
    found = read_report_records(plain, "report file", keys=("id", "report"))
    assert found == ReportRecords(plain, [{"id": "x", "report": "r"}, {"id": "y", "report": "s"}], [])
    wrapped = write(tmp_path / "b.json", {"data": [{"case_mapping": "h/s/case_1"}]})
    assert read_report_records(wrapped, "metadata", wrappers=("cases", "data")).records == [
        {"case_mapping": "h/s/case_1"}]
    layout = write(tmp_path / "c.json", {"train": [{"id": "a", "report": "1"}, {"id": "b", "report": "2"}],
                                         "val": [], "test": [{"id": "c", "report": "3"}]})
    found = read_report_records(layout, "report file", keys=("id", "report"), split_layout=True)
    assert [r["id"] for r in found.records] == ["a", "b", "c"] and found.parts == ["train", "train", "test"]
    # without split_layout the same object is no list of records
    with pytest.raises(PathkitError, match=r"c\.json: expected a JSON list of \{\"id\", \"report\"\} records, "
                                           r"found a dict"):
        read_report_records(layout, "report file", keys=("id", "report"))


@pytest.mark.parametrize(("content", "message"), [
    (b'[{"id": "x"}]', r"r\.json: record 0 is not an object with \"id\" and \"report\" \(\"\{'id': 'x'\}\"\)"),
    (b'[{"id": "x", "report": "a"}, 3]', r"record 1 is not an object with"),
    (b'{"cases": 1}', r"expected a JSON list of \{\"id\", \"report\"\} records, found a dict"),
    (b'[{"id": 1,}]', r"r\.json is not valid JSON: Expecting property name .* at line 1, column 11"),
    (b'[{"id": "caf\xe9"}]', r"r\.json is not UTF-8 text: byte 12 \(line 1\)"),
    (b"[" * 100_000 + b"]" * 100_000, r"r\.json is not valid JSON \(nested too deeply\)"),
])
def test_bad_files_get_one_line_naming_the_file(tmp_path, content, message):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(PathkitError, match=message) as info:
        read_report_records(path, "report file", keys=("id", "report"))
    assert "\n" not in str(info.value)


def test_read_json_names_a_missing_file_and_strips_a_bom(tmp_path):
    with pytest.raises(PathkitError, match=r"report file .*none\.json does not exist"):
        read_json(tmp_path / "none.json", "report file")
    (tmp_path / "bom.json").write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json(tmp_path / "bom.json", "report file") == {"a": 1}


def test_which_file_is_read(tmp_path):
    assert find_json_file("reg2025", tmp_path, ("train.json",), tmp_path / "mine.json", "report JSON",
                          option="reports", layout=LAYOUT) == tmp_path / "mine.json"
    with pytest.raises(PathkitError, match=r"^reg2025: no report JSON in .*; expected layout: <root>/train\.json$"):
        find_json_file("reg2025", tmp_path, ("train.json",), None, "report JSON", option="reports", layout=LAYOUT)
    only = write(tmp_path / "other.json", [])
    assert find_json_file("reg2025", tmp_path, ("train.json",), None, "report JSON", option="reports",
                          layout=LAYOUT) == only
    write(tmp_path / "second.json", [])
    with pytest.raises(PathkitError, match=r"several JSON files in .* \(other\.json, second\.json\); choose the "
                                           r"report JSON with the dataset option reports=FILE"):
        find_json_file("reg2025", tmp_path, ("train.json",), None, "report JSON", option="reports", layout=LAYOUT)
    named = write(tmp_path / "train.json", [])
    assert find_json_file("reg2025", tmp_path, ("train.json",), None, "report JSON", option="reports",
                          layout=LAYOUT) == named
