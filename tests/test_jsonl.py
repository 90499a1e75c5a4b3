"""Rollout JSONL files: every bad-file case with its exact message, on both engines.

``read_rollout_jsonl`` and ``normalise_rollout_file`` must refuse the same files with
the same text, name the file and line (and column, for bad JSON), and never leave a
half-written destination behind. The property tests live in ``test_jsonl_parity.py``.
"""

from __future__ import annotations

import array
import fcntl
import gzip
import json
import os
import re
import subprocess
import sys
import termios
import threading
import time
import zlib
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Optional

import pytest

from agent_rollout import (
    MAX_LINE_BYTES,
    MAX_ROWS_LIMIT,
    AgentRolloutError,
    NormaliseReport,
    RolloutFileError,
    RolloutRowError,
    normalise_rollout_file,
    read_rollout_jsonl,
)
from support import ENGINES, canonical, compare_engines, gzip_member, temp_files, use_engine

GOOD = b'{"prompt":"ok"}\n'
NO_ROWS = "no rows (the file is empty or blank); refusing to train on an empty prompt set"
NOT_GZIP = "not a valid gzip file (corrupt or truncated)"
NATIVE = pytest.mark.skipif("rust" not in ENGINES, reason="the Rust engine is not built")


def write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def both_fail(src: Path, error: type[Exception], message: str, **kwargs: Any) -> list[Exception]:
    """Both functions raise ``error`` with ``message``; the destination is left alone."""
    dst = src.parent / "kept.jsonl"
    dst.write_bytes(b"earlier output\n")
    fresh = src.parent / "fresh.jsonl"
    errors = []
    for call in (
        lambda: read_rollout_jsonl(src, **kwargs),
        lambda: normalise_rollout_file(src, dst, **kwargs),
        lambda: normalise_rollout_file(src, fresh, **kwargs),
    ):
        with pytest.raises(error) as info:
            call()
        assert type(info.value) is error
        assert str(info.value) == message
        errors.append(info.value)
    assert dst.read_bytes() == b"earlier output\n"
    assert not fresh.exists()
    assert temp_files(src.parent) == []
    return errors


def file_error(
    src: Path, message: str, code: str, line: Optional[int], column: Optional[int] = None, **kw: Any
) -> None:
    for err in both_fail(src, RolloutFileError, f"{src}{message}", **kw):
        assert isinstance(err, RolloutFileError)
        assert (err.code, err.line, err.column, err.source) == (code, line, column, str(src))


def row_error(src: Path, message: str, index: int, path: str, line: int, code: str) -> None:
    for err in both_fail(src, RolloutRowError, f"{src}:{message}"):
        assert isinstance(err, RolloutRowError)
        assert (err.index, err.path, err.line, err.code) == (index, path, line, code)


# ---- bad bytes, bad JSON -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "line", "byte"),
    [
        (GOOD + b'{"prompt":"caf\xe9"}\n', 2, 15),
        (b'{"prompt":"\xc3"}\n', 1, 12),  # a two-byte sequence cut short
        (b'{"prompt":"\xed\xa0\x80"}\n', 1, 12),  # a UTF-16 surrogate written as UTF-8
        (GOOD + b"\n" + GOOD + b'{"prompt":"x","k":"\xff"}', 4, 20),
        (GOOD + b'{"prompt":"\xf0\x9f\x98"}\n', 2, 12),  # a four-byte sequence cut short
    ],
)
def test_bad_utf8_names_the_line_and_the_byte(
    engine: str, tmp_path: Path, data: bytes, line: int, byte: int
) -> None:
    src = write(tmp_path, "rows.jsonl", data)
    file_error(src, f":{line}: invalid UTF-8 at byte {byte} of the line", "utf8", line=line)


@pytest.mark.parametrize(
    ("data", "where", "reason"),
    [
        # a truncated last line, cut at different places: what it ends inside, at its end
        # (a string: where the string starts)
        (GOOD + b'{"prompt":"tr', "2:11", "the line ends inside a string"),
        (GOOD + b'{"prompt":"x"', "2:14", "the line ends inside an object"),
        (GOOD + b'{"prompt":', "2:11", "the line ends inside an object"),
        (GOOD + b'{"prompt"', "2:10", "the line ends inside an object"),
        (GOOD + b'{"prompt":"x",', "2:15", "the line ends inside an object"),
        (GOOD + b'{"prompt":[{"role":"u"}', "2:24", "the line ends inside an array"),
        (GOOD + b'{"prompt":[', "2:12", "the line ends inside an array"),
        (GOOD + b'{"prompt":[1, \r\n', "2:16", "the line ends inside an array"),
        # the same expectations inside the line: what was expected there
        (b'{"prompt":"x" "a":1}', "1:15", "expected ',' or '}' after an object member"),
        (b'{"prompt" 1}', "1:11", "expected ':' after an object key"),
        (b'{"prompt":[{"role":"u"} 2]}', "1:25", "expected ',' or ']' after an array item"),
        (GOOD + b'{"prompt":"x","answer":1.', "2:24", "invalid number"),
        (GOOD + b'{"prompt":"x\\', "2:13", "invalid escape in string"),
        # columns count characters, not bytes
        ('{"prompt":"é😀",}'.encode(), "1:16", "expected a string key in double quotes"),
        (b'{"prompt":"x"} {}', "1:16", "unexpected data after the JSON value"),
        (b'{"prompt":"x"}\r{"prompt":"y"}\n', "1:16", "unexpected data after the JSON value"),
        (b'{"prompt":"\\q"}', "1:12", "invalid escape in string"),
        (b'{"prompt":"\\u12G4"}', "1:12", "invalid \\u escape (four hex digits expected)"),
        (b'{"prompt":"\\ud800"}', "1:12", "lone surrogate in \\u escape"),
        (b'{"prompt":"\\ud800\\u0041"}', "1:12", "lone surrogate in \\u escape"),
        (b'{"prompt":"\\udc00\\ud800"}', "1:12", "lone surrogate in \\u escape"),
        (b'{"prompt":"a\tb"}', "1:13", "control character in string (must be escaped)"),
        (b'{"prompt":"x","k":NaN}', "1:19", "NaN and Infinity are not JSON"),
        (b'{"prompt":"x","k":[-Infinity]}', "1:20", "NaN and Infinity are not JSON"),
        (b'{"prompt":"x","k":Infinity}', "1:19", "NaN and Infinity are not JSON"),
        (b'{"prompt":"x","k":01}', "1:20", "expected ',' or '}' after an object member"),
        (b'{"prompt":"x","k":-}', "1:19", "invalid number"),
        (b'{"prompt":"x","k":1e}', "1:19", "invalid number"),
        (b"{'prompt':'x'}", "1:2", "expected a string key in double quotes"),
        (b'{"prompt":"x",}', "1:15", "expected a string key in double quotes"),
        (b'{"prompt":tru}', "1:11", "expected a JSON value"),
        (b"\x0b" + GOOD, "1:1", "expected a JSON value"),
        (
            b"\xef\xbb\xbf" + GOOD,
            "1:1",
            "the line starts with a UTF-8 byte order mark (BOM); write the file without one",
        ),
    ],
)
def test_bad_json_names_line_column_and_reason(
    engine: str, tmp_path: Path, data: bytes, where: str, reason: str
) -> None:
    src = write(tmp_path, "rows.jsonl", data)
    line, column = map(int, where.split(":"))
    file_error(src, f":{where}: invalid JSON: {reason}", "json_syntax", line=line, column=column)


def test_nesting_and_integer_limits(engine: str, tmp_path: Path) -> None:
    deep = b'{"prompt":"x","k":' + b"[" * 127 + b"]" * 127 + b"}"
    src = write(tmp_path, "deep.jsonl", GOOD + deep + b"\n")
    assert read_rollout_jsonl(src) == ({"prompt": "ok"}, {"prompt": "x"})
    deeper = b'{"prompt":"x","k":' + b"[" * 128 + b"]" * 128 + b"}"
    src = write(tmp_path, "deeper.jsonl", GOOD + deeper + b"\n")
    message = ":2:146: invalid JSON: nested deeper than 128 levels (MAX_JSON_DEPTH)"
    file_error(src, message, "json_syntax", line=2, column=146)

    digits = b"-" + b"9" * 4300
    src = write(tmp_path, "int.jsonl", b'{"prompt":[{"role":"u","n":' + digits + b"}]}\n")
    (row,) = read_rollout_jsonl(src)
    assert row["prompt"][0]["n"] == -int("9" * 4300)
    out = tmp_path / "int.out.jsonl"
    normalise_rollout_file(src, out)
    assert out.read_bytes() == b'{"prompt":[{"role":"u","n":' + digits + b"}]}\n"
    src = write(tmp_path, "long.jsonl", b'{"prompt":"x","n":' + b"1" * 4301 + b"}\n")
    message = (
        ":1:19: invalid JSON: integer has more than 4300 digits (sys.get_int_max_str_digits())"
    )
    file_error(src, message, "json_syntax", line=1, column=19)


# ---- lines that are not rows -------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b"[1,2]", "list"),
        (b'"prompt"', "str"),
        (b"null", "NoneType"),
        (b"42", "int"),
        (b"4.5", "float"),
        (b"true", "bool"),
        (b'[{"prompt":"x"}]', "list"),
    ],
)
def test_a_line_that_is_not_an_object(engine: str, tmp_path: Path, line: bytes, kind: str) -> None:
    src = write(tmp_path, "rows.jsonl", GOOD + b"\n" + line + b"\n" + GOOD)
    message = f"3: row 1: a rollout row must be a mapping with a 'prompt' key, got {kind!r}"
    row_error(src, message, index=1, path="", line=3, code="row_not_mapping")


ANSWER = "must be a str or None, got"
NON_FINITE = "non-finite float inf (message values must be JSON-like: NaN and infinities are not)"


@pytest.mark.parametrize(
    ("line", "message", "path", "code"),
    [
        (b"{}", "missing (every row needs a 'prompt': a str or a list of chat messages)", "prompt",
         "prompt_missing"),
        (b'{"prompt":""}', "empty prompt (a non-empty str or at least one message is required)",
         "prompt", "prompt_empty"),
        (b'{"prompt":{"role":"u"}}', "must be a str or a list of chat messages, got 'dict'",
         "prompt", "prompt_type"),
        (b'{"prompt":["hi"]}', "a chat message must be a mapping with str keys, got 'str'",
         "prompt[0]", "message_not_mapping"),
        (b'{"prompt":[{"role":"u"},{"content":"x"}]}',
         "a chat message needs a 'role' (a non-empty str)", "prompt[1]", "role_missing"),
        (b'{"prompt":[{"role":""}]}', "must be a non-empty str, got ''", "prompt[0].role",
         "role_empty"),
        (b'{"prompt":[{"role":7}]}', "must be a non-empty str, got 'int'", "prompt[0].role",
         "role_type"),
        (b'{"prompt":"x","answer":5}', f"{ANSWER} 'int'", "answer", "answer_type"),
        (b'{"prompt":"x","answer":["a"]}', f"{ANSWER} 'list'", "answer", "answer_type"),
        (b'{"prompt":[{"role":"u","a b":{"k":[1,1e400]}}]}', NON_FINITE,
         'prompt[0]["a b"].k[1]', "float_not_finite"),
        (b'{"prompt":[{"role":"u","content":' + b"[" * 64 + b"]" * 64 + b"}]}",
         "nested deeper than 64 levels (MAX_MESSAGE_DEPTH), or a container that holds itself",
         "prompt[0].content" + "[0]" * 63, "too_deep"),
        # a repeated key: the last value counts, as in a Python dict
        (b'{"prompt":"x","prompt":5}', "must be a str or a list of chat messages, got 'int'",
         "prompt", "prompt_type"),
    ],
)  # fmt: skip
def test_a_row_that_breaks_a_rule(
    engine: str, tmp_path: Path, line: bytes, message: str, path: str, code: str
) -> None:
    src = write(tmp_path, "rows.jsonl", GOOD + b"  \r\n" + GOOD + line + b"\r\n" + GOOD)
    row_error(src, f"4: row 2: {path}: {message}", index=2, path=path, line=4, code=code)


def test_the_issue_example(engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "rollouts.jsonl", GOOD + b'{"prompt":"x","answer":3}\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RolloutRowError) as info:
        read_rollout_jsonl("rollouts.jsonl")
    assert str(info.value) == "rollouts.jsonl:2: row 1: answer: must be a str or None, got 'int'"
    assert (info.value.index, info.value.path, info.value.line) == (1, "answer", 2)


# ---- the row cap -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "last",
    [
        GOOD,
        b'{"prompt":5}',
        b"[]",
        b'{"prompt":"\xff"}',
        b'{"prompt":',
        b'{"prompt":"x","k":NaN}',
        b"[" * 200,
    ],
)
def test_reading_stops_at_the_cap(engine: str, tmp_path: Path, last: bytes) -> None:
    """Row ``max_rows + 1`` is never looked at: the cap is what gets reported."""
    data = GOOD + b"\n" + GOOD + b" \n" + last + b"\n"
    src = write(tmp_path, "rows.jsonl", data)
    message = ":5: more than 2 rows (max_rows=2; raise the limit with max_rows= or --max-rows)"
    file_error(src, message, "file_too_many_rows", line=5, max_rows=2)


def test_blank_lines_after_the_last_row_do_not_count(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "rows.jsonl", GOOD * 2 + b"\n \r\n\t")
    assert read_rollout_jsonl(src, max_rows=2) == ({"prompt": "ok"},) * 2
    report = normalise_rollout_file(src, tmp_path / "out.jsonl", max_rows=2)
    assert (report.rows, report.lines, report.blank_lines) == (2, 5, 3)


def test_the_default_cap_is_100_000(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "rows.jsonl", b'{"prompt":"p"}\n' * 100_001)
    with pytest.raises(RolloutFileError) as info:
        read_rollout_jsonl(src)
    assert (
        str(info.value)
        == f"{src}:100001: more than 100,000 rows (max_rows=100000; raise the limit with "
        "max_rows= or --max-rows)"
    )
    os.truncate(src, 15 * 100_000)
    assert len(read_rollout_jsonl(src)) == 100_000


# ---- blank lines, line endings, empty files ----------------------------------------------


def test_blank_lines_are_skipped_and_counted(engine: str, tmp_path: Path) -> None:
    data = b'\n \n{"prompt":"a","x":1}\r\n\t\r\n \t \n{"prompt":"b","answer":"c"}\n\r\n'
    src = write(tmp_path, "rows.jsonl", data)
    assert read_rollout_jsonl(src) == ({"prompt": "a"}, {"prompt": "b", "answer": "c"})
    dst = tmp_path / "out.jsonl"
    report = normalise_rollout_file(src, dst)
    assert dst.read_bytes() == b'{"prompt":"a"}\n{"prompt":"b","answer":"c"}\n'
    assert report == NormaliseReport(
        rows=2,
        lines=7,
        blank_lines=5,
        dropped_keys=1,
        bytes_in=len(data),
        bytes_out=len(dst.read_bytes()),
        seconds=report.seconds,
        engine=engine,
    )
    assert report.seconds >= 0


@pytest.mark.parametrize("data", [b"", b"\n", b" \r\n\t\n\n", b"   "])
def test_a_file_without_rows_is_refused(engine: str, tmp_path: Path, data: bytes) -> None:
    src = write(tmp_path, "empty.jsonl", data)
    file_error(src, f": {NO_ROWS}", "file_no_rows", line=None)
    src = write(tmp_path, "empty.jsonl.gz", gzip.compress(data))
    file_error(src, f": {NO_ROWS}", "file_no_rows", line=None)


def test_a_last_line_without_newline_is_a_row(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "rows.jsonl", GOOD + b'{"prompt":"last"}')
    assert read_rollout_jsonl(src) == ({"prompt": "ok"}, {"prompt": "last"})
    report = normalise_rollout_file(src, tmp_path / "out.jsonl")
    assert (tmp_path / "out.jsonl").read_bytes() == GOOD + b'{"prompt":"last"}\n'
    assert (report.rows, report.lines, report.bytes_in) == (2, 2, len(GOOD) + 17)


# ---- canonical output --------------------------------------------------------------------


def test_canonical_output_is_exact(engine: str, tmp_path: Path) -> None:
    line = (
        r'{ "extra" : [1e400, {"x": "nan"}], "answer": "", "prompt" : [ {"role":"u",'
        r'"v":[-0.0,1e16,5e-324,1e-7,0.0001,1e-5,1E2,0.1e1,-0,12345678901234567890,'
        r"1.5e300,0.30000000000000004,2.5e-8,123456789012345678.0],"
        r'"s":"\u00e9\u0000\/\ud83d\ude00\u2028\"\\\t\u001f\u007f", "n":null,"b":[true,false],'
        r'"role":"assistant","o":{}} ] }'
    )
    src = write(tmp_path, "rows.jsonl", line.encode() + b"\n")
    want = (
        '{"prompt":[{"role":"assistant","v":[-0.0,1e+16,5e-324,1e-07,0.0001,1e-05,100.0,1.0,'
        "0,12345678901234567890,1.5e+300,0.30000000000000004,2.5e-08,1.2345678901234568e+17],"
        '"s":"é\\u0000/😀\u2028\\"\\\\\\t\\u001f\x7f","n":null,"b":[true,false],"o":{}}]}\n'
    )
    dst = tmp_path / "out.jsonl"
    report = normalise_rollout_file(src, dst)
    assert dst.read_bytes() == want.encode()
    assert report.dropped_keys == 1
    (row,) = read_rollout_jsonl(src)
    assert canonical([row]) == want.encode()
    values = row["prompt"][0]["v"]
    assert [type(v) for v in values[:8]] == [float] * 8
    assert str(values[0]) == "-0.0" and values[8] == 0 and type(values[8]) is int


# ---- gzip --------------------------------------------------------------------------------


def gz_rows(count: int) -> bytes:
    return b"".join(b'{"prompt":"p%d","answer":"a","x":1}\n' % i for i in range(count))


def test_gzip_input_reads_like_plain_input(engine: str, tmp_path: Path) -> None:
    data = gz_rows(500) + b"\n"
    plain = write(tmp_path, "rows.jsonl", data)
    packed = write(tmp_path, "rows.jsonl.gz", gzip.compress(data))
    two_members = write(tmp_path, "two.gz", gzip.compress(data[:300]) + gzip.compress(data[300:]))
    want = read_rollout_jsonl(plain)
    assert len(want) == 500 and want[7] == {"prompt": "p7", "answer": "a"}
    for src in (packed, two_members):
        assert read_rollout_jsonl(src) == want
        report = normalise_rollout_file(src, tmp_path / "out.jsonl")
        assert (tmp_path / "out.jsonl").read_bytes() == canonical(want)
        assert (report.rows, report.lines, report.blank_lines) == (500, 501, 1)
        assert (report.dropped_keys, report.bytes_in) == (500, len(data))


def test_gzip_errors_keep_their_line_numbers(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "rows.jsonl.gz", gzip.compress(GOOD + b'{"prompt":[]}\n'))
    message = "2: row 1: prompt: empty prompt (a non-empty str or at least one message is required)"
    row_error(src, message, index=1, path="prompt", line=2, code="prompt_empty")


def corrupt_gzip_cases() -> list[Any]:
    packed = gzip.compress(gz_rows(50))
    middle = bytearray(packed)
    middle[len(middle) // 2] ^= 0xFF
    crc = bytearray(packed)
    crc[-6] ^= 0xFF
    return [
        pytest.param(packed[: len(packed) // 2], id="truncated-half"),
        pytest.param(packed[:-1], id="truncated-trailer"),
        pytest.param(packed[:12], id="header-only"),
        pytest.param(b"\x1f\x8b", id="magic-only"),
        pytest.param(bytes(crc), id="bad-crc"),
        pytest.param(packed + b"garbage", id="trailing-garbage"),
    ]


@pytest.mark.parametrize("data", corrupt_gzip_cases())
def test_a_corrupt_gzip_file_is_refused(engine: str, tmp_path: Path, data: bytes) -> None:
    src = write(tmp_path, "rows.jsonl.gz", data)
    file_error(src, f": {NOT_GZIP}", "gzip", line=None)


def test_damage_inside_the_deflate_data_is_refused(engine: str, tmp_path: Path) -> None:
    """A flipped byte inside the compressed data: both engines refuse the file.

    Known, documented difference: both decoders are zlib (CPython's; zlib-rs in
    Rust), but they decode in pieces of different sizes and drop the output of
    the piece that fails, so in a file of more than one piece one engine may
    first report garbled text before the damage as invalid JSON and the other
    the gzip error. Which rows come before the damage is the same.
    """
    packed = bytearray(gzip.compress(gz_rows(50)))
    packed[len(packed) // 2] ^= 0xFF
    src = write(tmp_path, "rows.jsonl.gz", bytes(packed))
    with pytest.raises(RolloutFileError) as info:
        read_rollout_jsonl(src)
    assert info.value.code in ("gzip", "json_syntax", "utf8")
    assert str(info.value).startswith(str(src))


@NATIVE
def test_damage_in_a_small_gzip_file_fails_alike(tmp_path: Path) -> None:
    """A file decoded in one piece: whichever byte is damaged, both engines give the
    same rows or the same first error (the Rust engine's former decoder, miniz_oxide,
    let a match reach back past the start of the output and copied zeros where zlib
    refuses: a gzip error on one engine, invalid JSON on the other)."""
    packed = gzip.compress(gz_rows(20) + BAD_ROW_FIRST, mtime=0)
    src = tmp_path / "rows.jsonl.gz"
    differ = []
    for at in range(10, len(packed)):
        for flip in (0x01, 0x10, 0xFF):
            damaged = bytearray(packed)
            damaged[at] ^= flip
            src.write_bytes(damaged)
            outcome = compare_engines(lambda: read_rollout_jsonl(src, max_rows=100))
            if outcome != ("same",):
                differ.append((at, flip, outcome))
    assert differ == []
    # A match reaching back before the start: zlib's "invalid distance too far back".
    far_back = b"\x1f\x8b\x08\0\0\0\0\0\0\xff\x03\x02\x2e\x00"
    far_back += zlib.crc32(b"\0\0\0\n").to_bytes(4, "little") + (4).to_bytes(4, "little")
    with pytest.raises(zlib.error, match="too far back"):
        zlib.decompress(far_back, wbits=16 + zlib.MAX_WBITS)
    src.write_bytes(far_back)
    for name in ENGINES:
        with use_engine(name), pytest.raises(RolloutFileError) as info:
            read_rollout_jsonl(src)
        assert info.value.code == "gzip", name


BAD_ROW_FIRST = b'{"prompt":1}\n' + GOOD * 10
BAD_ROW_MESSAGE = "1: row 0: prompt: must be a str or a list of chat messages, got 'int'"


def test_rows_decoded_before_a_gzip_cut_are_checked_first(engine: str, tmp_path: Path) -> None:
    """A file cut short: the bad row before the cut is reported, as reading in order would."""
    src = write(tmp_path, "rows.jsonl.gz", gzip.compress(BAD_ROW_FIRST, mtime=0)[:-10])
    row_error(src, BAD_ROW_MESSAGE, index=0, path="prompt", line=1, code="prompt_type")


def test_gzip_zero_padding_is_accepted(engine: str, tmp_path: Path) -> None:
    """Zero bytes after the last member (tape padding) are ignored, as gzip(1) does."""
    src = write(tmp_path, "rows.jsonl.gz", gzip.compress(GOOD * 2) + b"\0" * 8)
    assert read_rollout_jsonl(src) == ({"prompt": "ok"},) * 2
    assert normalise_rollout_file(src, tmp_path / "out.jsonl").rows == 2


GZIP_HEADERS = [
    pytest.param(gzip_member(GOOD * 3, 0x1E), True, id="extra-name-comment-header-crc"),
    pytest.param(gzip_member(GOOD * 3, 0x1E, header_crc_xor=0xFFFF), False, id="wrong-header-crc"),
    pytest.param(gzip_member(GOOD * 3, 0x20), False, id="reserved-bit-5"),
    pytest.param(gzip_member(GOOD * 3, 0x40), False, id="reserved-bit-6"),
    pytest.param(gzip_member(GOOD * 3, 0x88), False, id="reserved-bit-7-and-name"),
    pytest.param(gzip_member(GOOD * 3, method=7), False, id="method-7"),
    pytest.param(gzip_member(GOOD * 3, 0x08)[:12], False, id="name-cut-short"),
]


@pytest.mark.parametrize(("data", "valid"), GZIP_HEADERS)
def test_gzip_headers_are_checked_as_zlib_checks_them(
    engine: str, tmp_path: Path, data: bytes, valid: bool
) -> None:
    """RFC 1952's header rules (reserved flag bits zero, a header CRC that matches,
    deflate) as zlib applies them, on both engines. Python's ``gzip`` module would
    read the reserved-bit and wrong-CRC files; zlib (pyarrow's and gzip(1)'s decoder)
    and the Rust engine's decoder refuse them, and so do we, with the gzip error."""
    try:
        zlib_reads = zlib.decompress(data, wbits=16 + zlib.MAX_WBITS) == GOOD * 3
    except zlib.error:
        zlib_reads = False
    assert zlib_reads == valid
    src = write(tmp_path, "rows.jsonl.gz", data)
    if valid:
        assert read_rollout_jsonl(src) == ({"prompt": "ok"},) * 3
        assert normalise_rollout_file(src, tmp_path / "out.jsonl").rows == 3
    else:
        file_error(src, f": {NOT_GZIP}", "gzip", line=None)


@pytest.mark.parametrize(("length", "valid"), [(65535, True), (65536, False)])
def test_a_gzip_header_name_is_at_most_64_kib(
    engine: str, tmp_path: Path, length: int, valid: bool
) -> None:
    """The Rust engine's decoder (flate2) refuses a name or comment of more than 65,535
    bytes; the twin draws the same line (zlib and Python's ``gzip`` have none)."""
    for flag in (0x08, 0x10):
        field = b"x" * length
        data = gzip_member(GOOD, flag, name=field, comment=field) + gzip.compress(GOOD)
        src = write(tmp_path, "rows.jsonl.gz", data)
        if valid:
            assert read_rollout_jsonl(src) == ({"prompt": "ok"},) * 2
        else:
            file_error(src, f": {NOT_GZIP}", "gzip", line=None)


@NATIVE
@pytest.mark.parametrize("flags", [0x20, 0x1E])
def test_a_bad_second_member_comes_after_the_first_members_rows(tmp_path: Path, flags: int) -> None:
    """A good member, then one refused for its header: a bad row of the first member
    is still the first problem, on both engines alike."""
    second = gzip_member(GOOD, flags, header_crc_xor=0 if flags == 0x20 else 1)
    good_first = write(tmp_path, "good.jsonl.gz", gzip.compress(GOOD * 5) + second)
    bad_first = write(tmp_path, "bad.jsonl.gz", gzip.compress(BAD_ROW_FIRST) + second)
    assert compare_engines(lambda: read_rollout_jsonl(good_first)) == ("same",)
    assert compare_engines(lambda: read_rollout_jsonl(bad_first)) == ("same",)
    with pytest.raises(RolloutFileError, match=re.escape(NOT_GZIP)):
        read_rollout_jsonl(good_first)
    with pytest.raises(RolloutRowError, match="row 0: prompt"):
        read_rollout_jsonl(bad_first)


def damaged_after_a_bad_row() -> list[Any]:
    packed = gzip.compress(BAD_ROW_FIRST, mtime=0)
    crc, size = bytearray(packed), bytearray(packed)
    crc[-6] ^= 0xFF
    size[-2] ^= 0xFF
    long = gzip.compress(GOOD * 20 + b'{"prompt":1}\n' + GOOD * 2000, mtime=0)
    middle = bytearray(long)
    middle[len(middle) // 2] ^= 0xFF
    return [
        pytest.param(bytes(crc), id="bad-crc"),
        pytest.param(bytes(size), id="bad-size"),
        pytest.param(packed + b"garbage", id="trailing-garbage"),
        pytest.param(bytes(middle), id="flipped-byte-later"),
    ]


@NATIVE
@pytest.mark.parametrize("data", damaged_after_a_bad_row())
def test_a_bad_row_before_gzip_damage_is_reported_alike(tmp_path: Path, data: bytes) -> None:
    src = write(tmp_path, "rows.jsonl.gz", data)
    assert compare_engines(lambda: read_rollout_jsonl(src)) == ("same",)


# ---- paths, OS errors, the destination ---------------------------------------------------


def test_a_missing_file(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "absent.jsonl"
    errors = both_fail(src, FileNotFoundError, f"[Errno 2] No such file or directory: '{src}'")
    assert all(isinstance(e, OSError) and e.filename == str(src) for e in errors)


def test_a_directory_as_input(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "folder"
    src.mkdir()
    errors = both_fail(src, IsADirectoryError, f"[Errno 21] Is a directory: '{src}'")
    assert all(isinstance(e, OSError) and e.errno == 21 for e in errors)


@pytest.mark.parametrize(
    ("parent", "error"),
    [("absent", FileNotFoundError), ("a_file", NotADirectoryError)],
)
def test_an_unwritable_destination(
    engine: str, tmp_path: Path, parent: str, error: type[OSError]
) -> None:
    src = write(tmp_path, "rows.jsonl", GOOD)
    write(tmp_path, "a_file", b"keep me")
    dst = tmp_path / parent / "out.jsonl"
    with pytest.raises(error) as info:
        normalise_rollout_file(src, dst)
    errno = info.value.errno
    assert errno is not None and info.value.filename == str(dst)  # not a temporary name
    assert str(info.value) == f"[Errno {errno}] {os.strerror(errno)}: '{dst}'"
    assert (tmp_path / "a_file").read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "rows.jsonl"]


def test_a_missing_input_is_named_before_an_unwritable_destination(
    engine: str, tmp_path: Path
) -> None:
    src = tmp_path / "absent.jsonl"
    with pytest.raises(FileNotFoundError) as info:
        normalise_rollout_file(src, tmp_path / "absent" / "out.jsonl")
    assert str(info.value) == f"[Errno 2] No such file or directory: '{src}'"


def test_a_directory_as_destination_leaves_nothing_behind(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "rows.jsonl", GOOD)
    dst = tmp_path / "out"
    dst.mkdir()
    with pytest.raises(IsADirectoryError) as info:
        normalise_rollout_file(src, dst)
    assert str(info.value) == f"[Errno 21] Is a directory: '{dst}'"
    assert list(dst.iterdir()) == []
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("where", ["src", "dst"])
def test_a_path_with_a_nul_byte(engine: str, tmp_path: Path, where: str) -> None:
    src = write(tmp_path, "rows.jsonl", GOOD)
    with pytest.raises(ValueError, match=r"^embedded null byte$"):
        read_rollout_jsonl("rows\0.jsonl")
    with pytest.raises(ValueError, match=r"^embedded null byte$"):
        if where == "src":
            normalise_rollout_file(f"{src}\0", tmp_path / "out.jsonl")
        else:
            normalise_rollout_file(src, f"{tmp_path}/out\0.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]


def test_normalising_a_file_in_place(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "rows.jsonl", b'{"answer":"a","prompt":"p","x":[1]}\n\n')
    report = normalise_rollout_file(src, src)
    assert src.read_bytes() == b'{"prompt":"p","answer":"a"}\n'
    assert (report.rows, report.lines, report.dropped_keys) == (1, 2, 1)
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


BAD_FILES = {
    "utf8": GOOD + b'{"prompt":"\xff"}\n',
    "json": GOOD + b'{"prompt":"x"',
    "row": GOOD * 3 + b'{"prompt":[{}]}\n',
    "cap": GOOD * 6,
    "empty": b"\n\n",
    "gzip": gzip.compress(GOOD * 3)[:-5],
    "nan": b'{"prompt":"x","k":NaN}\n',
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_the_destination_is_untouched_on_error(engine: str, tmp_path: Path, kind: str) -> None:
    src = write(tmp_path, "in.jsonl", BAD_FILES[kind])
    out = tmp_path / "out"
    out.mkdir()
    kept = write(out, "kept.jsonl", b"do not lose this\n")
    with pytest.raises((RolloutFileError, RolloutRowError)):
        normalise_rollout_file(src, kept, max_rows=5)
    with pytest.raises((RolloutFileError, RolloutRowError)):
        normalise_rollout_file(str(src), str(out / "new.jsonl"), max_rows=5)
    assert kept.read_bytes() == b"do not lose this\n"
    assert sorted(p.name for p in out.iterdir()) == ["kept.jsonl"]


def test_the_destination_is_created_or_replaced_on_success(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = write(tmp_path, "in.jsonl", b'{"prompt":"a","z":0}\n{"prompt":"b","answer":null}')
    dst = tmp_path / "out.jsonl"
    for _ in range(2):  # created, then replaced
        report = normalise_rollout_file(src, dst)
        assert dst.read_bytes() == b'{"prompt":"a"}\n{"prompt":"b"}\n'
        assert (report.rows, report.dropped_keys, report.bytes_out) == (2, 1, 30)
    dst.write_bytes(b"old and much longer content than the new one\n" * 10)
    normalise_rollout_file(src, dst)
    assert dst.read_bytes() == b'{"prompt":"a"}\n{"prompt":"b"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]
    monkeypatch.chdir(tmp_path)  # a bare file name writes into the current folder
    normalise_rollout_file("in.jsonl", "here.jsonl")
    assert (tmp_path / "here.jsonl").read_bytes() == dst.read_bytes()


class Where(os.PathLike):  # type: ignore[type-arg]
    def __init__(self, path: object) -> None:
        self.path = path

    def __fspath__(self) -> Any:
        return self.path


def test_path_arguments(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "in.jsonl", GOOD)
    assert read_rollout_jsonl(src) == ({"prompt": "ok"},)
    assert read_rollout_jsonl(Where(str(src))) == ({"prompt": "ok"},)
    normalise_rollout_file(Where(str(src)), tmp_path / "a.jsonl")
    normalise_rollout_file(str(src), Where(str(tmp_path / "b.jsonl")))
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes() == GOOD
    message = "{} must be a path (str or os.PathLike), got {}"
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: read_rollout_jsonl(5), message.format("path", "int")),  # type: ignore[arg-type]
        (lambda: read_rollout_jsonl(bytes(src)), message.format("path", "bytes")),  # type: ignore[arg-type]
        (lambda: read_rollout_jsonl(Where(bytes(src))), message.format("path", "Where")),
        (lambda: normalise_rollout_file(None, src), message.format("src", "NoneType")),  # type: ignore[arg-type]
        (lambda: normalise_rollout_file(src, [1]), message.format("dst", "list")),  # type: ignore[arg-type]
    ]
    for call, text in cases:
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value) == text


@pytest.mark.parametrize(
    ("value", "error", "text"),
    [
        (True, TypeError, "max_rows must be an int, got bool"),
        (2.0, TypeError, "max_rows must be an int, got float"),
        ("5", TypeError, "max_rows must be an int, got str"),
        (None, TypeError, "max_rows must be an int, got NoneType"),
        (0, ValueError, f"max_rows must be in [1, {MAX_ROWS_LIMIT}], got 0"),
        (-3, ValueError, f"max_rows must be in [1, {MAX_ROWS_LIMIT}], got -3"),
        (
            MAX_ROWS_LIMIT + 1,
            ValueError,
            f"max_rows must be in [1, {MAX_ROWS_LIMIT}], got {MAX_ROWS_LIMIT + 1}",
        ),
    ],
)
def test_max_rows_is_checked_before_the_file_is_opened(
    engine: str, tmp_path: Path, value: Any, error: type[Exception], text: str
) -> None:
    missing = tmp_path / "absent.jsonl"
    for call in (
        lambda: read_rollout_jsonl(missing, max_rows=value),
        lambda: normalise_rollout_file(missing, tmp_path / "out.jsonl", max_rows=value),
    ):
        with pytest.raises(error) as info:
            call()
        assert isinstance(info.value, AgentRolloutError)
        assert str(info.value) == text
    assert list(tmp_path.iterdir()) == []


def test_max_rows_at_its_limits(engine: str, tmp_path: Path) -> None:
    src = write(tmp_path, "in.jsonl", GOOD)
    assert read_rollout_jsonl(src, max_rows=1) == ({"prompt": "ok"},)
    assert read_rollout_jsonl(src, max_rows=MAX_ROWS_LIMIT) == ({"prompt": "ok"},)


# ---- standard input and output -------------------------------------------------------------

CHILD = """
import json, sys
from agent_rollout import _engine, normalise_rollout_file, read_rollout_jsonl
_engine.set_engine(sys.argv[1])
try:
    if sys.argv[2] == "read":
        rows = read_rollout_jsonl("-")
        sys.stdout.write(json.dumps(rows, ensure_ascii=False))
    else:
        report = normalise_rollout_file(sys.argv[2], sys.argv[3])
        sys.stderr.write(f"rows={report.rows} lines={report.lines}")
except Exception as exc:
    sys.stderr.write(f"{type(exc).__name__}: {exc}")
    sys.exit(3)
"""


def child(engine: str, *args: str, data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, engine, *args],
        input=data,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_dash_means_stdin_and_stdout(engine: str, tmp_path: Path) -> None:
    data = '{"prompt":"é","x":1}\n\n{"prompt":[{"role":"u","content":"c"}],"answer":"a"}'
    want = '{"prompt":"é"}\n{"prompt":[{"role":"u","content":"c"}],"answer":"a"}\n'
    both = child(engine, "-", "-", data=data.encode())
    assert (both.returncode, both.stdout, both.stderr) == (0, want.encode(), b"rows=2 lines=3")
    packed = child(engine, "-", "-", data=gzip.compress(data.encode()))
    assert (packed.returncode, packed.stdout) == (0, want.encode())
    to_file = child(engine, "-", str(tmp_path / "out.jsonl"), data=data.encode())
    assert to_file.returncode == 0 and to_file.stdout == b""
    assert (tmp_path / "out.jsonl").read_bytes() == want.encode()
    from_file = child(engine, str(tmp_path / "out.jsonl"), "-", data=b"")
    assert (from_file.returncode, from_file.stdout) == (0, want.encode())
    read = child(engine, "read", data=data.encode())
    assert read.returncode == 0
    assert json.loads(read.stdout) == [
        {"prompt": "é"},
        {"prompt": [{"role": "u", "content": "c"}], "answer": "a"},
    ]


@pytest.mark.parametrize(
    "data", [gzip.compress(GOOD * 2), b"\x1f" + GOOD * 2], ids=["gzip", "starts-with-1f"]
)
def test_a_pipe_that_gives_one_byte_first(tmp_path: Path, data: bytes) -> None:
    """The first two bytes decide gzip, also when a pipe hands them over one at a time
    (the Python engine once looked at the one byte there and read gzip as text). The
    writer sends the rest only once the reader has taken the first byte, so the reader
    sees it alone however loaded the machine; ``starts-with-1f`` checks that the two
    bytes taken are given back when the input is not gzip."""
    seen = []
    for name in ENGINES:
        fifo = tmp_path / f"{name}.fifo"
        os.mkfifo(fifo)

        def feed(fifo: Path = fifo) -> None:
            with suppress(BrokenPipeError), open(fifo, "wb", buffering=0) as out:
                out.write(data[:1])
                # The rest only once the reader has taken the first byte out of the pipe.
                waiting = array.array("i", [1])
                deadline = time.monotonic() + 30
                while waiting[0] and time.monotonic() < deadline:
                    time.sleep(0.005)
                    fcntl.ioctl(out.fileno(), termios.FIONREAD, waiting)
                out.write(data[1:])

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        with use_engine(name):
            try:
                seen.append(("ok", read_rollout_jsonl(fifo)))
            except RolloutFileError as err:
                seen.append(("error", err.code, err.line, err.column))
        writer.join(timeout=60)
        assert not writer.is_alive()
    want = (
        ("ok", ({"prompt": "ok"},) * 2)
        if data[:2] == b"\x1f\x8b"
        else ("error", "json_syntax", 1, 1)
    )
    assert seen == [want] * len(ENGINES)


def test_errors_on_stdin_name_it(engine: str) -> None:
    bad = child(engine, "-", "-", data=GOOD + b'{"prompt":"x","answer":3}\n')
    assert bad.returncode == 3
    assert bad.stderr.decode() == (
        "RolloutRowError: <stdin>:2: row 1: answer: must be a str or None, got 'int'"
    )
    empty = child(engine, "read", data=b"")
    assert (empty.returncode, empty.stdout) == (3, b"")
    assert empty.stderr.decode() == f"RolloutFileError: <stdin>: {NO_ROWS}"


# ---- size ----------------------------------------------------------------------------------


def test_a_line_over_max_line_bytes(engine: str, tmp_path: Path) -> None:
    """One over-long line, looked at three ways by cutting the same file shorter."""
    filler = MAX_LINE_BYTES - len(b'{"prompt":""}')
    big = b'{"prompt":"' + b"a" * filler + b'"} '  # one byte over, with the newline after it
    src = tmp_path / "big.jsonl"
    with open(src, "wb") as out:
        out.write(b"".join([GOOD, b"\n", big, b"\n"]))
    message = f"{src}:3: line longer than {MAX_LINE_BYTES} bytes (MAX_LINE_BYTES)"
    dst = tmp_path / "out.jsonl"
    for size in (len(GOOD) + 1 + len(big) + 1, len(GOOD) + 1 + len(big)):
        os.truncate(src, size)  # with its newline, then without (the last line of the file)
        for call in (lambda: read_rollout_jsonl(src), lambda: normalise_rollout_file(src, dst)):
            with pytest.raises(RolloutFileError) as info:
                call()
            assert str(info.value) == message
            assert (info.value.code, info.value.line) == ("line_too_long", 3)
        assert not dst.exists() and temp_files(tmp_path) == []
    os.truncate(src, len(GOOD) + 1 + len(big) - 1)  # now exactly MAX_LINE_BYTES: accepted
    rows = read_rollout_jsonl(src)
    assert len(rows) == 2 and len(rows[1]["prompt"]) == filler


def test_a_damaged_gzip_inside_an_over_long_line_is_the_long_line(
    engine: str, tmp_path: Path
) -> None:
    """The stream breaks just after an unfinished line passed MAX_LINE_BYTES, inside
    the read that took it past: the line came first (review finding; the Rust engine
    reported the gzip error when both fell in one read)."""
    head = GOOD + b"\n"
    big = b'{"prompt":"' + b"a" * (MAX_LINE_BYTES + (1 << 20)) + b'"}\n'
    cut = len(head) + MAX_LINE_BYTES + 1000  # the line is 1000 bytes over here
    pack = zlib.compressobj(1, wbits=16 + zlib.MAX_WBITS)
    # Everything up to `cut` can be inflated from the bytes kept; then the stream ends.
    packed = pack.compress((head + big)[:cut]) + pack.flush(zlib.Z_SYNC_FLUSH)
    src = tmp_path / "cut.jsonl.gz"
    src.write_bytes(packed)
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    assert len(inflate.decompress(packed)) == cut and not inflate.eof
    dst = tmp_path / "out.jsonl"
    for call in (lambda: read_rollout_jsonl(src), lambda: normalise_rollout_file(src, dst)):
        with pytest.raises(RolloutFileError) as info:
            call()
        assert (info.value.code, info.value.line) == ("line_too_long", 3), str(info.value)
    assert not dst.exists() and temp_files(tmp_path) == []


def many_rows(count: int) -> bytes:
    kinds = [
        '{"prompt":"question %d","answer":"%d","meta":{"id":%d}}',
        '{"id":%d,"prompt":[{"role":"system","content":"be brief"},'
        '{"role":"user","content":"q%d é😀\\u00e9","w":%d.5e-3}]}',
        '{"prompt":[{"role":"user","content":[{"type":"text","text":"t%d"}],"n":-%d}],'
        '"answer":null,"score":%d.25}',
    ]
    return "\n".join(kinds[i % 3] % (i, i, i) for i in range(count)).encode() + b"\n"


@NATIVE
def test_a_moderately_large_file_gives_identical_bytes(tmp_path: Path) -> None:
    data = many_rows(50_000)
    src = write(tmp_path, "many.jsonl", data)
    outputs = {}
    reports = {}
    for name in ("python", "rust"):
        with use_engine(name):
            dst = tmp_path / f"{name}.jsonl"
            reports[name] = normalise_rollout_file(src, dst, max_rows=50_000)
            outputs[name] = dst.read_bytes()
    assert outputs["python"] == outputs["rust"]
    assert outputs["rust"].count(b"\n") == 50_000
    assert (
        outputs["rust"].splitlines()[4]
        == (
            '{"prompt":[{"role":"system","content":"be brief"},'
            '{"role":"user","content":"q4 é😀é","w":0.0045}]}'
        ).encode()
    )
    fields = ("rows", "lines", "blank_lines", "dropped_keys", "bytes_in", "bytes_out")
    counts = {name: [getattr(r, f) for f in fields] for name, r in reports.items()}
    assert counts["python"] == counts["rust"]
    assert counts["rust"] == [50_000, 50_000, 0, 50_000, len(data), len(outputs["rust"])]


@NATIVE
@pytest.mark.parametrize(
    ("tail", "max_rows", "message"),
    [
        (b'{"prompt":"x","answer":7}\n', 100_000,
         ":50002: row 50000: answer: must be a str or None, got 'int'"),
        (b'{"prompt":"x"\n', 100_000,
         ":50002:14: invalid JSON: the line ends inside an object"),
        (b"", 39_999, ":40000: more than 39,999 rows (max_rows=39999; raise the limit "
                      "with max_rows= or --max-rows)"),
    ],
)  # fmt: skip
def test_errors_deep_in_a_large_file(
    tmp_path: Path, tail: bytes, max_rows: int, message: str
) -> None:
    """Line numbers stay right across the Rust engine's chunks; no partial output."""
    src = write(tmp_path, "many.jsonl", many_rows(50_000) + b"\n" + tail)
    dst = write(tmp_path, "out.jsonl", b"previous\n")
    texts = []
    for name in ("python", "rust"):
        with use_engine(name):
            for call in (
                lambda: read_rollout_jsonl(src, max_rows=max_rows),
                lambda: normalise_rollout_file(src, dst, max_rows=max_rows),
            ):
                with pytest.raises(ValueError) as info:
                    call()
                texts.append(str(info.value))
    assert texts == [f"{src}{message}"] * 4
    assert dst.read_bytes() == b"previous\n"
    assert temp_files(tmp_path) == []


@NATIVE
@pytest.mark.parametrize("compressed", [False, True])
def test_lines_longer_than_a_read_block(tmp_path: Path, compressed: bool) -> None:
    """A 3 MiB line between small ones: same rows and same error line on both engines."""
    big = b'{"prompt":"' + b"b" * (3 << 20) + b'"}\n'
    good = GOOD * 1000 + big + GOOD * 1000
    pack = gzip.compress if compressed else bytes
    src = write(tmp_path, "mix.jsonl", pack(good + b'{"prompt":3}\n'))
    assert compare_engines(lambda: read_rollout_jsonl(src)) == ("same",)
    with pytest.raises(RolloutRowError) as info:
        read_rollout_jsonl(src)
    assert str(info.value) == (
        f"{src}:2002: row 2001: prompt: must be a str or a list of chat messages, got 'int'"
    )
    src.write_bytes(pack(good))
    assert compare_engines(lambda: read_rollout_jsonl(src)) == ("same",)
    rows = read_rollout_jsonl(src)
    assert len(rows) == 2001 and rows[1000]["prompt"] == "b" * (3 << 20)


def test_a_stream_gets_no_row_of_a_file_refused_for_its_row_cap(
    engine: str, tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    # Standard output cannot be taken back: a file refused for a rule of the reader (here
    # the row cap, checked before any row of its block is used) writes nothing there, on
    # either engine (the Rust engine refuses a chunk whole before writing any of it).
    src = write(tmp_path, "rows.jsonl", b'{"prompt":"a"}\n{"prompt":"b"}\n{"prompt":"c"}\n')
    capfdbinary.readouterr()
    with pytest.raises(RolloutFileError, match=r":3: more than 2 rows"):
        normalise_rollout_file(src, "-", max_rows=2)
    assert capfdbinary.readouterr().out == b""
