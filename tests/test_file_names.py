"""File names as the kernel takes them: bytes that need not be UTF-8, up to 255 of them.

A name that is not UTF-8 (``r\\xe9sultats.jsonl``: Latin-1 bytes) reaches Python as
text with lone surrogates (``os.fsdecode``); both engines open it as the bytes it is,
as source and as destination, JSONL and Parquet, through the library and the
commands. Messages show it with ``\\xNN`` (text that can be printed anywhere);
``OSError`` keeps the path itself, as Python's own ``open`` does.

A destination's temporary file is named after it (``.NAME.PID.N.tmp``), keeping at
most ``TEMP_NAME_KEEP`` bytes of the name, so that a name of 255 bytes, the most a
file name may have, can be written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent_rollout import (
    RolloutFileError,
    RolloutRowError,
    normalise_rollout_file,
    read_rollout_jsonl,
)
from agent_rollout._files import TEMP_NAME_KEEP, temp_stem
from support import (
    BUNDLED_PROMPTS,
    ENGINES,
    OFFLINE,
    Cli,
    cli_process,
    expected_offline_bytes,
    outcome_on,
    patch_arrow,
    temp_files,
    use_engine,
    write_config,
)

ROWS = b'{"prompt":"q","answer":"a","id":1}\n' * 3
EXPECTED = b'{"prompt":"q","answer":"a"}\n' * 3
EXPECTED_ROWS = [{"prompt": "q", "answer": "a"}] * 3

NAME_MAX = 255
"""The most bytes a file name may have (Linux's filesystems, tmpfs included)."""


def not_utf8(name: str) -> str:
    """``name`` with its ``é`` as the one Latin-1 byte 0xE9: a name that is not UTF-8."""
    return os.fsdecode(name.encode("utf-8").replace("é".encode(), b"\xe9"))


def long_name(suffix: str, size: int = NAME_MAX) -> str:
    """A file name of ``size`` bytes ending in ``suffix``."""
    return "n" * (size - len(suffix)) + suffix


def parquet_rows(path: Path) -> list[dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.read_table(pa.BufferReader(path.read_bytes())).to_pylist()


def output_of(path: Path) -> Any:
    return parquet_rows(path) if path.name.endswith(".parquet") else path.read_bytes()


def expected_of(path: Path) -> Any:
    return EXPECTED_ROWS if path.name.endswith(".parquet") else EXPECTED


@pytest.fixture
def latin1_src(tmp_path: Path) -> Path:
    path = tmp_path / not_utf8("résultats.jsonl")
    path.write_bytes(ROWS)
    assert os.fsencode(path.name) == b"r\xe9sultats.jsonl"
    return path


# ---- names that are not UTF-8 ------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_name_that_is_not_utf8_is_read_and_written(
    engine: str, latin1_src: Path, tmp_path: Path, suffix: str
) -> None:
    dest = tmp_path / not_utf8(f"sortie-é.{suffix}")
    report = normalise_rollout_file(latin1_src, dest)
    assert (report.rows, report.engine) == (3, engine)
    assert output_of(dest) == expected_of(dest)
    assert temp_files(tmp_path) == []


def test_a_source_that_is_not_utf8_is_read(engine: str, latin1_src: Path) -> None:
    assert list(read_rollout_jsonl(latin1_src)) == EXPECTED_ROWS
    assert read_rollout_jsonl(str(latin1_src), as_arrow=True).to_pylist() == EXPECTED_ROWS


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_the_normalise_command_takes_names_that_are_not_utf8(
    engine: str, latin1_src: Path, tmp_path: Path, suffix: str, cli: Cli
) -> None:
    dest = tmp_path / not_utf8(f"sortie-é.{suffix}")
    result = cli("normalise", str(latin1_src), "-o", str(dest))
    assert result.code == 0, result.err
    assert output_of(dest) == expected_of(dest)
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("engine_name", ENGINES)
def test_a_process_given_names_that_are_not_utf8(
    engine_name: str, latin1_src: Path, tmp_path: Path
) -> None:
    """The bytes of the command line, as a shell hands them over."""
    dest = tmp_path / not_utf8("sortie-é.jsonl")
    done = cli_process("normalise", str(latin1_src), "-o", str(dest), engine=engine_name)
    assert done.returncode == 0, done.stderr
    assert b"internal error" not in done.stderr
    assert dest.read_bytes() == EXPECTED


def test_messages_show_such_a_name_with_escapes(engine: str, tmp_path: Path) -> None:
    src = tmp_path / not_utf8("mauvais-é.jsonl")
    src.write_bytes(b'{"prompt": "q"}\n{"prompt": 1}\n')
    with pytest.raises(RolloutRowError) as row:
        normalise_rollout_file(src, tmp_path / "out.jsonl")
    text = str(row.value)
    assert text.startswith(f"{tmp_path}/mauvais-\\xe9.jsonl:2: row 1: prompt: ")
    text.encode("utf-8")  # no lone surrogate: it can be printed and written anywhere
    src.write_bytes(b"{oops\n")
    with pytest.raises(RolloutFileError) as bad:
        read_rollout_jsonl(src)
    assert str(bad.value).startswith(f"{tmp_path}/mauvais-\\xe9.jsonl:1:2: invalid JSON")
    assert bad.value.source == str(src)  # the path itself, to open again
    assert (tmp_path / "out.jsonl").exists() is False


def test_errors_about_such_names_are_the_same_on_both_engines(tmp_path: Path) -> None:
    missing = tmp_path / not_utf8("absent-é.jsonl")
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROWS)
    nowhere = tmp_path / not_utf8("dossier-é") / not_utf8("sortie-é.jsonl")
    for call in [
        lambda: normalise_rollout_file(missing, tmp_path / "out.jsonl"),
        lambda: read_rollout_jsonl(missing),
        lambda: normalise_rollout_file(src, nowhere),
        lambda: normalise_rollout_file(src, nowhere.with_suffix(".parquet")),
    ]:
        outcomes = [outcome_on(engine, call) for engine in ENGINES]
        assert outcomes[0][0] == "error" and outcomes[0][1][0] == "FileNotFoundError"
        assert all(outcome == outcomes[0] for outcome in outcomes), outcomes
    with pytest.raises(FileNotFoundError) as info:
        read_rollout_jsonl(missing)
    assert info.value.filename == str(missing)  # as Python's own open() names it


# ---- long names ----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_destination_of_255_bytes_is_written(engine: str, tmp_path: Path, suffix: str) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROWS)
    dest = tmp_path / long_name(suffix)
    assert len(os.fsencode(dest.name)) == NAME_MAX
    dest.write_bytes(b"old")  # replaced
    normalise_rollout_file(src, dest)
    assert output_of(dest) == expected_of(dest)
    assert temp_files(tmp_path) == []


def test_a_parquet_file_of_255_bytes_whose_schema_widens(engine: str, tmp_path: Path) -> None:
    """Widening moves the groups written aside (``.old.tmp`` after the temporary's name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from agent_rollout import arrow

    src = tmp_path / "rows.jsonl"
    first = b'{"prompt":[{"role":"user","content":"' + b"p" * 200 + b'"}]}\n'
    src.write_bytes(first * 6000 + b'{"prompt":[{"role":"user","content":"c","name":"x"}]}\n')
    dest = tmp_path / long_name(".parquet")
    removed: list[str] = []
    remove_temp = arrow.parquet.remove_temp

    def remove(path: str) -> None:
        removed.append(os.path.basename(path))
        remove_temp(path)

    with pytest.MonkeyPatch.context() as patch:
        patch_arrow(patch, "ROW_GROUP_ROWS", 100)
        patch_arrow(patch, "remove_temp", remove)
        normalise_rollout_file(src, dest)
    (aside,) = removed  # the groups moved aside, copied back and removed
    assert aside.startswith(".n") and aside.endswith(".old.tmp")
    assert len(os.fsencode(aside)) <= NAME_MAX
    table = pq.read_table(pa.BufferReader(dest.read_bytes()))
    assert table.num_rows == 6001
    assert table.column("prompt")[6000].as_py() == [{"role": "user", "content": "c", "name": "x"}]
    assert pq.ParquetFile(pa.BufferReader(dest.read_bytes())).metadata.num_row_groups >= 2
    assert temp_files(tmp_path) == []


def test_the_run_command_writes_a_destination_of_255_bytes(
    engine: str, tmp_path: Path, cli: Cli
) -> None:
    config = write_config(tmp_path, OFFLINE)
    dest = tmp_path / long_name(".jsonl")
    result = cli("run", str(config), "--prompts", str(BUNDLED_PROMPTS), "-o", str(dest))
    assert result.code == 0, result.err
    assert dest.read_bytes() == expected_offline_bytes()
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        (long_name(".jsonl"), TEMP_NAME_KEEP),
        # The cut falls inside a character: none of it is kept.
        ("a" * (TEMP_NAME_KEEP - 1) + "é" * 20 + ".jsonl", TEMP_NAME_KEEP - 1),
        (not_utf8("é" * 249 + ".jsonl"), TEMP_NAME_KEEP),
        (not_utf8("sortie-é.jsonl"), len("sortie-é.jsonl")),  # one byte for é
    ],
)
def test_both_engines_name_the_temporary_file_alike(tmp_path: Path, name: str, kept: int) -> None:
    """Seen while the file is written (the progress calls come then): hidden, beside the
    destination, named after it as far as ``TEMP_NAME_KEEP`` bytes go, within 255 bytes."""
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROWS)
    dest = tmp_path / name
    stem = temp_stem(name)
    assert os.fsencode(stem) == os.fsencode(name)[:kept]
    seen: list[list[str]] = []

    def look(*_: int) -> None:
        seen.append(temp_files(tmp_path))

    for engine in ENGINES:
        seen.clear()
        with use_engine(engine):
            normalise_rollout_file(src, dest, progress=look)
        (temp,) = seen[-1]
        assert temp.startswith(f".{stem}.{os.getpid()}.") and temp.endswith(".tmp"), engine
        assert len(os.fsencode(temp)) <= NAME_MAX - len(".old.tmp")
        assert dest.read_bytes() == EXPECTED
        assert temp_files(tmp_path) == []


def test_the_kept_part_of_a_name() -> None:
    assert temp_stem("rows.jsonl") == "rows.jsonl"
    assert temp_stem("x" * TEMP_NAME_KEEP) == "x" * TEMP_NAME_KEEP
    assert temp_stem("x" * NAME_MAX) == "x" * TEMP_NAME_KEEP
    # A two-byte character across the cut goes, and so do the four of one there.
    assert temp_stem("x" * (TEMP_NAME_KEEP - 1) + "é" * 40) == "x" * (TEMP_NAME_KEEP - 1)
    assert temp_stem("x" * (TEMP_NAME_KEEP - 2) + "😀" * 20) == "x" * (TEMP_NAME_KEEP - 2)
    # Bytes that are not UTF-8 are cut where they fall (at most 3 taken back).
    assert os.fsencode(temp_stem(os.fsdecode(b"\x80" * NAME_MAX))) == b"\x80" * (TEMP_NAME_KEEP - 3)
    assert os.fsencode(temp_stem(os.fsdecode(b"\xe9" * NAME_MAX))) == b"\xe9" * TEMP_NAME_KEEP
