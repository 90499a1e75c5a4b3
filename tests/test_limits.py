"""The input limits of rollout files: ``max_bytes`` (after decompression) and ``max_rows``.

Both engines, both file functions and the ``normalise`` command; the texts
name the file, the line, the limit and how to raise it.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from agent_rollout import (
    RolloutFileError,
    _engine,
    normalise_rollout_file,
    normalise_rollout_rows,
    read_rollout_jsonl,
)
from agent_rollout._limits import MAX_BYTES_LIMIT, MAX_ROLLOUT_BYTES
from support import Cli, temp_files

ROW = b'{"prompt":"a"}\n'  # 15 bytes


def too_large(src: Path, line: int, limit: int) -> str:
    noun = "byte" if limit == 1 else "bytes"
    return (
        f"{src}:{line}: more than {limit:,} {noun} after gzip decompression, blank lines "
        f"included (max_bytes={limit}; raise the limit with max_bytes= or --max-bytes)"
    )


def refused(src: Path, dst: Path, **limits: int) -> tuple[str, str]:
    """Both functions refuse ``src``; their two texts (the destination stays as it was)."""
    dst.write_bytes(b"old\n")
    with pytest.raises(RolloutFileError) as read:
        read_rollout_jsonl(src, **limits)
    with pytest.raises(RolloutFileError) as normalised:
        normalise_rollout_file(src, dst, **limits)
    assert dst.read_bytes() == b"old\n"
    assert temp_files(dst.parent) == []
    return str(read.value), str(normalised.value)


def test_the_default_is_4_gib() -> None:
    assert MAX_ROLLOUT_BYTES == 4 * 1024**3
    assert MAX_BYTES_LIMIT == 2**40


@pytest.mark.parametrize("compressed", [False, True])
def test_exactly_at_the_limit_is_accepted_one_byte_less_is_not(
    engine: str, tmp_path: Path, compressed: bool
) -> None:
    data = ROW * 3
    src = tmp_path / ("rows.jsonl.gz" if compressed else "rows.jsonl")
    src.write_bytes(gzip.compress(data) if compressed else data)
    assert len(read_rollout_jsonl(src, max_bytes=len(data))) == 3
    report = normalise_rollout_file(src, tmp_path / "out.jsonl", max_bytes=len(data))
    assert (report.rows, report.bytes_in) == (3, len(data))
    for limit, line in ((len(data) - 1, 3), (30, 3), (29, 2), (15, 2), (14, 1), (1, 1)):
        texts = refused(src, tmp_path / "kept.jsonl", max_bytes=limit)
        assert texts == (too_large(src, line, limit),) * 2


def test_blank_lines_count(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "blank.jsonl"
    src.write_bytes(ROW + b"\n" * 100 + ROW)
    assert len(read_rollout_jsonl(src, max_bytes=130)) == 2
    assert refused(src, tmp_path / "kept.jsonl", max_bytes=129)[0] == too_large(src, 102, 129)


def test_a_bad_row_before_the_limit_is_reported_first(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW + b'{"prompt":1}\n' + ROW * 10)
    expected = f"{src}:2: row 1: prompt: must be a str or a list of chat messages, got 'int'"
    with pytest.raises(ValueError) as read:
        read_rollout_jsonl(src, max_bytes=40)
    with pytest.raises(ValueError) as normalised:
        normalise_rollout_file(src, tmp_path / "out.jsonl", max_bytes=40)
    assert str(read.value) == str(normalised.value) == expected


def test_the_row_cap_within_the_limit_is_reported_first(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW * 10)
    texts = refused(src, tmp_path / "kept.jsonl", max_rows=2, max_bytes=100)
    assert texts[0] == (
        f"{src}:3: more than 2 rows (max_rows=2; raise the limit with max_rows= or --max-rows)"
    )


def test_a_gzip_bomb_of_blank_lines_is_stopped(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "bomb.jsonl.gz"
    src.write_bytes(gzip.compress(ROW + b"\n" * 200_000_000, compresslevel=9))
    assert src.stat().st_size < 300_000  # a small file that expands to 200 MB
    texts = refused(src, tmp_path / "kept.jsonl", max_bytes=5_000_000)
    assert texts == (too_large(src, 4_999_987, 5_000_000),) * 2


def test_a_gzip_bomb_of_rows_writes_nothing(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl.gz"
    src.write_bytes(gzip.compress(ROW * 1_000_000))  # 15 MB of valid rows
    out = tmp_path / "out.jsonl"
    with pytest.raises(RolloutFileError) as info:
        normalise_rollout_file(src, out, max_rows=10_000_000, max_bytes=1_000_000)
    assert str(info.value) == too_large(src, 66_667, 1_000_000)
    assert not out.exists()
    assert temp_files(tmp_path) == []


def test_a_long_line_at_the_limit(engine: str, tmp_path: Path) -> None:
    """A line cut by the limit is refused for the limit, not looked at."""
    src = tmp_path / "long.jsonl"
    src.write_bytes(ROW + b'{"prompt":"' + b"x" * 3_000_000 + b'"}\n')
    assert refused(src, tmp_path / "kept.jsonl", max_bytes=2_000_000)[1] == too_large(
        src, 2, 2_000_000
    )


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ValueError, f"max_bytes must be in [1, {MAX_BYTES_LIMIT}], got 0"),
        (MAX_BYTES_LIMIT + 1, ValueError, f"max_bytes must be in [1, {MAX_BYTES_LIMIT}], got "),
        (True, TypeError, "max_bytes must be an int, got bool"),
        ("10", TypeError, "max_bytes must be an int, got str"),
        (1.5, TypeError, "max_bytes must be an int, got float"),
    ],
)
def test_bad_max_bytes_values(
    engine: str, tmp_path: Path, value: object, error: type[Exception], message: str
) -> None:
    missing = tmp_path / "absent.jsonl"  # checked before the file is opened
    for call in (
        lambda: read_rollout_jsonl(missing, max_bytes=value),  # type: ignore[arg-type]
        lambda: normalise_rollout_file(missing, tmp_path / "o", max_bytes=value),  # type: ignore[arg-type]
    ):
        with pytest.raises(error) as info:
            call()
        assert str(info.value).startswith(message)


def test_singular_limits(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW * 2)
    texts = refused(src, tmp_path / "kept.jsonl", max_rows=1)
    assert texts[0] == (
        f"{src}:2: more than 1 row (max_rows=1; raise the limit with max_rows= or --max-rows)"
    )
    assert refused(src, tmp_path / "kept.jsonl", max_bytes=1)[0] == too_large(src, 1, 1)
    with pytest.raises(ValueError) as info:
        normalise_rollout_rows([{"prompt": "a"}] * 2, max_rows=1)
    assert (
        str(info.value) == "rollout backend 'openenv' produced more than 1 row (max_rows=1; "
        "raise the limit with max_rows= or --max-rows)"
    )


# ---- the command ----------------------------------------------------------------------------


def test_max_bytes_on_the_command_line(engine: str, tmp_path: Path, cli_bytes: Cli) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW * 100)  # 1,500 bytes
    ok = cli_bytes("normalise", str(src), "--max-bytes", "2KiB")
    assert ok.code == 0, ok.err
    assert ok.out == ROW * 100
    over = cli_bytes("normalise", str(src), "--max-bytes", "1000")
    assert over.code == 1
    # The command line names its own flag where the library names its argument.
    flag = "max_bytes= or --max-bytes"
    assert over.err.decode() == too_large(src, 67, 1000).replace(flag, "--max-bytes B") + "\n"
    rows = cli_bytes("normalise", str(src), "--max-rows", "1")
    assert rows.code == 1
    assert "more than 1 row (max_rows=1; raise the limit with --max-rows N)" in rows.err.decode()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "must be in [1, 1,099,511,627,776], got 0"),
        ("2TiB", "must be in [1, 1,099,511,627,776], got 2,199,023,255,552"),
        ("1.5GiB", "expected a number of bytes (e.g. 500000000, 512MiB, 8GiB), got '1.5GiB'"),
        ("10 bytes", "expected a number of bytes"),
        ("-5", "expected a number of bytes"),
    ],
)
def test_bad_max_bytes_on_the_command_line(
    tmp_path: Path, value: str, message: str, cli: Cli
) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_bytes(ROW)
    result = cli("normalise", str(src), f"--max-bytes={value}")
    assert result.code == 2
    assert message in result.err


def test_byte_count_units() -> None:
    from agent_rollout.cli._args import byte_count

    assert byte_count("123") == 123
    assert byte_count("4k") == byte_count("4KiB") == 4096
    assert byte_count("512MiB") == 512 * 1024**2
    assert byte_count("8G") == byte_count("8gib") == 8 * 1024**3
    assert byte_count("1TiB") == 1024**4


@pytest.mark.skipif(not _engine.native_available(), reason="the Rust engine is not built")
def test_the_native_depth_limits_stop_at_a_depth_the_stack_holds(tmp_path: Path) -> None:
    # The limits handed to the Rust engine are made in Python (64 and 128); a
    # private caller passing a larger one once let a line 20,000 levels deep
    # overflow a worker's stack (a segfault). Now at most MAX_NESTING, where
    # every reader and walker holds, in the unoptimised build too (nested
    # objects take the most stack a level there).
    native = _engine.native
    ceiling = 256

    def limits(max_depth: int, json_depth: int) -> object:
        return native.FileLimits(
            max_rows=10, max_bytes=1 << 30, max_depth=max_depth, json_depth=json_depth,
            max_int_digits=4300, max_line_bytes=1 << 26,
        )  # fmt: skip

    for name, args in (("max_depth", (ceiling + 1, 128)), ("json_depth", (64, 20_000))):
        with pytest.raises(ValueError, match=f"{name} must be at most {ceiling}, got"):
            limits(*args)
    for call in (
        lambda: native.normalise_rows([], 10, ceiling + 1),
        lambda: native.rows_to_arrow([], 0, 100, 1 << 30, 10, ceiling + 1, 4300, 64, 32, True),
    ):
        with pytest.raises(ValueError, match=f"max_depth must be at most {ceiling}, got"):
            call()

    def objects(levels: int) -> str:
        return '{"k": ' * (levels - 1) + "{}" + "}" * (levels - 1)

    # As deep as the limits let through: the row is level 1, the prompt list 2,
    # a message 3, so a message's value may hold ceiling - 3 levels, a
    # top-level value ceiling - 1. Values of an extra message key (typed and
    # built into Arrow), of a content (JSON text in Arrow) and of a dropped key
    # (stepped over). Typed as deep as they go (typed_depth=ceiling), so the
    # typing walks every level.
    at_ceiling = limits(ceiling, ceiling)
    deep = ceiling - 3
    lines = {
        "extra key": f'{{"prompt": [{{"role": "user", "content": "x", "m": {objects(deep)}}}]}}',
        "content": f'{{"prompt": [{{"role": "user", "content": {objects(deep)}}}]}}',
        "dropped key": f'{{"prompt": "x", "extra": {objects(ceiling - 1)}}}',
    }
    for case, line in lines.items():
        src = tmp_path / "deep.jsonl"
        src.write_text(line + "\n")
        assert len(native.read_jsonl(str(src), at_ceiling)) == 1, case
        batches: list[object] = []
        native.read_jsonl_arrow(str(src), at_ceiling, 0, 64, ceiling, batches.append)
        assert len(batches) == 1, case
        dest = tmp_path / "deep.out.jsonl"
        stats = native.normalise_file(str(src), str(dest), "file", -1, at_ceiling)
        assert stats.rows == 1, case
        # One level more is refused, as an input error (not a crash).
        src.write_text(line.replace('"k": {}', '"k": {"k": {}}', 1) + "\n")
        with pytest.raises(native.NativeRowError) as refused:
            native.read_jsonl(str(src), at_ceiling)
        assert refused.value.args[0] == "json_syntax" and refused.value.args[3] == "too_deep"

    value: dict = {}
    for _ in range(ceiling - 2):  # the message is level 1 of max_depth
        value = {"k": value}
    deep_rows = [{"prompt": [{"role": "user", "content": "x", "m": value}]}]
    assert len(native.normalise_rows(deep_rows, 10, ceiling)) == 1
    assert (
        native.rows_to_arrow(deep_rows, 0, 100, 1 << 30, 10, ceiling, 4300, 64, ceiling, True)
        is not None
    )
    deeper = [{"prompt": [{"role": "user", "content": "x", "m": {"k": value}}]}]
    with pytest.raises(native.NativeRowError) as refused:
        native.normalise_rows(deeper, 10, ceiling)
    assert refused.value.args[0] == "too_deep"
