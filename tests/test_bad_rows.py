"""Every bad row at once: ``normalise_rollout_file(on_bad="report" | "skip")`` on both engines.

A run that goes on past bad rows counts every one, keeps the first
``BAD_ROWS_KEPT`` as the errors a run that stops raises, and still stops at a
fault of the file as a whole. The engines' agreement on random files is in
``test_jsonl_parity.py``; the command line's wording in ``test_cli_normalise.py``.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from agent_rollout import (
    AgentRolloutError,
    RolloutBadRowsError,
    RolloutFileError,
    RolloutRowError,
    normalise_rollout_file,
)
from agent_rollout._limits import BAD_ROWS_KEPT
from support import canonical, temp_files

GOOD = {"prompt": "q", "answer": "a"}


def bad_line(i: int) -> str:
    """A bad line of one of three kinds, by ``i``."""
    return ['{"prompt": 7}', '{"prompt": "x"', "[1, 2]"][i % 3]


def mixed(path: Path, lines: int, every: int) -> tuple[Path, list[int]]:
    """``lines`` lines, every ``every``-th bad (its 1-based line numbers returned)."""
    text, bad = [], []
    for i in range(lines):
        if i % every == every - 1:
            text.append(bad_line(i))
            bad.append(i + 1)
        else:
            text.append(json.dumps({"prompt": f"p{i}", "answer": str(i), "id": i}))
    path.write_text("\n".join(text) + "\n")
    return path, bad


def test_report_counts_every_bad_row_across_chunks_and_writes_nothing(
    engine: str, tmp_path: Path
) -> None:
    # 30k lines: several of the Rust engine's chunks and two of the twin's blocks.
    src, bad = mixed(tmp_path / "rows.jsonl", 30_000, 10)
    dst = tmp_path / "out.jsonl"
    dst.write_text("old\n")
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, dst, on_bad="report")
    exc = info.value
    assert (exc.bad_rows, exc.rows, exc.stopped) == (3000, 30_000, None)
    assert [e.line for e in exc.errors] == bad[:BAD_ROWS_KEPT]
    # A row's index counts the bad rows before it: its place in the file.
    rows = [e for e in exc.errors if isinstance(e, RolloutRowError)]
    assert rows and all(e.index == e.line - 1 for e in rows)
    text = str(exc).splitlines()
    assert text[0].startswith(f"{src}:10: row 9: prompt: must be a str")
    assert text[1].startswith(f"{src}:20:15: invalid JSON")
    assert text[-1] == (
        f"{src}: 3,000 bad rows of 30,000 (the first {BAD_ROWS_KEPT} listed: "
        "prompt of a wrong type: 7, invalid JSON: 7, not a mapping: 6)"
    )
    assert isinstance(exc, RolloutFileError) and isinstance(exc, ValueError)
    assert isinstance(exc, AgentRolloutError)
    assert dst.read_text() == "old\n"
    assert temp_files(tmp_path) == []


def test_skip_writes_the_good_rows_and_reports_the_bad(engine: str, tmp_path: Path) -> None:
    src, bad = mixed(tmp_path / "rows.jsonl", 3000, 7)
    dst = tmp_path / "out.jsonl"
    report = normalise_rollout_file(src, dst, on_bad="skip")
    good = [{"prompt": f"p{i}", "answer": str(i)} for i in range(3000) if i + 1 not in set(bad)]
    assert dst.read_bytes() == canonical(good)
    assert (report.rows, report.bad_rows) == (len(good), len(bad))
    assert [e.line for e in report.skipped] == bad[:BAD_ROWS_KEPT]
    assert temp_files(tmp_path) == []


def test_stop_is_the_default_and_raises_the_first(engine: str, tmp_path: Path) -> None:
    src, _ = mixed(tmp_path / "rows.jsonl", 30, 7)
    with pytest.raises(RolloutRowError) as info:
        normalise_rollout_file(src, tmp_path / "out.jsonl")
    assert info.value.line == 7


def test_a_fault_of_the_file_after_bad_rows_stops_the_read(engine: str, tmp_path: Path) -> None:
    src, _ = mixed(tmp_path / "rows.jsonl", 30, 7)
    dst = tmp_path / "out.jsonl"
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, dst, on_bad="skip", max_rows=20)
    exc = info.value
    assert exc.bad_rows == 2 and exc.rows is None
    assert [e.line for e in exc.errors] == [7, 14]
    assert exc.stopped is not None
    assert (exc.stopped.code, exc.stopped.line) == ("file_too_many_rows", 21)
    assert str(exc).splitlines()[-1] == (
        f"{src}: 2 bad rows (prompt of a wrong type: 1, invalid JSON: 1), "
        "then the error above stopped the read"
    )
    assert not dst.exists()


def test_skip_with_no_good_row_writes_nothing(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_text('{"prompt": 1}\n\n{"prompt": ""}\n')
    dst = tmp_path / "out.jsonl"
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, dst, on_bad="skip")
    assert (info.value.bad_rows, info.value.rows) == (2, 2)
    assert [e.line for e in info.value.errors] == [1, 3]
    assert not dst.exists()
    assert temp_files(tmp_path) == []


def test_on_bad_takes_three_words(engine: str, tmp_path: Path) -> None:
    src, _ = mixed(tmp_path / "rows.jsonl", 5, 9)
    for dst in ("out.jsonl", "out.parquet"):
        with pytest.raises(ValueError, match=r"on_bad must be 'stop', 'report' or 'skip'"):
            normalise_rollout_file(src, tmp_path / dst, on_bad="ignore")  # type: ignore[arg-type]


def test_the_error_pickles_whole(engine: str, tmp_path: Path) -> None:
    src, _ = mixed(tmp_path / "rows.jsonl", 30, 7)
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, tmp_path / "out.jsonl", on_bad="report")
    copy = pickle.loads(pickle.dumps(info.value))
    assert str(copy) == str(info.value)
    assert (copy.bad_rows, copy.rows, copy.source) == (4, 30, str(src))
    assert [e.line for e in copy.errors] == [7, 14, 21, 28]


# ---- Parquet output: the same bad rows as JSONL's ---------------------------------------------


def error_lines(errors: Any) -> list[str]:
    return [str(error) for error in errors]


def test_parquet_report_lists_what_jsonl_lists_and_writes_nothing(
    engine: str, tmp_path: Path
) -> None:
    pytest.importorskip("pyarrow")
    # 30k lines: several of the Rust engine's chunks and two of the twin's row groups.
    src, bad = mixed(tmp_path / "rows.jsonl", 30_000, 10)
    seen = {}
    for name in ("out.jsonl", "out.parquet"):
        dst = tmp_path / name
        dst.write_bytes(b"old")
        with pytest.raises(RolloutBadRowsError) as info:
            normalise_rollout_file(src, dst, on_bad="report")
        assert dst.read_bytes() == b"old"
        seen[name] = info.value
    exc = seen["out.parquet"]
    assert (exc.bad_rows, exc.rows, exc.stopped) == (3000, 30_000, None)
    assert [e.line for e in exc.errors] == bad[:BAD_ROWS_KEPT]
    assert str(exc) == str(seen["out.jsonl"])
    assert temp_files(tmp_path) == []


def test_parquet_skip_holds_the_good_rows_as_jsonl_skip_writes_them(
    engine: str, tmp_path: Path
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    src, bad = mixed(tmp_path / "rows.jsonl", 30_000, 7)
    jsonl = normalise_rollout_file(src, tmp_path / "out.jsonl", on_bad="skip")
    report = normalise_rollout_file(src, tmp_path / "out.parquet", on_bad="skip")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(rows) == 30_000 - len(bad)
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.to_pylist() == rows
    counts = ("rows", "lines", "blank_lines", "dropped_keys", "bytes_in", "bad_rows")
    assert [getattr(report, n) for n in counts] == [getattr(jsonl, n) for n in counts]
    assert error_lines(report.skipped) == error_lines(jsonl.skipped)
    assert report.bytes_out == (tmp_path / "out.parquet").stat().st_size
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "out.parquet"))
    assert loaded["train"].to_list() == rows
    assert temp_files(tmp_path) == []


def test_parquet_skip_with_rows_of_the_other_kind(engine: str, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    src = tmp_path / "rows.jsonl"
    message = {"prompt": [{"role": "user", "content": "m"}]}
    lines = ['{"prompt": 1}', json.dumps({"prompt": "t1"}), json.dumps(message), "",
             json.dumps({"prompt": "t2"}), json.dumps(message)]  # fmt: skip
    src.write_text("\n".join(lines) + "\n")
    dst = tmp_path / "out.parquet"
    report = normalise_rollout_file(src, dst, on_bad="skip")
    assert pq.read_table(dst).to_pylist() == [
        {"prompt": "t1", "answer": None},
        {"prompt": "t2", "answer": None},
    ]
    assert (report.rows, report.bad_rows) == (2, 3)
    assert [(e.line, getattr(e, "index", None)) for e in report.skipped] == [
        (1, 0), (3, 2), (6, 4)
    ]  # fmt: skip
    # The table's kind was set by the first good row: row 1, not row 0.
    assert "(set by row 1)" in str(report.skipped[1])
    assert "prompt_kind='messages' makes every prompt a message list" in str(report.skipped[1])
    report = normalise_rollout_file(src, dst, on_bad="skip", prompt_kind="messages")
    assert (report.rows, report.bad_rows) == (4, 1)


def test_parquet_bad_rows_then_a_fault_of_the_file(engine: str, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    src, _ = mixed(tmp_path / "rows.jsonl", 30, 7)
    dst = tmp_path / "out.parquet"
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, dst, on_bad="skip", max_rows=20)
    exc = info.value
    assert (exc.bad_rows, exc.rows, [e.line for e in exc.errors]) == (2, None, [7, 14])
    assert exc.stopped is not None
    assert (exc.stopped.code, exc.stopped.line) == ("file_too_many_rows", 21)
    assert not dst.exists()
    assert temp_files(tmp_path) == []


def test_parquet_skip_with_no_good_row_writes_nothing(engine: str, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    src = tmp_path / "rows.jsonl"
    src.write_text('{"prompt": 1}\n\n{"prompt": ""}\n')
    dst = tmp_path / "out.parquet"
    with pytest.raises(RolloutBadRowsError) as info:
        normalise_rollout_file(src, dst, on_bad="skip")
    assert (info.value.bad_rows, info.value.rows) == (2, 2)
    assert not dst.exists()
    assert temp_files(tmp_path) == []
