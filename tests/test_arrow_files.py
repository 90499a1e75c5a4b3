"""JSONL files into Arrow tables and zstd Parquet: same rules, same errors, atomic output."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rollout import normalise_rollout_file, read_rollout_jsonl
from support import (
    ENGINES,
    Cli,
    cli_env,
    outcome_on,
    patch_arrow,
    row_strategy,
    temp_files,
    use_engine,
    without_null_keys,
    write_jsonl,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
arrow = pytest.importorskip("agent_rollout.arrow")


MESSAGE_ROWS = [
    {
        "prompt": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]},
        ],
        "answer": "1",
        "id": 1,
    },
    {"prompt": [{"role": "user", "content": "q", "name": "n", "x": 1.0e-7}], "reward": 2},
]


def pipe_reader(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A thread, started, that opens the named pipe ``fifo`` for reading (waiting for a
    writer) and reads it to its end; what it read is put in the list returned."""
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader, received


@pytest.mark.parametrize("engine", ENGINES)
def test_parquet_output_loads_everywhere(engine: str, tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", MESSAGE_ROWS * 3 + [None][:0])
    dest = tmp_path / "out.parquet"
    kind, report = outcome_on(engine, normalise_rollout_file, src, dest)
    assert kind == "ok", report
    assert (report.rows, report.dropped_keys, report.engine) == (6, 6, engine)
    assert report.bytes_out == dest.stat().st_size
    meta = pq.ParquetFile(dest).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    table = pq.read_table(dest)
    assert str(table.schema.field("prompt").type) == (
        "list<element: struct<role: string, content: extension<arrow.json>, name: string, "
        "x: double>>"
    )
    expected = tuple(
        {k: v for k, v in row.items() if k in ("prompt", "answer")} for row in MESSAGE_ROWS * 3
    )
    assert arrow.arrow_to_rows(table) == expected
    # The Hugging Face loader, and what a verl-style reader takes from it.
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("parquet", data_files=str(dest), split="train")
    first = loaded[0]["prompt"]
    assert [m["role"] for m in first] == ["system", "user"] and first[0]["content"] == "s"
    assert arrow.arrow_to_rows(loaded) == expected


def test_both_engines_write_equal_tables_and_as_arrow_reads_the_same(tmp_path: Path) -> None:
    rows = [{"prompt": f"q{i}", "answer": None if i % 3 else f"a{i}", "k": i} for i in range(500)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    tables = []
    for engine in ENGINES:
        dest = tmp_path / f"{engine}.parquet"
        assert outcome_on(engine, normalise_rollout_file, src, dest)[0] == "ok"
        tables.append(pq.read_table(dest))
        kind, direct = outcome_on(engine, read_rollout_jsonl, src, as_arrow=True)
        assert kind == "ok" and direct.equals(tables[-1])
        via_rows = outcome_on(engine, read_rollout_jsonl, src)[1]
        assert direct.equals(arrow.rows_to_arrow(via_rows))
    assert all(t.equals(tables[0]) for t in tables)
    assert tables[0].schema.equals(arrow.TEXT_SCHEMA)


@pytest.mark.skipif("rust" not in ENGINES, reason="the Rust engine is not built")
def test_text_buffers_pyarrow_let_go_of_hold_only_the_next_text(tmp_path: Path) -> None:
    """The Rust engine writes a batch's text into buffers of tables already freed: the
    bytes they held before must not show through."""
    import gc

    def messages(letter: str, width: int) -> list[dict]:
        return [
            {"prompt": [{"role": "u", "content": letter * width + str(i)}]} for i in range(6000)
        ]

    for letter, width in (("a", 400), ("b", 100), ("c", 250), ("d", 30)):  # 2.6 to 0.5 MB
        rows = messages(letter, width)
        src = write_jsonl(tmp_path / f"{letter}.jsonl", rows)
        table = outcome_on("rust", read_rollout_jsonl, src, as_arrow=True, max_rows=10**6)[1]
        assert table.column("prompt").num_chunks > 1
        assert arrow.arrow_to_rows(table, max_rows=10**6) == tuple(rows)
        del table
        gc.collect()


@pytest.mark.parametrize("engine", ENGINES)
def test_row_groups_bound_memory(engine: str, tmp_path: Path, monkeypatch: Any) -> None:
    patch_arrow(monkeypatch, "ROW_GROUP_ROWS", 100)
    patch_arrow(monkeypatch, "BATCH_ROWS", 50)
    # Over a mebibyte, so the Rust reader hands over several chunks.
    # (a 1 MiB chunk holds about 4,900 of these rows)
    rows = [{"prompt": "p" * 200 + str(i)} for i in range(20000)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    assert outcome_on(engine, normalise_rollout_file, src, dest)[0] == "ok"
    meta = pq.ParquetFile(dest).metadata
    assert meta.num_rows == 20000
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert len(groups) >= 4 and max(groups) <= 5000, groups


@pytest.mark.parametrize("engine", ENGINES)
def test_row_groups_hold_about_row_group_rows(engine: str, tmp_path: Path) -> None:
    # The twin closes a group at ROW_GROUP_ROWS exactly; the Rust engine at the end of
    # the chunk that reaches it (these rows: about 2,600 to a 64 KiB chunk, 40,000 to
    # a mebibyte).
    rows = [{"prompt": f"q{i}", "answer": str(i)} for i in range(100_000)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    assert outcome_on(engine, normalise_rollout_file, src, dest, max_rows=10**6)[0] == "ok"
    meta = pq.ParquetFile(dest).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(groups) == 100_000
    if engine == "python":
        assert groups == [16384] * 6 + [100_000 - 6 * 16384]
    else:
        assert all(16384 <= rows < 16384 + 40_000 for rows in groups[:-1]), groups
        assert len(groups) >= 2


@pytest.mark.parametrize("engine", ENGINES)
def test_row_groups_are_bounded_in_bytes_too(engine: str, tmp_path: Path, monkeypatch: Any) -> None:
    # Long rows: the row cap alone (16,384 rows) would hold all 4 MB in one group.
    patch_arrow(monkeypatch, "ROW_GROUP_BYTES", 1 << 20, raising=False)
    rows = [{"prompt": "p" * 200 + str(i)} for i in range(20000)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    assert outcome_on(engine, normalise_rollout_file, src, dest)[0] == "ok"
    meta = pq.ParquetFile(dest).metadata
    assert meta.num_rows == 20000
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert len(groups) >= 3 and max(groups) <= 10000, groups


def file_cases(tmp_path: Path) -> dict[str, tuple[Path, dict]]:
    big_text = [{"prompt": "t" * 100 + str(i)} for i in range(15000)]  # > 1 MiB: several chunks
    cases: dict[str, list[Any]] = {
        "kind_in_first_chunk": [{"prompt": "a"}, {"prompt": "b"}, {"prompt": [{"role": "u"}]}],
        "kind_at_a_chunk_start": [*big_text, {"prompt": [{"role": "u"}]}],
        "messages_then_text": [{"prompt": [{"role": "u"}]}, {"prompt": "b"}],
        "rule_before_kind": [{"prompt": "a"}, {"prompt": 5}, {"prompt": [{"role": "u"}]}],
        "kind_before_rule": [{"prompt": "a"}, {"prompt": [{"role": "u"}]}, {"prompt": 5}],
        "over_the_cap": [{"prompt": "a"}, {"prompt": "b"}, {"prompt": "c"}],
    }
    out = {}
    for name, rows in cases.items():
        path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n")  # a blank line at the end is skipped
        out[name] = (path, {"max_rows": 2} if name == "over_the_cap" else {})
    return out


def test_file_errors_are_the_same_on_both_engines(tmp_path: Path) -> None:
    for name, (src, options) in file_cases(tmp_path).items():
        results = {}
        for engine in ENGINES:
            dest = tmp_path / f"{name}.{engine}.parquet"
            results[engine] = outcome_on(engine, normalise_rollout_file, src, dest, **options)
            assert not dest.exists()
            table = outcome_on(engine, read_rollout_jsonl, src, as_arrow=True, **options)
            assert table == results[engine]
        assert len(set(map(repr, results.values()))) == 1, (name, results)
        kind, (error_type, message) = results[ENGINES[0]]
        assert kind == "error"
        expected = {
            "kind_in_first_chunk": f"{src}:3: row 2: prompt: a list of chat messages in a table "
            "of str prompts (set by row 0)",
            "kind_at_a_chunk_start": f"{src}:15001: row 15000: prompt: a list of chat messages",
            "messages_then_text": f"{src}:2: row 1: prompt: a str in a table of chat-message",
            "rule_before_kind": f"{src}:2: row 1: prompt: must be a str or a list",
            "kind_before_rule": f"{src}:2: row 1: prompt: a list of chat messages",
            "over_the_cap": (
                f"{src}:3: more than 2 rows "
                "(max_rows=2; raise the limit with max_rows= or --max-rows)"
            ),
        }[name]
        assert message.startswith(expected), (name, message)
        assert error_type == ("RolloutFileError" if name == "over_the_cap" else "RolloutRowError")
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_prompt_kind_messages_makes_a_mixed_file_uniform(engine: str, tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"prompt": "a"}, {"prompt": [{"role": "u"}]}])
    dest = tmp_path / "out.parquet"
    kind, _ = outcome_on(engine, normalise_rollout_file, src, dest, prompt_kind="messages")
    assert kind == "ok"
    assert arrow.arrow_to_rows(pq.read_table(dest)) == (
        {"prompt": [{"role": "user", "content": "a"}]},
        {"prompt": [{"role": "u"}]},
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_run_leaves_the_old_file(engine: str, tmp_path: Path) -> None:
    dest = tmp_path / "out.parquet"
    dest.write_bytes(b"old")
    rows = [{"prompt": f"q{i}"} for i in range(20000)] + [{"prompt": 1}]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    _, error = outcome_on(engine, normalise_rollout_file, src, dest)
    assert error[0] == "RolloutRowError" and ":20001: row 20000: prompt" in error[1]
    assert dest.read_bytes() == b"old"
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_ctrl_c_leaves_nothing_behind(engine: str, tmp_path: Path) -> None:
    rows = [{"prompt": f"q{i}" * 20} for i in range(60000)]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    calls = []

    def progress(rows: int, lines: int, bytes_in: int) -> None:
        calls.append(rows)
        raise KeyboardInterrupt

    with use_engine(engine), pytest.raises(KeyboardInterrupt):
        normalise_rollout_file(src, dest, progress=progress)
    assert calls and not dest.exists()
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_source_and_bad_destination(engine: str, tmp_path: Path) -> None:
    _, error = outcome_on(
        engine, normalise_rollout_file, tmp_path / "nope.jsonl", tmp_path / "o.parquet"
    )
    assert error[0] == "FileNotFoundError" and "nope.jsonl" in error[1]
    src = write_jsonl(tmp_path / "in.jsonl", [{"prompt": "a"}])
    _, error = outcome_on(engine, normalise_rollout_file, src, tmp_path / "no" / "o.parquet")
    assert error[0] == "FileNotFoundError" and "o.parquet" in error[1]
    _, error = outcome_on(engine, read_rollout_jsonl, src, as_arrow=True, prompt_kind="x")
    assert error[0] == "RolloutValueError" and "prompt_kind must be one of" in error[1]


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_file_is_refused(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n\n")
    _, error = outcome_on(engine, normalise_rollout_file, src, tmp_path / "o.parquet")
    assert error[0] == "RolloutFileError" and "no rows" in error[1]
    assert not (tmp_path / "o.parquet").exists()


def test_cli_writes_parquet(engine: str, tmp_path: Path, cli: Cli) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", MESSAGE_ROWS)
    dest = tmp_path / "out.parquet"
    done = cli("normalise", str(src), "-o", str(dest))
    assert done.code == 0, done.err
    assert "2 rows out" in done.err and done.err.rstrip().endswith(f"-> {dest}")
    assert pq.read_table(dest).num_rows == 2
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "a"}, {"prompt": [{"role": "u"}]}])
    done = cli("normalise", str(bad), "-o", str(dest))
    assert done.code == 1
    assert done.err.startswith(f"{bad}:2: row 1: prompt: a list of chat messages")
    done = cli("normalise", str(bad), "-o", str(dest), "--prompt-kind", "messages")
    assert done.code == 0, done.err
    assert pq.read_table(dest).schema.equals(arrow.MESSAGES_SCHEMA)


# ---- one schema for the whole file: later rows widen it ---------------------------------------

PLAIN = {"prompt": [{"role": "user", "content": "q"}], "answer": "a"}
TOOL_CALL = {
    "prompt": [
        {"role": "user", "content": "2+2?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 2}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
    ]
}
IMAGE = {
    "prompt": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("destination", ["file", "pipe"])
def test_rows_that_widen_the_schema_rewrite_what_was_written(
    engine: str, destination: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """Row groups already written under a narrower schema are rewritten under the wider one:
    the file has one schema, and every row reads back."""
    patch_arrow(monkeypatch, "ROW_GROUP_ROWS", 100)
    patch_arrow(monkeypatch, "BATCH_ROWS", 50)
    # Over a mebibyte of plain rows first (several Rust chunks), then tool calls, then an image.
    filler = {"prompt": [{"role": "user", "content": "p" * 200}]}
    rows = [filler] * 6000 + [TOOL_CALL] * 3 + [PLAIN] * 400 + [IMAGE]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    if destination == "pipe":
        os.mkfifo(dest)
        reader, received = pipe_reader(dest)
    kind, report = outcome_on(engine, normalise_rollout_file, src, dest)
    assert kind == "ok", report
    if destination == "pipe":
        reader.join(timeout=30)
        table = pq.read_table(pa.BufferReader(received[0]))
        assert report.bytes_out == len(received[0])
    else:
        assert pq.ParquetFile(dest).metadata.num_row_groups >= 2  # written before the widening
        table = pq.read_table(dest)
    assert str(table.schema.field("prompt").type) == (
        "list<element: struct<role: string, content: extension<arrow.json>, tool_calls: "
        "list<element: struct<id: string, type: string, function: struct<name: string, "
        "arguments: struct<a: int64>>>>, tool_call_id: string>>"
    )
    assert arrow.arrow_to_rows(table, max_rows=10**6) == tuple(
        without_null_keys(row) for row in rows
    )
    direct = outcome_on(engine, read_rollout_jsonl, src, as_arrow=True, max_rows=10**6)[1]
    assert direct.equals(table)
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failed_widening_run_leaves_nothing(
    engine: str, tmp_path: Path, monkeypatch: Any
) -> None:
    patch_arrow(monkeypatch, "ROW_GROUP_ROWS", 100)
    patch_arrow(monkeypatch, "BATCH_ROWS", 50)
    filler = {"prompt": [{"role": "user", "content": "p" * 200}]}
    rows = [filler] * 6000 + [TOOL_CALL] + [filler] * 6000 + [{"prompt": 1}]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    dest.write_bytes(b"old")
    _, error = outcome_on(engine, normalise_rollout_file, src, dest)
    assert error[0] == "RolloutRowError" and ":12002: row 12001: prompt" in error[1]
    assert dest.read_bytes() == b"old"
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("moment", ["copying back", "removing the copy"])
def test_an_interrupt_while_widening_leaves_nothing(
    engine: str, moment: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """Ctrl-C after the written groups were moved aside (``.old.tmp``): while they are copied
    back under the wider schema, or as the copy's removal starts (CPython 3.10 can raise
    there): the destination keeps its bytes, no temporary file is left."""
    import pyarrow.parquet

    patch_arrow(monkeypatch, "ROW_GROUP_ROWS", 100)
    patch_arrow(monkeypatch, "BATCH_ROWS", 50)
    filler = {"prompt": [{"role": "user", "content": "p" * 200}]}
    src = write_jsonl(tmp_path / "in.jsonl", [filler] * 6000 + [TOOL_CALL])
    dest = tmp_path / "out.parquet"
    dest.write_bytes(b"old")
    moved_aside: list[str] = []

    def interrupted(path: Any, *args: Any, **kwargs: Any) -> Any:
        if not moved_aside:  # once: the cleanup after it runs as it would
            # remove_temp is given the copy's path; ParquetFile the copy, opened by its bytes.
            aside = [name for name in temp_files(tmp_path) if name.endswith(".old.tmp")]
            moved_aside.append(path if isinstance(path, str) else aside[0])
            raise KeyboardInterrupt
        return real(path, *args, **kwargs)

    if moment == "copying back":
        real = pyarrow.parquet.ParquetFile
        monkeypatch.setattr(pyarrow.parquet, "ParquetFile", interrupted)
    else:
        real = arrow.parquet.remove_temp
        patch_arrow(monkeypatch, "remove_temp", interrupted)
    with use_engine(engine), pytest.raises(KeyboardInterrupt):
        normalise_rollout_file(src, dest, max_rows=10**6)
    assert moved_aside and moved_aside[0].endswith(".old.tmp")
    assert dest.read_bytes() == b"old"
    assert temp_files(tmp_path) == []


# Each example writes a file and reads it on both engines: at most 300 of them.
@settings(max_examples=min(settings().max_examples, 300))
@given(
    st.lists(row_strategy(odd=False), max_size=6),
    st.sampled_from(["auto", "text", "messages"]),
    st.booleans(),
)
def test_random_files_read_the_same_on_both_engines(data: list, kind: str, compact: bool) -> None:
    # Compact lines take the Rust engine's shortcut (no value tree) where they can.
    with tempfile.TemporaryDirectory() as folder:
        src = write_jsonl(Path(folder) / "in.jsonl", data, compact)
        results = [
            outcome_on(engine, read_rollout_jsonl, src, as_arrow=True, prompt_kind=kind)
            for engine in ENGINES
        ]
        rows = outcome_on(ENGINES[0], read_rollout_jsonl, src)
    if results[0][0] == "ok":
        assert all(r[0] == "ok" and r[1].equals(results[0][1]) for r in results), results
        back = arrow.arrow_to_rows(results[0][1])
        if kind != "messages":
            assert back == tuple(without_null_keys(row) for row in rows[1])
        else:
            assert len(back) == len(rows[1])
    else:
        assert all(r == results[0] for r in results), results


# ---- Parquet to destinations that are not regular files --------------------------------------


@pytest.mark.parametrize("engine_name", ENGINES)
def test_parquet_into_a_named_pipe_is_written_and_counted(tmp_path: Path, engine_name: str) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", MESSAGE_ROWS)
    fifo = tmp_path / "out.parquet"
    os.mkfifo(fifo)
    reader, received = pipe_reader(fifo)
    kind, report = outcome_on(engine_name, normalise_rollout_file, src, fifo)
    reader.join(timeout=30)
    assert kind == "ok", report
    assert fifo.is_fifo()  # written in place, never replaced
    assert report.bytes_out == len(received[0]) > 0
    table = pq.read_table(pa.BufferReader(received[0]))
    assert table.num_rows == len(MESSAGE_ROWS)
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("bad_line", [1, 3])
def test_parquet_into_a_named_pipe_that_fails_ends_the_readers_input(
    tmp_path: Path, engine_name: str, bad_line: int
) -> None:
    """A run that fails (on its first line, or after rows were read) lets a reader
    already waiting on the named pipe it was to write go: the reader gets the end of
    its input, with nothing in it, instead of waiting for a writer for ever."""
    lines = [json.dumps(row) for row in MESSAGE_ROWS[:3]]
    lines.insert(bad_line - 1, "not json")
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fifo = tmp_path / "out.parquet"
    os.mkfifo(fifo)
    reader, received = pipe_reader(fifo)
    # Until the reader waits in open() for a writer (Linux names that wait).
    deadline = time.monotonic() + 20
    wchan = Path(f"/proc/self/task/{reader.native_id}/wchan")
    while wchan.read_text() != "wait_for_partner":
        assert time.monotonic() < deadline, "the reader never waited for a writer"
        time.sleep(0.005)
    kind, report = outcome_on(engine_name, normalise_rollout_file, src, fifo)
    reader.join(timeout=30)
    if reader.is_alive():  # release it, so the test fails rather than hangs
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=30)
        pytest.fail("the reader of the named pipe was left waiting")
    assert kind == "error"
    assert report[1].startswith(f"{src}:{bad_line}:1: invalid JSON"), report
    assert received == [b""]
    assert fifo.is_fifo()
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine_name", ENGINES)
def test_parquet_into_a_named_pipe_reports_a_missing_source_first(
    tmp_path: Path, engine_name: str
) -> None:
    """As for JSONL output, the source is opened before the destination: a missing
    source is reported at once, not after waiting for a reader of the pipe."""
    fifo = tmp_path / "out.parquet"
    os.mkfifo(fifo)
    missing = tmp_path / "missing.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "agent_rollout", "normalise", str(missing), "-o", str(fifo)],
        capture_output=True,
        env=cli_env(engine_name),
        timeout=60,
    )
    assert done.returncode == 2, done.stderr  # an input that cannot be opened: I/O
    assert done.stderr.decode() == (f"{missing}: cannot read file: No such file or directory\n")
    assert fifo.is_fifo()


@pytest.mark.parametrize("engine_name", ENGINES)
def test_parquet_rename_failure_names_the_destination(tmp_path: Path, engine_name: str) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", MESSAGE_ROWS)
    dest = tmp_path / "out.parquet"
    dest.mkdir()  # a folder cannot be renamed over
    kind, (error_type, message) = outcome_on(engine_name, normalise_rollout_file, src, dest)
    assert kind == "error" and error_type == "IsADirectoryError"
    assert message == f"[Errno 21] Is a directory: '{dest}'"
    assert temp_files(tmp_path) == []


_FOOTER_FAILS = """
import os, resource, signal, sys
import pyarrow as pa
from agent_rollout.arrow import TEXT_SCHEMA, parquet_writer

path = os.path.realpath(sys.argv[1])
table = pa.table({"prompt": ["q" * 100] * 10, "answer": ["a"] * 10}, schema=TEXT_SCHEMA)
writer = parquet_writer(path, TEXT_SCHEMA)
writer.write_table(table, row_group_size=None)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 8, hard))
try:
    writer.close()
except OSError as exc:
    print("close failed:", exc.errno)
held = []
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink(f"/proc/self/fd/{fd}") == path:
            held.append(fd)
    except OSError:
        pass  # listdir's own descriptor, gone
print("held:", held)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE, /proc/self/fd")
def test_the_parquet_file_is_closed_when_its_footer_cannot_be_written(tmp_path: Path) -> None:
    # parquet_writer opens the file itself (by its bytes: any name) and closes it even
    # when closing pyarrow's writer fails: a file-size limit (in a process of its own)
    # lets the row group through and stops the footer, as a full disk would.
    done = subprocess.run(
        [sys.executable, "-c", _FOOTER_FAILS, str(tmp_path / "out.parquet")],
        capture_output=True,
        text=True,
        env=cli_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "close failed: 27\nheld: []\n"


# ---- the row-group writer thread -------------------------------------------------------------


def failing_writer(real: Any, fail_at: int, calls: list[int]) -> Any:
    """``arrow.parquet_writer`` whose ``fail_at``-th group write fails as a full disk does."""

    def make(path: str, schema: Any) -> Any:
        writer = real(path, schema)

        class Failing:
            def write_table(self, table: Any, **options: Any) -> None:
                calls.append(table.num_rows)
                if len(calls) == fail_at:
                    raise OSError(28, "No space left on device", path)
                writer.write_table(table, **options)

            def close(self) -> None:
                writer.close()

        return Failing()

    return make


def test_a_group_write_that_failed_before_a_bad_row_is_the_error_reported(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # The twin hands over 100-row batches: group 3 (rows 200-299) is written on the
    # writer thread while rows 300-399 are read, and row 350 is refused. The write came
    # first: its error is reported (naming the destination), not the row's.
    patch_arrow(monkeypatch, "ROW_GROUP_ROWS", 100)
    patch_arrow(monkeypatch, "BATCH_ROWS", 100)
    calls: list[int] = []
    patch_arrow(monkeypatch, "parquet_writer", failing_writer(arrow.parquet_writer, 3, calls))
    rows: list[Any] = [{"prompt": f"q{i}"} for i in range(1000)]
    rows[350] = {"prompt": 5}
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    threads = set(threading.enumerate())
    kind, (error_type, message) = outcome_on("python", normalise_rollout_file, src, dest)
    assert (kind, error_type) == ("error", "OSError"), message
    assert message == f"[Errno 28] No space left on device: '{dest}'"
    assert calls == [100, 100, 100]
    assert temp_files(tmp_path) == [] and not dest.exists()
    assert set(threading.enumerate()) <= threads
    # With no failing write, the row is the error.
    patch_arrow(monkeypatch, "parquet_writer", failing_writer(arrow.parquet_writer, 0, []))
    _, (error_type, message) = outcome_on("python", normalise_rollout_file, src, dest)
    assert error_type == "RolloutRowError" and ":351: row 350: prompt" in message


def gated_writer(
    real: Any, gate: threading.Event, calls: list[int], fail_at: int = 0, hold_at: int = 1
) -> Any:
    """``arrow.parquet_writer`` whose ``hold_at``-th group write waits for ``gate`` (so
    groups queue behind it) and whose ``fail_at``-th fails as a full disk does. A write begun
    while another is going on is recorded as -1 in ``calls``."""

    def make(path: str, schema: Any) -> Any:
        writer = real(path, schema)

        class Gated:
            writing = 0  # writes going on now; more than one is a bug

            def write_table(self, table: Any, **options: Any) -> None:
                self.writing += 1
                try:
                    calls.append(table.num_rows if self.writing == 1 else -1)
                    if len(calls) == hold_at:
                        assert gate.wait(timeout=30)
                    if len(calls) == fail_at:
                        raise OSError(28, "No space left on device", path)
                    writer.write_table(table, **options)
                finally:
                    self.writing -= 1

            def close(self) -> None:
                writer.close()

        return Gated()

    return make


def gated_sink(
    tmp_path: Path, monkeypatch: Any, **options: int
) -> tuple[Any, Path, Any, list[int]]:
    """A ``ParquetSink`` into ``tmp_path / "out.parquet"`` of 100-row groups whose writer is
    ``gated_writer(..., **options)``: the sink, its destination, the gate and the calls."""
    from agent_rollout._files import destination

    patch_arrow(monkeypatch, "ROW_GROUP_ROWS", 100)
    gate, calls = threading.Event(), []
    writer = gated_writer(arrow.parquet_writer, gate, calls, **options)
    patch_arrow(monkeypatch, "parquet_writer", writer)
    dest = tmp_path / "out.parquet"
    return arrow.ParquetSink(destination(str(dest)), str(dest)), dest, gate, calls


@contextlib.contextmanager
def ctrl_c_soon() -> Iterator[None]:
    """SIGINT to the main thread 0.2 s in, with Python's own handler (pytest-xdist's
    workers may have another); the handler is put back after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    assert main is not None
    ctrl_c = threading.Timer(0.2, signal.pthread_kill, (main, signal.SIGINT))
    ctrl_c.start()
    try:
        yield
    finally:
        ctrl_c.cancel()
        signal.signal(signal.SIGINT, previous)


def sink_batches(groups: int) -> list[Any]:
    return [
        pa.RecordBatch.from_pylist(
            [{"prompt": f"q{g}-{i}", "answer": None} for i in range(100)], schema=arrow.TEXT_SCHEMA
        )
        for g in range(groups)
    ]


def test_finished_groups_queue_for_the_writer_up_to_the_in_flight_bound(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """While a group is being written, the groups after it queue (the reader goes on
    parsing) until IN_FLIGHT_ROWS; then adding waits for the writer. They are written
    in order."""
    sink, dest, gate, calls = gated_sink(tmp_path, monkeypatch)
    patch_arrow(monkeypatch, "IN_FLIGHT_ROWS", 300)
    try:
        # Room for a fourth group, if the bound let one in: the adder waits after three.
        adder, added = add_in_a_thread(sink, sink_batches(8), 3)
        assert sink.in_flight["rows"] == 300
        assert calls == [100]  # the fourth waits for room
    finally:
        gate.set()
    adder.join(timeout=30)
    assert not adder.is_alive() and len(added) == 8
    sink.finish()
    table = pq.read_table(dest)
    assert table.column("prompt").to_pylist() == [f"q{g}-{i}" for g in range(8) for i in range(100)]
    assert calls == [100] * 8 and sink.thread is None
    assert sink.in_flight == {"rows": 0, "bytes": 0} and not sink.writing


def test_the_in_flight_bound_counts_bytes_too(tmp_path: Path, monkeypatch: Any) -> None:
    sink, dest, gate, _ = gated_sink(tmp_path, monkeypatch)
    batches = sink_batches(8)
    patch_arrow(monkeypatch, "IN_FLIGHT_BYTES", 2 * batches[0].nbytes)  # two groups
    try:
        adder, _ = add_in_a_thread(sink, batches, 2)  # the rows bound (65,536) is far off
    finally:
        gate.set()
    adder.join(timeout=30)
    sink.finish()
    assert pq.read_table(dest).num_rows == 800 and sink.in_flight == {"rows": 0, "bytes": 0}


def test_groups_queued_after_a_failed_write_are_not_written(
    tmp_path: Path, monkeypatch: Any
) -> None:
    sink, dest, gate, calls = gated_sink(tmp_path, monkeypatch, fail_at=2)
    for batch in sink_batches(5):  # each fills a group: 2-5 queue behind the first write
        sink.add(batch)
    assert len(sink.writing) == 5 and calls in ([], [100])
    gate.set()
    with pytest.raises(OSError) as info:
        sink.finish()
    assert info.value.errno == 28 and info.value.filename == str(dest)
    assert calls == [100, 100]  # groups 3-5 were not handed to pyarrow
    assert sink.abandon() is None and sink.thread is None
    assert temp_files(tmp_path) == [] and not dest.exists()


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def add_in_a_thread(sink: Any, batches: list[Any], blocked_after: int) -> tuple[Any, list[int]]:
    """Add ``batches`` to ``sink`` on a thread; return it once ``blocked_after`` were
    added and it has been waiting a while."""
    added: list[int] = []

    def add_all() -> None:
        for batch in batches:
            sink.add(batch)
            added.append(batch.num_rows)

    adder = threading.Thread(target=add_all)
    adder.start()
    wait_for(lambda: len(added) >= blocked_after)
    time.sleep(0.2)
    assert len(added) == blocked_after and adder.is_alive()
    return adder, added


def test_once_no_thread_takes_groups_the_queued_ones_are_written_first(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The interpreter shutting down refuses new work to every thread pool: the group
    is then written on the caller's thread, after the groups queued before it, never
    beside them (two writes at once crashed the process), and so are the later ones."""
    sink, dest, gate, calls = gated_sink(tmp_path, monkeypatch)
    batches = sink_batches(6)
    for batch in batches[:3]:
        sink.add(batch)
    submitted = sink.thread.submit

    def refused(*args: Any) -> Any:
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    sink.thread.submit = refused
    try:
        adder, _ = add_in_a_thread(sink, batches[3:], 0)  # waits for the three queued
    finally:
        gate.set()
    adder.join(timeout=30)
    assert not adder.is_alive()
    sink.thread.submit = submitted
    sink.finish()
    prompts = pq.read_table(dest).column("prompt").to_pylist()
    assert prompts == [f"q{g}-{i}" for g in range(6) for i in range(100)]
    assert calls == [100] * 6  # one at a time


def test_a_writer_thread_that_cannot_start_writes_no_group_twice(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A thread that cannot start (a process limit) leaves its work item queued in the
    pool; the group is written in line and nothing is submitted again."""
    from agent_rollout._files import destination

    patch_arrow(monkeypatch, "ROW_GROUP_ROWS", 100)
    start = threading.Thread.start
    refused: list[str] = []

    def start_or_fail(thread: threading.Thread) -> None:
        if thread.name.startswith("agent-rollout-parquet") and not refused:
            refused.append(thread.name)  # the first only: a later thread could start
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_or_fail)
    dest = tmp_path / "out.parquet"
    sink = arrow.ParquetSink(destination(str(dest)), str(dest))
    for batch in sink_batches(4):
        sink.add(batch)
    sink.finish()
    prompts = pq.read_table(dest).column("prompt").to_pylist()
    assert prompts == [f"q{g}-{i}" for g in range(4) for i in range(100)]
    assert len(refused) == 1


def test_abandoning_writes_none_of_the_queued_groups(tmp_path: Path, monkeypatch: Any) -> None:
    """Ctrl-C while groups wait for the writer: the group being written ends, the
    others are dropped (not written into a file about to be removed)."""
    sink, dest, gate, calls = gated_sink(tmp_path, monkeypatch)
    for batch in sink_batches(5):
        sink.add(batch)
    assert len(sink.writing) == 5
    wait_for(lambda: calls == [100])  # the first group's write has begun
    failed: list[Any] = []
    stopper = threading.Thread(target=lambda: failed.append(sink.abandon(interrupted=True)))
    stopper.start()
    time.sleep(0.2)
    assert stopper.is_alive()  # waiting for the group being written
    gate.set()
    stopper.join(timeout=30)
    assert failed == [None] and calls == [100] and sink.thread is None
    assert temp_files(tmp_path) == [] and not dest.exists()


def test_a_second_ctrl_c_while_abandoning_gets_through(tmp_path: Path, monkeypatch: Any) -> None:
    sink, dest, gate, calls = gated_sink(tmp_path, monkeypatch)
    for batch in sink_batches(3):
        sink.add(batch)
    wait_for(lambda: calls == [100])  # the first group's write has begun
    started = time.monotonic()
    try:
        with ctrl_c_soon(), pytest.raises(KeyboardInterrupt):
            sink.abandon(interrupted=True)  # waits for the first group's write
        assert time.monotonic() - started < 10
    finally:
        gate.set()
    sink.thread.shutdown(wait=True)
    assert calls == [100]  # the queued groups were dropped
    assert temp_files(tmp_path) == [] and not dest.exists()


def test_ctrl_c_while_finish_waits_for_a_later_group_is_not_held(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Ctrl-C while ``finish`` waits for the second group: raised then, not once every
    queued group is written; abandoning then drops the groups not begun."""
    sink, dest, gate, calls = gated_sink(tmp_path, monkeypatch, hold_at=2)
    for batch in sink_batches(5):
        sink.add(batch)
    wait_for(lambda: len(calls) == 2)  # the first written, the second held
    started = time.monotonic()
    try:
        with ctrl_c_soon(), pytest.raises(KeyboardInterrupt):
            sink.finish()
        assert time.monotonic() - started < 10  # not held until the writer gives up (30 s)
        assert calls == [100, 100]
    finally:
        threading.Timer(0.2, gate.set).start()
    assert sink.abandon(interrupted=True) is None
    assert calls == [100, 100] and sink.thread is None
    assert temp_files(tmp_path) == [] and not dest.exists()


@pytest.mark.skipif("rust" not in ENGINES, reason="the Rust engine is not built")
def test_parquet_is_written_at_interpreter_shutdown(tmp_path: Path) -> None:
    # No thread can start from an atexit hook: the groups are written in line. (Rust
    # engine only: the twin's pa.array makes pyarrow import pandas, which cannot
    # register its own atexit hook at that point.)
    src = write_jsonl(tmp_path / "in.jsonl", MESSAGE_ROWS)
    dest = tmp_path / "out.parquet"
    script = (
        "import atexit, sys\n"
        "from agent_rollout import normalise_rollout_file\n"
        "atexit.register(normalise_rollout_file, sys.argv[1], sys.argv[2])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "AGENT_ROLLOUT_PURE_PYTHON"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(src), str(dest)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert pq.read_table(dest).num_rows == len(MESSAGE_ROWS)
    assert temp_files(tmp_path) == []
