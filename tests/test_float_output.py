"""Floats written by ``normalise_rollout_file`` are byte-identical to ``json.dumps``.

``json.dumps`` writes a float as ``float.__repr__`` does: the shortest digits that read
back as the same double, the even one of two equally near candidates, fixed notation for
decimal exponents -4..15 (``.0`` when integral) and ``1e+16``/``1e-05`` otherwise. The Rust
writer rebuilds that layout from Ryū's digits; these tests hold it to ``json.dumps`` on
random doubles, random bit patterns, exact ties, subnormals, extremes and the powers of ten
around the thresholds, and on numbers spelled in every way JSON allows. Both engines run.
"""

from __future__ import annotations

import json
import math
import random
import struct
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agent_rollout import normalise_rollout_file, read_rollout_jsonl

PER_ROW = 64
# The engine fixture only selects an engine: nothing in it needs resetting per example.
ENGINE_PER_TEST = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def row_of(values: Sequence[float]) -> dict:
    return {"prompt": [{"role": "user", "x": list(values)}]}


def normalised_lines(directory: Path, lines: Iterable[str]) -> list[str]:
    """Write ``lines`` as a JSONL file, normalise it, return the output's lines."""
    src, dst = directory / "in.jsonl", directory / "out.jsonl"
    src.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    normalise_rollout_file(src, dst)
    return dst.read_text(encoding="utf-8").splitlines()


def assert_written_like_dumps(directory: Path, values: Sequence[float]) -> None:
    rows = [row_of(values[i : i + PER_ROW]) for i in range(0, len(values), PER_ROW)]
    canonical = [dumps(row) for row in rows]
    # Each row twice: as json.dumps spells it, which the Rust engine may copy as it
    # stands (rust/jsonl/verbatim.rs, `verbatim_row`: a float already spelled as repr spells it),
    # and with a space in the message, which it must parse, so that every float goes
    # through the float writer too.
    spaced = [line.replace('"x":[', '"x": [') for line in canonical]
    expected = [line for pair in zip(canonical, canonical, strict=True) for line in pair]
    got = normalised_lines(
        directory, [line for pair in zip(canonical, spaced, strict=True) for line in pair]
    )
    mismatches = []
    for want, line in zip(expected, got, strict=True):
        numbers = json.loads(want)["prompt"][0]["x"]
        for want_x, got_x in zip(numbers, _raw_numbers(line), strict=True):
            if dumps(want_x) != got_x:
                mismatches.append((want_x, got_x))
    assert not mismatches, mismatches[:10]
    assert got == expected


def _raw_numbers(line: str) -> list[str]:
    """The number texts of the ``x`` list of an output line, as written."""
    start = line.index('"x":[') + len('"x":[')
    return line[start : line.index("]", start)].split(",")


def from_bits(bits: int) -> float:
    value: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return value


def finite_from_bits(rng: random.Random, count: int) -> list[float]:
    out: list[float] = []
    while len(out) < count:
        value = from_bits(rng.getrandbits(64))
        if math.isfinite(value):
            out.append(value)
    return out


def exact_ties(rng: random.Random, count: int) -> list[float]:
    """Doubles in [2**49, 2**50) ending in .25 or .75: the ulp there is 0.125, so the
    shortest round-trip form has 16 digits and two candidates equally near (the case
    ``779539845543410.25`` -> ``...410.2`` of the issue)."""
    out = [779539845543410.25]
    for _ in range(count):
        whole = rng.randrange(2**49, 2**50)
        out.append(whole + rng.choice((0.25, 0.75)))
    return out


def edges() -> list[float]:
    values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        0.5,
        2.0**53,
        2.0**53 + 2,
        2.0**63,
        1e15,
        1e16,
        9999999999999998.0,
        123456789012345.6,
        0.0001,
        0.00001,
        1.5e-7,
        5e-324,  # the smallest subnormal
        -5e-324,
        2.2250738585072009e-308,  # the largest subnormal
        2.2250738585072014e-308,  # the smallest normal
        1.7976931348623157e308,  # the largest double
        -1.7976931348623157e308,
    ]
    for exp in range(-30, 31):
        power = float(f"1e{exp}")
        values += [power, math.nextafter(power, 0.0), math.nextafter(power, math.inf)]
        values += [-power, 9.5 * power, 1.25 * power]
    # Subnormals from their bit patterns (exponent field 0).
    rng = random.Random(7)
    values += [from_bits(rng.getrandbits(52)) for _ in range(500)]
    return values


def test_edges_ties_and_subnormals(engine: str, tmp_path: Path) -> None:
    assert_written_like_dumps(tmp_path, edges() + exact_ties(random.Random(3), 4000))


def test_random_bit_patterns(engine: str, tmp_path: Path) -> None:
    # 50,000 doubles; before Ryū about 1 in 500 of these came out different.
    assert_written_like_dumps(tmp_path, finite_from_bits(random.Random(11), 50_000))


def test_read_gives_the_same_doubles(engine: str, tmp_path: Path) -> None:
    values = edges() + finite_from_bits(random.Random(5), 5000)
    path = tmp_path / "in.jsonl"
    path.write_text(dumps(row_of(values)) + "\n", encoding="utf-8")
    (row,) = read_rollout_jsonl(path)
    got = row["prompt"][0]["x"]
    assert [struct.pack("<d", v) for v in got] == [struct.pack("<d", v) for v in values]


@ENGINE_PER_TEST
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=200))
def test_hypothesis_floats(engine: str, values: list[float]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        assert_written_like_dumps(Path(directory), values)


@ENGINE_PER_TEST
@given(
    st.lists(
        st.integers(min_value=0, max_value=2**64 - 1).map(from_bits).filter(math.isfinite),
        min_size=1,
        max_size=200,
    )
)
def test_hypothesis_bit_patterns(engine: str, values: list[float]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        assert_written_like_dumps(Path(directory), values)


# Every way JSON lets a number with a fraction or an exponent be spelled.
NUMBER_TEXT = st.from_regex(
    r"-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,20})?[eE][+-]?([0-9]{1,2}|[12][0-9]{2}|0?30[0-7])"
    r"|-?(0|[1-9][0-9]{0,20})\.[0-9]{1,20}",
    fullmatch=True,
)


@ENGINE_PER_TEST
@given(st.lists(NUMBER_TEXT, min_size=1, max_size=20))
def test_hypothesis_number_spellings(engine: str, texts: list[str]) -> None:
    assume(all(math.isfinite(float(text)) for text in texts))
    line = '{"prompt":[{"role":"user","x":[' + ",".join(texts) + "]}]}"
    with tempfile.TemporaryDirectory() as directory:
        (got,) = normalised_lines(Path(directory), [line])
    assert got == dumps(json.loads(line))
