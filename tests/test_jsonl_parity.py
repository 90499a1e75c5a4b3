"""Rollout JSONL files, property tests: the file readers agree with ``json.loads`` plus
``normalise_rollout_rows``, and the two engines agree with each other, on good and on
broken files alike.

The JSON text is written by hand (not by ``json.dumps``) so a line can carry what a
dumper never writes: duplicate keys, ``\\u`` escapes of any character, odd number
spellings, whitespace between tokens.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agent_rollout import (
    NormaliseReport,
    normalise_rollout_file,
    normalise_rollout_rows,
    read_rollout_jsonl,
)
from agent_rollout._json import scan
from agent_rollout._limits import MAX_ROLLOUT_BYTES
from support import (
    ENGINES,
    OS_ERROR_FACTS,
    canonical,
    error_facts,
    gzip_member,
    temp_files,
    typed_bits,
    typed_outcome,
    use_engine,
    without_null_keys,
)

# ---- JSON values, and their text written by hand --------------------------------------------


@dataclass(frozen=True)
class Num:
    """A JSON number kept as the exact text the line will hold."""

    text: str


@dataclass(frozen=True)
class Obj:
    """A JSON object as its members in order; a key may repeat."""

    members: tuple[tuple[str, Any], ...]


Json = Union[None, bool, str, Num, list, Obj]

SPECIAL_NUMBERS = [
    "0",
    "-0",
    "-0.0",
    "0e0",
    "-0E-0",
    "1e16",
    "1E+16",
    "5e-324",
    "1e-7",
    "1e-5",
    "0.0001",
    "1e22",
    "1.7976931348623157e308",
    "2.2250738585072014e-308",
    "1e-400",
    "9007199254740993",
    "9007199254740993.0",
    "123456789012345678901234567890.5",
    "0.1e-3",
    "12345678901234567.0",
    "1234567890123456.7",
]
# Valid JSON, but overflow to an infinity: refused inside a chat message, fine elsewhere.
HUGE_NUMBERS = ["1e400", "-1E+999", "1" * 400 + ".0"]

int_texts = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-(10**400), max_value=10**400),
).map(str)
float_texts = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda f: f"{f:E}"),
    st.builds(
        lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
        st.sampled_from(["", "-"]),
        st.from_regex(r"0|[1-9][0-9]{0,25}", fullmatch=True),
        st.from_regex(r"(\.[0-9]{1,25})?", fullmatch=True),
        # at most 1e126: finite; down to 1e-999: underflow to zero or a subnormal
        st.from_regex(r"([eE][+-]?[0-9]{1,2}|[eE]-[0-9]{3})?", fullmatch=True),
    ),
)
finite_numbers = st.one_of(int_texts, float_texts, st.sampled_from(SPECIAL_NUMBERS)).map(Num)
any_numbers = st.one_of(finite_numbers, st.sampled_from(HUGE_NUMBERS).map(Num))

interesting_chars = st.sampled_from(
    list('"\\/\b\f\n\r\t\x00\x1f\x7f\x85\u2028\u2029\ufeffé€😀\U0010ffff')
)
texts = st.text(st.one_of(st.characters(exclude_categories=["Cs"]), interesting_chars), max_size=12)
keys = st.one_of(texts, st.sampled_from(["content", "type", "text", "a b", 'q"', ""]))


def json_values(numbers: st.SearchStrategy[Num]) -> st.SearchStrategy[Json]:
    leaves = st.one_of(st.none(), st.booleans(), texts, numbers)
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(st.tuples(keys, inner), max_size=3).map(lambda m: Obj(tuple(m))),
        ),
        max_leaves=8,
    )


finite_values = json_values(finite_numbers)
wide_values = json_values(any_numbers)


# Strategies the composites below draw from are built once, here: a strategy made
# inside a composite is made (and validated) again at every draw, which costs more
# than the drawing itself.
role_texts = texts.filter(bool)
message_contents = st.one_of(
    texts,
    st.lists(st.builds(lambda t: Obj((("type", "text"), ("text", t))), texts), max_size=2),
)
message_extras = st.lists(st.tuples(keys.filter(lambda k: k != "role"), finite_values), max_size=2)


@st.composite
def messages(draw: st.DrawFn) -> Obj:
    members: list[tuple[str, Any]] = [("role", draw(role_texts))]
    if draw(st.booleans()):
        members.append(("content", draw(message_contents)))
    members += draw(message_extras)
    draw(st.randoms()).shuffle(members)
    # A key written twice: a dict keeps the first place and the last value, so the
    # first value may be anything at all, even one the rules refuse.
    if draw(st.booleans()):
        key, _ = draw(st.sampled_from(members))
        at = next(i for i, (k, _) in enumerate(members) if k == key)
        members.insert(at, (key, draw(wide_values)))
    return Obj(tuple(members))


prompts = st.one_of(texts.filter(bool), st.lists(messages(), min_size=1, max_size=3))
answers = st.one_of(st.none(), st.just(""), texts)
row_extras = st.lists(
    st.tuples(keys.filter(lambda k: k not in ("prompt", "answer")), wide_values), max_size=3
)


@st.composite
def rows(draw: st.DrawFn) -> Obj:
    members: list[tuple[str, Any]] = [("prompt", draw(prompts))]
    if draw(st.booleans()):
        members.append(("answer", draw(answers)))
    members += draw(row_extras)
    draw(st.randoms()).shuffle(members)
    if draw(st.booleans()):
        key = draw(st.sampled_from([k for k, _ in members]))
        at = next(i for i, (k, _) in enumerate(members) if k == key)
        members.insert(at, (key, draw(wide_values)))
    return Obj(tuple(members))


SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f"}
SHORT_ESCAPES |= {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def write_str(text: str, rnd: random.Random) -> str:
    out = ['"']
    for ch in text:
        point = ord(ch)
        must = ch in '"\\' or point < 0x20
        style = rnd.randrange(8)
        if style == 0 or (must and style < 4):
            if point > 0xFFFF:
                high, low = 0xD800 + ((point - 0x10000) >> 10), 0xDC00 + (point & 0x3FF)
                out.append(f"\\u{high:04x}\\u{low:04X}")
            else:
                out.append(f"\\u{point:04x}" if style % 2 else f"\\u{point:04X}")
        elif ch in SHORT_ESCAPES and (must or style == 1):
            out.append(SHORT_ESCAPES[ch])
        elif must:
            out.append(f"\\u{point:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def write_json(value: Json, rnd: random.Random, compact: bool = False) -> str:
    """``value`` spelled at random, or (``compact``) as the canonical output spells it
    where it can: no whitespace, the escapes ``json.dumps(ensure_ascii=False)`` writes
    (numbers keep their text). The Rust engine copies such a prompt as it stands."""

    def ws() -> str:
        return "" if compact else rnd.choice(["", "", "", "", " ", "\t", "  ", "\r"])

    def string(text: str) -> str:
        return json.dumps(text, ensure_ascii=False) if compact else write_str(text, rnd)

    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return string(value)
    if isinstance(value, Num):
        return value.text
    if isinstance(value, list):
        items = (ws() + write_json(v, rnd, compact) + ws() for v in value)
        return "[" + ws() + ",".join(items) + "]"
    parts = [
        ws() + string(k) + ws() + ":" + ws() + write_json(v, rnd, compact) + ws()
        for k, v in value.members
    ]
    return "{" + ws() + ",".join(parts) + "}"


blank_runs = st.lists(st.sampled_from(["", " ", "\t", " \r", "\r"]), max_size=2)
final_blanks = st.lists(st.sampled_from(["", " ", "\r"]), max_size=2)
line_ends = st.sampled_from(["\n", "\r\n"])


@st.composite
def jsonl_files(draw: st.DrawFn, lines: st.SearchStrategy[list[str]]) -> bytes:
    """Lines joined with ``\\n`` or ``\\r\\n``, blank lines between, maybe no final newline."""
    out: list[str] = []
    for line in draw(lines):
        out += draw(blank_runs)
        out.append(line)
    out += draw(final_blanks)
    ends = [draw(line_ends) for _ in out]
    text = "".join(line + end for line, end in zip(out, ends, strict=True))
    if draw(st.booleans()):
        text = text[: -len(ends[-1])]
    return text.encode("utf-8")


@st.composite
def row_lines(draw: st.DrawFn, max_size: int = 6) -> list[str]:
    # How each line is spelled (whitespace, escape styles: a choice per character) comes
    # from a Random seeded by the draw, not a draw per choice: the same spellings, at a
    # fraction of the cost of drawing every one; the rows themselves still shrink.
    # Half the lines are spelled compactly: the Rust engine's shortcut for rows already
    # canonical (rust/jsonl/verbatim.rs, `verbatim_row`) takes those, or gives them up to the
    # full parser on a float, a repeated key or a broken rule.
    rnd = draw(st.randoms(use_true_random=True))
    return [write_json(row, rnd, rnd.random() < 0.5) for row in draw(row_lists(max_size))]


@functools.cache
def row_lists(max_size: int) -> st.SearchStrategy[list[Obj]]:
    return st.lists(rows(), min_size=1, max_size=max_size)


def content_lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip(b" \t\r")]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jsonl_parity")


# ---- good files --------------------------------------------------------------------------


@given(data=jsonl_files(row_lines()), compressed=st.booleans())
def test_good_files_match_json_loads_then_normalise(
    workdir: Path, data: bytes, compressed: bool
) -> None:
    src = workdir / ("rows.jsonl.gz" if compressed else "rows.jsonl")
    src.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
    dst = workdir / "out.jsonl"
    docs = [json.loads(line) for line in content_lines(data)]
    reports: list[NormaliseReport] = []
    outputs: set[bytes] = set()
    for name in ENGINES:
        with use_engine(name):
            want = typed_outcome(lambda: normalise_rollout_rows(docs))
            assert want[0] == "ok", want
            expected = normalise_rollout_rows(docs)
            assert typed_outcome(lambda: read_rollout_jsonl(src)) == want, name
            if dst.exists():
                dst.unlink()
            report = normalise_rollout_file(src, dst)
            assert dst.read_bytes() == canonical(expected), name
            assert report.engine == name
            reports.append(report)
            outputs.add(dst.read_bytes())
    assert len(outputs) == 1
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    expected_counts = {
        "rows": len(docs),
        "lines": len(lines),
        "blank_lines": len(lines) - len(docs),
        "dropped_keys": sum(len(d) - ("prompt" in d) - ("answer" in d) for d in docs),
        "bytes_in": len(data),
        "bytes_out": len(dst.read_bytes()),
    }
    for report in reports:
        counts = {name: getattr(report, name) for name in expected_counts}
        assert counts == expected_counts, report.engine
    assert temp_files(workdir) == []


@given(data=jsonl_files(row_lines(max_size=3)))
def test_read_result_is_fresh_builtin_objects(workdir: Path, data: bytes) -> None:
    src = workdir / "fresh.jsonl"
    src.write_bytes(data)
    for name in ENGINES:
        with use_engine(name):
            first = read_rollout_jsonl(str(src))
            second = read_rollout_jsonl(str(src))
        assert type(first) is tuple
        assert all(type(row) is dict for row in first)
        assert typed_bits(first) == typed_bits(second)
        for a, b in zip(first, second, strict=True):
            assert a is not b
            if isinstance(a["prompt"], list):
                assert a["prompt"] is not b["prompt"]


# ---- broken files ------------------------------------------------------------------------

TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b'"',
    b"\\",
    b" ",
    b"\n",
    b"\r\n",
    b"0",
    b"-",
    b".",
    b"e",
    b"1e",
    b"01",
    b"-.5",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e400",
    b"\\ud800",
    b"\\udc00",
    b"\\ud800\\u0041",
    b"\\uD83D\\uDE00",
    b"\\u12",
    b"\\x",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xf0\x9f\x98",
    b"\xf4\x90\x80\x80",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\x1f",
    b"\x0b",
    b"true",
    b"nul",
    b"\t",
    "é".encode(),
    "😀".encode(),
]

GOOD_LINE = b'{"prompt":"ok"}\n'
# Whole lines that break one rule or one limit each (and a few that only just pass).
BAD_LINES = [
    b"[]",
    b"1",
    b"-0.0",
    b'"text"',
    b"null",
    b"true",
    b'[{"prompt":"x"}]',
    b"{}",
    b'{"prompt":null}',
    b'{"prompt":""}',
    b'{"prompt":[]}',
    b'{"prompt":5}',
    b'{"prompt":2.5}',
    b'{"prompt":{"role":"user"}}',
    b'{"prompt":[1]}',
    b'{"prompt":["hi"]}',
    b'{"prompt":[{}]}',
    b'{"prompt":[{"content":"x"}]}',
    b'{"prompt":[{"role":""}]}',
    b'{"prompt":[{"role":5}]}',
    b'{"prompt":[{"role":null}]}',
    b'{"prompt":[{"role":"u"},{"role":["a"]}]}',
    b'{"prompt":"x","answer":5}',
    b'{"prompt":"x","answer":[]}',
    b'{"prompt":"x","answer":false}',
    b'{"prompt":[{"role":"u","x":1e400}]}',
    b'{"prompt":[{"role":"u","c":[1,-1E999]}]}',
    b'{"prompt":[{"role":"u","a b":{"\\u0000\\"":[1e400]}}]}',
    b'{"prompt":[{"role":"u","content":' + b"[" * 64 + b"]" * 64 + b"}]}",
    b'{"prompt":[{"role":"u","content":' + b"[" * 63 + b"]" * 63 + b"}]}",
    b'{"prompt":"x","prompt":5}',
    b'{"prompt":5,"prompt":"x","answer":"a","answer":1}',
]


def deep_line(levels: int, row: bool) -> bytes:
    if row:  # the row object is level 1
        inner = levels - 1
        return b'{"prompt":"x","k":' + b"[" * inner + b"]" * inner + b"}"
    return b"[" * levels + b"]" * levels


def long_int_line(digits: int, negative: bool, where: str) -> bytes:
    number = (b"-" if negative else b"") + b"7" + b"0" * (digits - 1)
    if where == "message":
        return b'{"prompt":[{"role":"u","n":' + number + b"}]}"
    return b'{"prompt":"x","n":' + number + b"}"


special_lines = st.one_of(
    st.sampled_from(BAD_LINES),
    st.builds(deep_line, st.integers(126, 131), st.booleans()),
    st.builds(
        long_int_line,
        st.integers(4298, 4302),
        st.booleans(),
        st.sampled_from(["message", "extra"]),
    ),
)


corruptible_files = jsonl_files(row_lines(max_size=4))


@st.composite
def corrupted(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(corruptible_files))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "line"]))
        at = draw(st.integers(0, len(data)))
        if op == "delete":
            del data[at : at + draw(st.integers(1, 3))]
        elif op == "insert":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif op == "replace":
            data[at : at + 1] = draw(st.sampled_from(TOKENS))
        elif op == "truncate":
            del data[at:]
        else:
            lines = bytes(data).split(b"\n")
            index = draw(st.integers(0, len(lines)))
            lines.insert(index, draw(special_lines))
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def read_outcome(path: Path, max_rows: int, max_bytes: int = MAX_ROLLOUT_BYTES) -> tuple[Any, ...]:
    return typed_outcome(lambda: read_rollout_jsonl(path, max_rows=max_rows, max_bytes=max_bytes))


def normalise_outcome(
    src: Path, dst: Path, max_rows: int, max_bytes: int = MAX_ROLLOUT_BYTES
) -> tuple[Any, ...]:
    before = dst.read_bytes()
    result = typed_outcome(
        lambda: normalise_rollout_file(src, dst, max_rows=max_rows, max_bytes=max_bytes)
    )
    written = dst.read_bytes()
    dst.write_bytes(before)
    if result[0] == "error":
        assert written == before, "the destination changed although the run failed"
        return result
    return ("ok", written)


def engine_outcomes(
    workdir: Path, src: Path, max_rows: int, max_bytes: int = MAX_ROLLOUT_BYTES
) -> dict[str, tuple[Any, Any]]:
    """``(read, normalise)`` outcomes of ``src`` on each engine, normalising over a
    destination that holds earlier content (left as it was when the run fails)."""
    dst = workdir / "kept.jsonl"
    dst.write_bytes(b"previous content\n")
    seen = {}
    for name in ENGINES:
        with use_engine(name):
            seen[name] = (
                read_outcome(src, max_rows, max_bytes),
                normalise_outcome(src, dst, max_rows, max_bytes),
            )
    return seen


@given(data=corrupted(), max_rows=st.integers(1, 6), compressed=st.booleans())
def test_broken_files_fail_alike_on_both_engines(
    workdir: Path, data: bytes, max_rows: int, compressed: bool
) -> None:
    src = workdir / ("broken.jsonl.gz" if compressed else "broken.jsonl")
    src.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
    seen = engine_outcomes(workdir, src, max_rows)
    for name, (read_result, normalise_result) in seen.items():
        # Both functions see the same rows and fail on the same line, for the same reason.
        assert read_result[0] == normalise_result[0], name
        if read_result[0] == "error":
            assert read_result == normalise_result, name
    assert len(set(map(repr, seen.values()))) == 1, seen
    assert temp_files(workdir) == []


@given(data=corrupted(), max_rows=st.integers(1, 6), compressed=st.booleans(), pick=st.data())
def test_the_byte_limit_cuts_alike_on_both_engines(
    workdir: Path, data: bytes, max_rows: int, compressed: bool, pick: st.DataObject
) -> None:
    """Any ``max_bytes``: the same rows, or the same first error (the limit's, or a line's)."""
    max_bytes = pick.draw(st.integers(1, len(data) + 2), label="max_bytes")
    src = workdir / ("cut.jsonl.gz" if compressed else "cut.jsonl")
    src.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
    seen = engine_outcomes(workdir, src, max_rows, max_bytes)
    if max_bytes >= len(data):  # the limit is not reached: as without one
        for name in ENGINES:
            with use_engine(name):
                assert seen[name][0] == read_outcome(src, max_rows), name
    assert len(set(map(repr, seen.values()))) == 1, seen
    assert temp_files(workdir) == []


# ---- gzip members written by hand ---------------------------------------------------------

GZIP_ROWS = [b'{"prompt":"ok"}\n', b'{"prompt":"a","answer":"b"}\n', b'{"prompt":1}\n', b"\n"]


@st.composite
def gzip_members(draw: st.DrawFn) -> bytes:
    """One gzip member, its header drawn field by field: any flag byte (reserved bits
    too), a method near deflate's, extra data, names and comments (up to the 65,535-byte
    line and over it), a header CRC right or wrong, a trailer right or wrong."""
    fields = {}
    for key in ("name", "comment"):
        length = draw(st.sampled_from([0, 1, 7, 65535, 65536]))
        fields[key] = draw(st.binary(min_size=1, max_size=1).filter(lambda b: b != b"\0")) * length
    return gzip_member(
        b"".join(draw(st.lists(st.sampled_from(GZIP_ROWS), max_size=5))),
        draw(st.integers(0, 255)),
        method=draw(st.sampled_from([8, 8, 8, 8, 0, 7, 9])),
        rest=draw(st.binary(min_size=6, max_size=6)),
        extra=draw(st.binary(max_size=40)),
        header_crc_xor=draw(st.sampled_from([0, 1, 0xFFFF])),
        crc_xor=draw(st.sampled_from([0, 0, 0, 1])),
        size_add=draw(st.sampled_from([0, 0, 0, 1])),
        **fields,
    )


@given(
    members=st.lists(st.tuples(gzip_members(), st.integers(0, 3)), min_size=1, max_size=3),
    tail=st.sampled_from([b"", b"\0", b"x", b"\x1f", b"\x1f\x8b"]),
    cut=st.one_of(st.none(), st.integers(0, 200)),
    max_rows=st.integers(1, 12),
)
def test_gzip_headers_and_trailers_read_alike(
    workdir: Path, members: list[tuple[bytes, int]], tail: bytes, cut: Any, max_rows: int
) -> None:
    """Hand-made gzip streams (members with zero padding between, then a tail, perhaps
    cut short): both engines read the same rows or fail with the same first error,
    from both functions."""
    data = b"".join(member + b"\0" * padding for member, padding in members) + tail
    if cut is not None:
        data = data[: max(2, len(data) - cut)]
    src = workdir / "hand.jsonl.gz"
    src.write_bytes(data)
    seen = engine_outcomes(workdir, src, max_rows)
    assert len(set(map(repr, seen.values()))) == 1, seen
    assert temp_files(workdir) == []


def test_every_catalogue_line_fails_alike(workdir: Path) -> None:
    """Each catalogue line, alone, on both engines; and together they reach every failure kind."""
    codes = set()
    lines = [*BAD_LINES, deep_line(129, False), deep_line(129, True)]
    lines += [long_int_line(4301, True, "extra"), long_int_line(4300, False, "message")]
    for line in lines:
        src = workdir / "one.jsonl"
        src.write_bytes(GOOD_LINE + line + b"\n")
        seen = []
        for name in ENGINES:
            with use_engine(name):
                seen.append(read_outcome(src, 10))
        result = seen[0]
        assert all(other == result for other in seen), (line, seen)
        if result[0] == "error":
            codes.add(dict(result[3])["code"])
    assert {"json_syntax", "row_not_mapping", "prompt_type", "role_missing"} <= codes
    assert {"float_not_finite", "too_deep", "answer_type", "message_not_mapping"} <= codes
    assert {"prompt_missing", "prompt_empty", "role_type", "role_empty"} <= codes


# ---- the twin's grammar scanner against json.loads --------------------------------------

_UNLIKE_JSON = re.compile(r"NaN|Infinity|\\u[dD][89a-fA-F]|[0-9]{4300}")


def json_loads_accepts(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def comparable(text: str) -> bool:
    """Leave out what Python's ``json`` takes but JSON (and so ``_scan``) refuses."""
    nesting = text.count("[") + text.count("{")
    return _UNLIKE_JSON.search(text) is None and nesting <= 128


json_ish = st.lists(
    st.one_of(
        st.sampled_from(list('{}[],:" \t\r\n\\/-+.0123456789eEuntrfalsbx')),
        st.sampled_from(["true", "false", "null", "\\u00e9", '"prompt"', "\u0661", "\x00", "é"]),
    ),
    max_size=30,
).map("".join)


@given(data=corrupted())
def test_scan_agrees_with_json_loads_on_corrupted_lines(data: bytes) -> None:
    for raw in data.split(b"\n"):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if comparable(text):
            assert (scan(text) is None) == json_loads_accepts(text), text


@given(text=json_ish)
def test_scan_agrees_with_json_loads_on_random_text(text: str) -> None:
    assume(comparable(text))
    assert (scan(text) is None) == json_loads_accepts(text)


@given(rows=row_lines(max_size=2))
def test_scan_accepts_every_generated_line(rows: list[str]) -> None:
    for line in rows:
        assert scan(line) is None, line


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("NaN", ("nan_infinity", 0)),
        ('{"a":-Infinity}', ("nan_infinity", 5)),
        ('["\\ud800"]', ("lone_surrogate", 2)),
        ('"\\udc00\\ud800"', ("lone_surrogate", 1)),
        ("[" * 129 + "]" * 129, ("too_deep", 128)),
        ("[" * 128 + "]" * 128, None),
        ("-" + "9" * 4301, ("long_integer", 0)),
        ("9" * 4300, None),
        ("9" * 4301 + ".0", None),
    ],
)
def test_scan_on_what_json_loads_takes_but_json_does_not(
    text: str, problem: tuple[str, int] | None
) -> None:
    assert scan(text) == problem


# ---- going on past bad rows (on_bad="report" and "skip") -------------------------------------


def bad_rows_outcome(
    src: Path, dst: Path, max_rows: int, on_bad: str, max_bytes: int = MAX_ROLLOUT_BYTES
) -> tuple[Any, ...]:
    """What ``normalise_rollout_file(on_bad=...)`` did: the bytes written and the report's
    counts and skipped errors, or the error with its bad rows; ``dst`` is put back."""
    before = dst.read_bytes()

    def listed(errors: Any) -> list[tuple[Any, ...]]:
        return [(type(e).__name__, str(e), error_facts(e)) for e in errors]

    try:
        report = normalise_rollout_file(
            src, dst, max_rows=max_rows, max_bytes=max_bytes, on_bad=on_bad
        )
    except Exception as exc:  # the error itself is compared
        assert dst.read_bytes() == before, "the destination changed although the run failed"
        return (
            "error",
            type(exc).__name__,
            str(exc),
            error_facts(exc, OS_ERROR_FACTS),
            getattr(exc, "bad_rows", None),
            getattr(exc, "rows", None),
            listed(getattr(exc, "errors", ())),
        )
    written = dst.read_bytes()
    dst.write_bytes(before)
    counts = (report.rows, report.lines, report.blank_lines, report.dropped_keys, report.bytes_in)
    return ("ok", written, counts, report.bad_rows, listed(report.skipped))


@given(
    data=corrupted(),
    max_rows=st.integers(1, 6),
    compressed=st.booleans(),
    on_bad=st.sampled_from(["report", "skip"]),
)
def test_bad_rows_are_counted_alike_on_both_engines(
    workdir: Path, data: bytes, max_rows: int, compressed: bool, on_bad: str
) -> None:
    src = workdir / ("going.jsonl.gz" if compressed else "going.jsonl")
    src.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
    dst = workdir / "kept.jsonl"
    dst.write_bytes(b"previous content\n")
    seen = {}
    for name in ENGINES:
        with use_engine(name):
            seen[name] = bad_rows_outcome(src, dst, max_rows, on_bad)
            stopped = normalise_outcome(src, dst, max_rows)
        going = seen[name]
        if stopped[0] == "ok":  # no bad row: the same output, none skipped
            assert going[:2] == ("ok", stopped[1]) and going[3] == 0, name
        elif going[0] == "ok" or going[1] == "RolloutBadRowsError":
            # The first bad row is the error a run that stops raises.
            first = going[4][0] if going[0] == "ok" else going[6][0]
            assert first[:2] == stopped[1:3], name
        else:  # a fault of the file as a whole came first
            assert going[:3] == stopped[:3], name
    assert len(set(map(repr, seen.values()))) == 1, seen
    assert temp_files(workdir) == []


# ---- Parquet output going on past bad rows: the rows and errors of the JSONL path ------------

KIND_CODES = ("prompt_not_text", "prompt_not_messages")
"""A row whose prompt is not of the Parquet table's kind: a bad row of Parquet output only."""


def parquet_outcome(
    src: Path, dst: Path, max_rows: int, on_bad: str, prompt_kind: str
) -> tuple[Any, ...]:
    """As ``bad_rows_outcome``, into Parquet: the table's schema and rows read back."""
    import pyarrow.parquet as pq

    from agent_rollout.arrow import arrow_to_rows

    before = dst.read_bytes()

    def listed(errors: Any) -> list[tuple[Any, ...]]:
        return [(type(e).__name__, str(e), error_facts(e)) for e in errors]

    try:
        report = normalise_rollout_file(
            src, dst, max_rows=max_rows, on_bad=on_bad, prompt_kind=prompt_kind
        )
    except Exception as exc:  # the error itself is compared
        assert dst.read_bytes() == before, "the destination changed although the run failed"
        return (
            "error",
            type(exc).__name__,
            str(exc),
            error_facts(exc, OS_ERROR_FACTS),
            getattr(exc, "bad_rows", None),
            getattr(exc, "rows", None),
            listed(getattr(exc, "errors", ())),
        )
    table = pq.read_table(dst)
    dst.write_bytes(before)
    counts = (report.rows, report.lines, report.blank_lines, report.dropped_keys, report.bytes_in)
    rows = list(arrow_to_rows(table))
    return ("ok", str(table.schema), rows, counts, report.bad_rows, listed(report.skipped))


def as_parquet_holds(row: dict, prompt_kind: str) -> dict:
    """A row as it reads back from Parquet: with ``messages``, a str prompt is one user
    message; message keys whose value is None are absent."""
    if prompt_kind == "messages" and isinstance(row["prompt"], str):
        row = {**row, "prompt": [{"role": "user", "content": row["prompt"]}]}
    return without_null_keys(row)


@st.composite
def of_both_kinds(draw: st.DrawFn) -> bytes:
    """A broken file (``corrupted``) with a few good rows of either prompt kind put in."""
    lines = draw(corrupted()).split(b"\n")
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, draw(st.sampled_from(KIND_LINES)))
    return b"\n".join(lines)


KIND_LINES = [b'{"prompt":"t","answer":"a"}', b'{"prompt":[{"role":"u","content":"m"}],"n":1}']


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="needs pyarrow")
@given(
    data=of_both_kinds(),
    max_rows=st.one_of(st.integers(1, 6), st.just(1000)),
    on_bad=st.sampled_from(["report", "skip"]),
    prompt_kind=st.sampled_from(["auto", "messages"]),
)
def test_parquet_bad_rows_are_those_of_jsonl_on_both_engines(
    workdir: Path, data: bytes, max_rows: int, on_bad: str, prompt_kind: str
) -> None:
    src = workdir / "going.jsonl"
    src.write_bytes(data)
    jsonl_dst, parquet_dst = workdir / "kept.jsonl", workdir / "kept.parquet"
    jsonl_dst.write_bytes(b"previous content\n")
    parquet_dst.write_bytes(b"previous content\n")
    seen = {}
    for name in ENGINES:
        with use_engine(name):
            jsonl = bad_rows_outcome(src, jsonl_dst, max_rows, on_bad)
            parquet = parquet_outcome(src, parquet_dst, max_rows, on_bad, prompt_kind)
        seen[name] = parquet
        listed = parquet[5] if parquet[0] == "ok" else parquet[6]
        other_kind = [e for e in listed if dict(e[2])["code"] in KIND_CODES]
        if not other_kind:  # every row fits the table: what the JSONL path does, as Parquet
            if jsonl[0] == "error":
                assert parquet == jsonl, name
            else:
                rows = [json.loads(line) for line in jsonl[1].splitlines()]
                assert parquet[2] == [as_parquet_holds(row, prompt_kind) for row in rows], name
                assert parquet[3:] == jsonl[2:], name
        else:  # those rows are bad rows too, in line order among the others
            assert prompt_kind == "auto", name
            jsonl_listed = jsonl[4] if jsonl[0] == "ok" else jsonl[6]
            assert [e for e in listed if e not in other_kind] == jsonl_listed, name
            assert parquet[0] == "error" or parquet[3][0] == jsonl[2][0] - len(other_kind)
            lines = [dict(e[2])["line"] for e in listed]
            assert lines == sorted(lines), name
    assert len(set(map(repr, seen.values()))) == 1, seen
    assert temp_files(workdir) == []


def test_an_object_of_many_keys_some_repeated_reads_alike(workdir: Path) -> None:
    # 20,000 keys in one message and in a value inside it, every tenth repeated later
    # in the object: first place, last value, as json.loads keeps them. (The Rust
    # engine once looked each key up in the keys before it: its time grew with their
    # square: 2.4 s at 40,000 keys, and this test took 28 s on a dev build.)
    def members(count: int) -> str:
        first = [f'"k{i}": {i}' for i in range(count)]
        again = [f'"k{i}": "again {i}"' for i in range(0, count, 10)]
        return ", ".join([*first, *again])

    inner = "{" + members(20_000) + "}"
    message = '{"role": "user", "content": "hi", "extra": ' + inner + ", " + members(20_000)
    line = '{"prompt": [' + message + '}], "answer": "a"}'
    src = workdir / "many_keys.jsonl"
    src.write_text(line + "\n", encoding="utf-8")
    dst = workdir / "many_keys_out.jsonl"
    expected = normalise_rollout_rows([json.loads(line)])
    got = expected[0]["prompt"][0]
    assert got["k10"] == "again 10" and list(got)[:4] == ["role", "content", "extra", "k0"]
    assert got["extra"]["k20"] == "again 20" and got["extra"]["k21"] == 21
    for name in ENGINES:
        with use_engine(name):
            assert read_rollout_jsonl(src) == expected, name
            if dst.exists():
                dst.unlink()
            normalise_rollout_file(src, dst)
            assert dst.read_bytes() == canonical(expected), name
