"""``agent-rollout stats``: the counts on both engines (and Parquet), the report, the JSON.

The counts are checked against an oracle written here from ``json.loads`` and
``normalise_rollout_rows``; the two engines against each other with hypothesis,
on files of hand-written JSON (duplicate keys, escapes) and on files big enough
to be cut into many chunks (the Rust engine merges its chunks' counts in input
order: the dropped key names kept must not depend on the cut).
"""

from __future__ import annotations

import ast
import gzip
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rollout import arrow_to_rows, normalise_rollout_file, normalise_rollout_rows
from agent_rollout._engine.stats import jsonl_stats, rollout_stats
from agent_rollout._errors import (
    ROW_MESSAGES,
    RolloutBadRowsError,
    RolloutFileError,
    RolloutRowError,
)
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._jsonl import FileLimits
from agent_rollout._limits import BAD_ROWS_KEPT
from agent_rollout._stats import Lengths, RolloutStats, prompt_chars
from agent_rollout.cli.stats import (
    STATS_VERSION,
    bar,
    can_draw,
    median,
    render_text,
)
from support import ENGINES, Cli, cli_env, cli_process, facts, use_engine

LIMITS = FileLimits(10_000_000, 1 << 40)


def expected(lines: list[str], max_names: int = 1000) -> RolloutStats:
    """The oracle: the counts of ``lines`` (JSON rows) as the docs define them."""
    stats = RolloutStats()
    for line in lines:
        stats.lines += 1
        if not line.strip(" \t\r"):
            stats.blank_lines += 1
            continue
        doc = json.loads(line)
        (row,) = normalise_rollout_rows([doc])
        stats.rows += 1
        prompt = row["prompt"]
        if isinstance(prompt, str):
            stats.text_prompts += 1
        else:
            stats.message_prompts += 1
            stats.messages[len(prompt)] = stats.messages.get(len(prompt), 0) + 1
        stats.prompt_chars.add(prompt_chars(prompt))
        if "answer" in row:
            stats.answers += 1
            stats.answer_chars.add(len(row["answer"]))
        for name in doc:
            if name in ("prompt", "answer"):
                continue
            stats.dropped_keys += 1
            if name in stats.names:
                stats.names[name] += 1
            elif len(stats.names) < max_names:
                stats.names[name] = 1
            else:
                stats.other_names += 1
    stats.messages = dict(sorted(stats.messages.items()))
    stats.bytes_in = sum(len(line.encode()) + 1 for line in lines)
    return stats


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


SAMPLE = [
    '{"prompt": "hello", "answer": "world", "reward": 1, "id": 3}',
    '{"prompt": [{"role": "user", "content": "hi there"}, {"role": "assistant", '
    '"content": [{"type": "text", "text": "abc"}, "de", {"type": "image"}]}], "reward": 2}',
    "",
    '{"prompt": "x", "answer": "", "id": 1, "id": 2}',
    '{"prompt": "h\\u00e9llo \\ud83d\\ude00", "answer": null, "meta": {"a": [1, 2.5]}}',
]


def test_the_counts_of_a_file_are_those_the_docs_define(engine: str, tmp_path: Path) -> None:
    got = jsonl_stats(str(write(tmp_path / "r.jsonl", SAMPLE)), LIMITS)
    assert got == expected(SAMPLE)
    assert (got.rows, got.blank_lines, got.text_prompts, got.message_prompts) == (4, 1, 3, 1)
    assert got.answers == 1  # "" and null are no answer
    assert got.messages == {2: 1}
    # 8 + (3 + 2): a str content whole, parts' text, str items; an image counts 0.
    assert got.prompt_chars.max == 13
    assert got.prompt_chars.min == 1
    assert got.prompt_chars.buckets[4] == 1  # 13 has bit length 4 (8-15)
    # "héllo 😀": 7 characters (Python's len), though 11 bytes in UTF-8.
    assert got.prompt_chars.buckets[3] == 2  # 5 ("hello") and 7
    assert got.names == {"reward": 2, "id": 2, "meta": 1}  # a repeated key once per row
    assert got.dropped_keys == 5


def test_gzip_input_gives_the_same_counts(engine: str, tmp_path: Path) -> None:
    plain = write(tmp_path / "r.jsonl", SAMPLE)
    packed = tmp_path / "r.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert jsonl_stats(str(packed), LIMITS) == jsonl_stats(str(plain), LIMITS)


def test_bad_rows_are_counted_and_the_first_listed(engine: str, tmp_path: Path) -> None:
    lines = ['{"prompt": "a", "x": 1}', '{"prompt": 3}', "not json", '{"prompt": ""}']
    lines += ['{"prompt": "b", "answer": 2}'] * 30 + ['{"prompt": "c"}']
    got = jsonl_stats(str(write(tmp_path / "r.jsonl", lines)), LIMITS)
    assert (got.rows, got.bad_rows, len(got.bad)) == (2, 33, BAD_ROWS_KEPT)
    assert got.names == {"x": 1} and got.text_prompts == 2  # the good rows only
    assert re.match(r"\S*r\.jsonl:2: row 1: prompt: ", str(got.bad[0]))
    assert re.match(r"\S*r\.jsonl:3:1: invalid JSON", str(got.bad[1]))
    assert re.match(r"\S*r\.jsonl:5: row 4: answer: ", str(got.bad[3]))


def test_a_fault_of_the_input_ends_the_read_naming_the_bad_rows_before(
    engine: str, tmp_path: Path
) -> None:
    path = write(tmp_path / "r.jsonl", ['{"prompt": 3}', '{"prompt": "a"}', '{"prompt": "b"}'])
    with pytest.raises(RolloutBadRowsError, match=r"r\.jsonl:3: more than 2 rows") as caught:
        jsonl_stats(str(path), FileLimits(2, 1 << 40))
    assert caught.value.bad_rows == 1 and caught.value.errors[0].line == 1
    only_bad = write(tmp_path / "bad.jsonl", ['{"prompt": 3}'])
    assert jsonl_stats(str(only_bad), LIMITS).bad_rows == 1  # no "no rows" error


# ---- the engines agree ----------------------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
KEYS = st.sampled_from(["id", "reward", "meta", "prompt", "answer", "é", "a\\u0062", 'q\\"'])


def _dumps(value: Any) -> str:
    """JSON as compact writers (and our output) spell it: the Rust engine's shortcut for
    rows already canonical takes such lines, the parser all others."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _value() -> st.SearchStrategy[str]:
    return st.one_of(
        st.just("null"),
        st.integers(-5, 5).map(str),
        TEXT.map(_dumps),
        st.just('[1,{"k":2.5}]'),
    )


def _message() -> st.SearchStrategy[str]:
    content = st.one_of(
        TEXT.map(_dumps),
        st.lists(
            st.one_of(TEXT.map(_dumps), TEXT.map(lambda t: _dumps({"type": "text", "text": t}))),
            max_size=3,
        ).map(lambda parts: "[" + ",".join(parts) + "]"),
        st.just("null"),
        st.just("3"),
    )
    return st.builds(
        lambda role, body, more: '{"role":' + _dumps(role) + more + ',"content":' + body + "}",
        st.sampled_from(["user", "assistant", "tool"]),
        content,
        st.sampled_from(["", ',"name":"x"']),
    )


def _row() -> st.SearchStrategy[str]:
    prompt = st.one_of(
        TEXT.filter(bool).map(_dumps),
        st.lists(_message(), min_size=1, max_size=5).map(lambda m: "[" + ",".join(m) + "]"),
    )
    answer = st.one_of(st.none(), st.just("null"), TEXT.map(_dumps))
    extras = st.lists(st.tuples(KEYS, _value()), max_size=4)

    def line(p: str, a: Any, more: list[tuple[str, str]], spaced: bool) -> str:
        members = [f'"prompt":{p}'] + ([f'"answer":{a}'] if a is not None else [])
        members += [f'"{key}":{value}' for key, value in more if key not in ("prompt", "answer")]
        text = "{" + ",".join(members) + "}"
        return text.replace('":', '": ') if spaced else text  # spaced: never canonical

    return st.builds(line, prompt, answer, extras, st.booleans())


BAD = ['{"prompt":3}', "not json", '{"prompt":""}', '{"prompt":[]}', "[1]"]
BAD_LINES = st.sampled_from(BAD)


@pytest.mark.skipif(len(ENGINES) < 2, reason="needs both engines")
@given(
    lines=st.lists(
        st.one_of(_row(), _row(), st.just(""), st.just("  "), BAD_LINES), min_size=1, max_size=30
    )
)
@settings(max_examples=60, deadline=None)
def test_both_engines_count_alike(tmp_path_factory: Any, lines: list[str]) -> None:
    path = write(tmp_path_factory.mktemp("stats") / "r.jsonl", lines)
    outcomes: list[Any] = []
    for name in ENGINES:
        with use_engine(name):
            try:
                got = jsonl_stats(str(path), LIMITS, max_names=3)
                outcomes.append((got, [str(error) for error in got.bad]))
            except ValueError as exc:  # no rows: the same error on both
                outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]
    if not isinstance(outcomes[0], str):
        good = [line for line in lines if line not in BAD]
        want = expected(good, max_names=3)
        got = outcomes[0][0]
        assert got.bad_rows == len(lines) - len(good)
        got.lines, got.blank_lines, got.bytes_in, got.bad_rows = (
            want.lines,
            want.blank_lines,
            want.bytes_in,
            0,
        )
        assert got == want


def test_many_chunks_keep_the_first_names_in_input_order(engine: str, tmp_path: Path) -> None:
    # About 6 MB: the Rust engine cuts it into several chunks parsed on worker threads;
    # new names keep coming in every chunk, and names seen early come back late.
    filler = 'x\n"\x01é😀' * 40
    lines = []
    for i in range(25_000):
        row = {
            "prompt": filler,
            f"k{i % 7000}": 1,
            f"late{i // 5000}": 2,
            "answer": filler[i % 9 :],
        }
        if i % 3 == 0:
            row["prompt"] = [{"role": "user", "content": filler[: i % 50] or None}] * (i % 4 + 1)
        if i % 1000 == 0:
            row['q"uoted'] = 3  # a name with an escape: the row is parsed
        lines.append(_dumps(row) if i % 100 else json.dumps(row))
    path = write(tmp_path / "big.jsonl", lines)
    got = jsonl_stats(str(path), LIMITS, max_names=50)
    assert got == expected(lines, max_names=50)
    assert list(got.names)[:4] == ["k0", "late0", 'q"uoted', "k1"]
    assert got.other_names == got.dropped_keys - sum(got.names.values())


@pytest.mark.skipif(len(ENGINES) < 2, reason="needs both engines")
def test_a_row_of_many_keys_counts_alike_on_both_engines(tmp_path: Path) -> None:
    # 20,000 distinct keys in one row (the Rust engine once searched the keys before each
    # key: its time grew with their square; benches/bench_stats.py times 200,000), a
    # repeated key among them, and rows of a few keys around it.
    keys = ", ".join(f'"k{i}": {i}' for i in range(20_000))
    lines = [
        '{"prompt": "a", "k5": 0, "x": 1}',
        '{"prompt": "b", "k3": 1, ' + keys + ', "answer": "c", "k7": 2}',
        '{"prompt": "d", ' + ", ".join(f'"k{i % 20}": {i}' for i in range(40)) + "}",
        '{"prompt": "e", "y": 1}',
    ]
    path = write(tmp_path / "keys.jsonl", lines)
    outcomes = []
    for name in ENGINES:
        with use_engine(name):
            outcomes.append(jsonl_stats(str(path), LIMITS))
    assert outcomes[0] == outcomes[1] == expected(lines)
    got = outcomes[0]
    assert got.dropped_keys == 2 + 20_000 + 20 + 1
    assert list(got.names)[:4] == ["k5", "x", "k3", "k0"]
    assert got.names["k5"] == 3 and got.names["k3"] == 2 and got.names["k100"] == 1
    assert got.other_names == got.dropped_keys - sum(got.names.values())


# ---- Parquet ---------------------------------------------------------------------------------

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _without_file_counts(stats: RolloutStats) -> RolloutStats:
    stats.lines = stats.blank_lines = stats.bytes_in = stats.dropped_keys = 0
    stats.names, stats.other_names = {}, 0
    return stats


@pytest.mark.parametrize("kind", ["text", "messages"])
def test_parquet_written_by_us_counts_as_its_jsonl(engine: str, tmp_path: Path, kind: str) -> None:
    lines = [
        json.dumps(
            {"prompt": [{"role": "user", "content": f"q{i} é" * (i % 9)}], "answer": "a" * i}
        )
        if kind == "messages"
        else json.dumps({"prompt": f"q{i} é" * (i % 9 + 1), "answer": "a" * i, "id": i})
        for i in range(300)
    ]
    src = write(tmp_path / "r.jsonl", lines)
    dest = tmp_path / "r.parquet"
    normalise_rollout_file(src, dest)
    got = rollout_stats(str(dest), LIMITS)
    assert got.rows == 300
    assert _without_file_counts(got) == _without_file_counts(jsonl_stats(str(src), LIMITS))


def test_parquet_of_any_shape_goes_through_the_row_rules(tmp_path: Path) -> None:
    # Content parts (JSON text in Parquet) take the row-by-row path; same numbers.
    src = write(tmp_path / "r.jsonl", SAMPLE[:2])
    dest = tmp_path / "r.parquet"
    normalise_rollout_file(src, dest, prompt_kind="messages")
    got = rollout_stats(str(dest), LIMITS)
    assert got.message_prompts == 2 and got.prompt_chars.max == 13
    table = pa.table({"prompt": ["a", None], "answer": ["b", "c"], "score": [1, 2]})
    pq.write_table(table, tmp_path / "bad.parquet")
    bad = rollout_stats(str(tmp_path / "bad.parquet"), LIMITS)
    assert (bad.rows, bad.bad_rows, bad.names) == (1, 1, {"score": 1})
    assert re.match(r"\S*bad\.parquet: row 1: prompt: ", str(bad.bad[0]))
    pq.write_table(table.slice(0, 1), tmp_path / "one.parquet")
    one = rollout_stats(str(tmp_path / "one.parquet"), LIMITS)
    assert (one.rows, one.names, one.dropped_keys, one.answers) == (1, {"score": 1}, 1, 1)


def _messages_file(path: Path, rows: int = 3000, **write: Any) -> Path:
    """A Parquet file of messages prompts (a field besides role and content), an answer
    and an id column, in row groups of 1,000 rows, snappy, with page checksums."""
    messages = pa.list_(
        pa.struct([("role", pa.string()), ("content", pa.string()), ("name", pa.string())])
    )
    table = pa.table(
        {
            "prompt": pa.array(
                [
                    [{"role": "user", "content": f"q{i} " * (i % 7 + 1), "name": "n"}]
                    for i in range(rows)
                ],
                messages,
            ),
            "answer": pa.array([f"a{i}" for i in range(rows)], pa.string()),
            "id": pa.array(range(rows), pa.int64()),
        }
    )
    pq.write_table(table, path, row_group_size=1000, compression="snappy", **write)
    return path


def _column_chunk(path: Path, group: int, column: str) -> tuple[int, int]:
    """Where the chunk of ``column`` (a leaf's dotted path) in row group ``group`` starts,
    and its bytes."""
    meta = pq.ParquetFile(path).metadata.row_group(group)
    chunk = next(
        meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == column
    )
    return chunk.dictionary_page_offset or chunk.data_page_offset, chunk.total_compressed_size


def _footer(data: bytes) -> tuple[int, int]:
    """Where a Parquet file's footer (its metadata) starts, and its bytes."""
    size = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - size, size


def _corrupt(good: Path, dest: Path, how: str) -> Path:
    """``good`` made unreadable in the way ``how`` names, at ``dest``."""
    data = bytearray(good.read_bytes())
    start, size = _footer(bytes(data))
    if how == "zeroed footer":
        data[start : start + size] = bytes(size)
    elif how == "bad thrift":
        data[start : start + size] = bytes((i * 37 + 11) % 256 for i in range(size))
    elif how == "footer longer than the file":
        data[-8:-4] = (len(data) * 2).to_bytes(4, "little")
    elif how == "truncated":
        data = data[: len(data) // 2]
    elif how == "bad magic":
        data[-4:] = b"PAR2"
    elif how == "corrupt page header":
        at, _ = _column_chunk(good, 1, "prompt.list.element.content")
        data[at : at + 24] = bytes(24)
    elif how == "corrupt page (checksum)":
        at, size = _column_chunk(good, 2, "answer")
        for i in range(at + size - 8, at + size - 2):
            data[i] ^= 0x55
    elif how == "not Parquet":
        data = bytearray(b'{"prompt": "a"}\n')
    elif how == "empty":
        data = bytearray()
    if how == "a folder":
        dest.mkdir()
    else:
        dest.write_bytes(bytes(data))
    return dest


UNREADABLE = [
    "zeroed footer",
    "bad thrift",
    "footer longer than the file",
    "truncated",
    "bad magic",
    "corrupt page header",
    "corrupt page (checksum)",
    "not Parquet",
    "empty",
    "a folder",
]


@pytest.mark.parametrize("how", UNREADABLE)
def test_every_unreadable_parquet_file_gets_one_message_and_exit_1(
    engine: str, cli: Cli, tmp_path: Path, how: str
) -> None:
    good = _messages_file(tmp_path / "good.parquet", write_page_checksum=True)
    assert cli("stats", str(good)).code == 0
    bad = _corrupt(good, tmp_path / "bad.parquet", how)
    result = cli("stats", str(bad))
    assert result.code == 1, result.err
    # One line, the file named, printable: no line break of pyarrow's, escaped or not.
    assert re.fullmatch(
        re.escape(str(bad)) + r": not a readable Parquet file \([^\n]+\)\n", result.err
    )
    assert "\\n" not in result.err and result.out == ""
    with pytest.raises(RolloutValueError, match=r"not a readable Parquet file"):
        rollout_stats(str(bad), LIMITS)


def test_parquet_stats_reads_only_the_columns_it_counts(engine: str, tmp_path: Path) -> None:
    # The pages of the id column and of the messages' name field broken: never read.
    good = _messages_file(tmp_path / "good.parquet")
    data = bytearray(good.read_bytes())
    for column in ("id", "prompt.list.element.name"):
        for group in range(3):
            at, size = _column_chunk(good, group, column)
            data[at : at + size] = bytes(size)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(bytes(data))
    assert rollout_stats(str(broken), LIMITS) == rollout_stats(str(good), LIMITS)


def test_parquet_stats_imports_only_what_it_needs(tmp_path: Path) -> None:
    # pyarrow imports pandas (most of a second, tens of MB) for a Python value handed
    # to it (pa.array, pa.scalar, an int operand of pyarrow.compute); stats hands none.
    # pyarrow.compute (0.08 s of CPU) is imported when a batch is counted, not before.
    path = _messages_file(tmp_path / "r.parquet")
    code = (
        "import sys\n"
        "import agent_rollout.arrow.stats\n"
        "print('pyarrow.compute' in sys.modules)\n"
        "from agent_rollout.cli import main\n"
        f"assert main(['stats', {str(path)!r}, '--format', 'json']) == 0\n"
        "names = ('pandas', 'pyarrow.dataset', 'pyarrow.compute')\n"
        "print(sorted(name for name in names if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (lines[0], lines[-1]) == ("False", "['pyarrow.compute']")


def test_parquet_stats_uses_only_public_pyarrow() -> None:
    # pyarrow's private modules and names (pyarrow._compute, ...) change without
    # notice: the count calls the kernels through the public pyarrow.compute.
    import agent_rollout.arrow.stats as module

    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    used = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            used += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in ("pa", "pq", "pc"):
                used.append(f"pyarrow.{node.attr}")
    private = [
        name
        for name in used
        if name.split(".")[0] == "pyarrow"
        and any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert used and private == []


LAYOUTS = {
    # column chunks under 1 MiB, each read whole
    "row groups of 6,000 rows": {"row_group_size": 6000},
    # one row group whose content chunk is over 1 MiB: read through a 1 MiB buffer
    "one big row group": {"compression": "none", "use_dictionary": False},
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("ascii_only", [True, False])
def test_parquet_counts_as_jsonl_across_batches(
    engine: str, tmp_path: Path, ascii_only: bool, layout: str
) -> None:
    # More rows than a batch, contents null, empty, ASCII or not: the lengths read off the
    # offsets (ASCII) or counted (any other) are those of the JSONL of the same rows,
    # whether the column chunks are read whole or through a buffer.
    text = "plain text" if ascii_only else "h\u00e9llo \U0001f600"
    rows = []
    for i in range(20_000):
        contents = [None, "", text * (i % 5), "x" * (i % 300)]
        prompt = [{"role": "user", "content": contents[(i + j) % 4]} for j in range(i % 3 + 1)]
        rows.append({"prompt": prompt, "answer": [None, "", text * (i % 4 + 1)][i % 3], "id": i})
    src = write(tmp_path / "r.jsonl", [json.dumps(row) for row in rows])
    dest = tmp_path / "r.parquet"
    pq.write_table(pa.Table.from_pylist(rows), dest, **LAYOUTS[layout])
    biggest = _column_chunk(dest, 0, "prompt.list.element.content")[1]
    assert (biggest > 1 << 20) == (layout == "one big row group")
    got = rollout_stats(str(dest), LIMITS)
    want = jsonl_stats(str(src), LIMITS)
    assert got.rows == 20_000 and got.names == want.names == {"id": 20_000}
    assert _without_file_counts(got) == _without_file_counts(want)


def test_the_unreadable_parquet_message_has_one_home(engine: str, tmp_path: Path) -> None:
    # Its text is _errors.PARQUET_MESSAGES's, as every file message is in _errors; no
    # string of arrow.stats's code spells it again.
    import agent_rollout.arrow.stats as module
    from agent_rollout._errors import PARQUET_MESSAGES

    bad = _corrupt(_messages_file(tmp_path / "good.parquet"), tmp_path / "bad.parquet", "bad magic")
    with pytest.raises(RolloutValueError) as caught:
        rollout_stats(str(bad), LIMITS)
    shape = re.escape(f"{bad}: " + PARQUET_MESSAGES["unreadable"])
    assert re.fullmatch(shape.replace(re.escape("{reason}"), r"[^\n]+"), str(caught.value))
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    texts = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]
    assert texts and not [text for text in texts if "readable Parquet" in text]


def _read_bytes(path: Path, columns: tuple[str, ...]) -> int:
    """The uncompressed bytes of the column chunks of ``columns`` (leaf paths), every row
    group, as the footer of ``path`` counts them."""
    meta = pq.ParquetFile(path).metadata
    return sum(
        meta.row_group(g).column(i).total_uncompressed_size
        for g in range(meta.num_row_groups)
        for i in range(meta.num_columns)
        if meta.row_group(g).column(i).path_in_schema in columns
    )


def test_parquet_max_bytes_bounds_the_columns_read_uncompressed(
    engine: str, tmp_path: Path
) -> None:
    # --max-bytes on Parquet: the uncompressed bytes of the columns read, as the footer
    # counts them, checked before any row is read; the columns not read do not count.
    path = _messages_file(tmp_path / "r.parquet")
    read = _read_bytes(path, ("prompt.list.element.role", "prompt.list.element.content", "answer"))
    everything = _read_bytes(path, ("prompt.list.element.name", "id")) + read
    assert rollout_stats(str(path), FileLimits(10_000_000, read)).rows == 3000
    assert everything > read
    with pytest.raises(RolloutFileError) as caught:
        rollout_stats(str(path), FileLimits(10_000_000, read - 1))
    assert caught.value.code == "file_too_large"
    assert re.match(
        facts(str(path), f"{read - 1:,} bytes", "uncompressed", f"max_bytes={read - 1}"),
        str(caught.value),
    )


BATCH_PEAK = """
import sys
import pyarrow as pa
from agent_rollout._engine.stats import rollout_stats
from agent_rollout._jsonl import FileLimits
stats = rollout_stats(sys.argv[1], FileLimits(10_000_000, 1 << 40))
print(stats.rows, stats.prompt_chars.max, pa.default_memory_pool().max_memory())
"""


def test_parquet_batches_are_bounded_in_bytes(engine: str, tmp_path: Path) -> None:
    # Rows of 4 KB: 8,192 of them, one batch by rows alone, are 32 MB of text (a peak
    # of 36 MB in pyarrow's pool); a batch keeps to 2 MiB of the columns read, as the
    # footer counts them. The peak is pyarrow's own (its pool: every allocation of
    # the read, decoded batches and pages), in a process of its own.
    path = tmp_path / "long.parquet"
    prompts = [f"{i:08d}" + "x" * 4000 for i in range(8192)]
    # Pages of 64 rows (256 KB): the reader's own buffers stay small.
    pq.write_table(pa.table({"prompt": prompts}), path, compression="zstd", write_batch_size=64)
    env = {**cli_env(engine), "ARROW_DEFAULT_MEMORY_POOL": "system"}
    done = subprocess.run(
        [sys.executable, "-c", BATCH_PEAK, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows, longest, peak = (int(word) for word in done.stdout.split())
    assert (rows, longest) == (8192, 4008)
    assert peak < 16 << 20, peak


def test_parquet_footer_over_the_bound_is_unreadable(engine: str, cli: Cli, tmp_path: Path) -> None:
    # The footer is held whole, parsed (about ten times its bytes): one over
    # MAX_PARQUET_FOOTER_BYTES is refused as an unreadable file, before it is parsed;
    # one under it is read.
    from agent_rollout._limits import MAX_PARQUET_FOOTER_BYTES

    table = pa.table({"prompt": ["a"]})
    under, over = tmp_path / "under.parquet", tmp_path / "over.parquet"
    for path, pad in ((under, MAX_PARQUET_FOOTER_BYTES - 4096), (over, MAX_PARQUET_FOOTER_BYTES)):
        with pq.ParquetWriter(path, table.schema, store_schema=False) as writer:
            writer.write_table(table)
            writer.add_key_value_metadata({"pad": "x" * pad})  # held in the footer
    sizes = [pq.ParquetFile(path).metadata.serialized_size for path in (under, over)]
    assert sizes[0] <= MAX_PARQUET_FOOTER_BYTES < sizes[1]
    assert rollout_stats(str(under), LIMITS).rows == 1
    result = cli("stats", str(over))
    assert result.code == 1, result.err
    assert re.fullmatch(
        re.escape(str(over)) + r": not a readable Parquet file \([^\n]+\)\n", result.err
    )
    assert re.search(
        facts("MAX_PARQUET_FOOTER_BYTES", f"{MAX_PARQUET_FOOTER_BYTES:,}", "row groups"), result.err
    )


def _text(values: list[Any]) -> pa.Array:
    """A string array of ``values`` (bytes or None) as they are, UTF-8 or not, as another
    writer's file may hold them (pyarrow checks no UTF-8 building it from binary)."""
    return pa.array(values, pa.binary()).view(pa.string())


def _messages(prompts: list[list[tuple[bytes, bytes]]]) -> pa.Array:
    """A list<struct<role, content>> array of ``prompts``, (role, content) bytes as they are."""
    pairs = [pair for prompt in prompts for pair in prompt]
    offsets = [0]
    for prompt in prompts:
        offsets.append(offsets[-1] + len(prompt))
    fields = pa.StructArray.from_arrays(
        [_text([role for role, _ in pairs]), _text([content for _, content in pairs])],
        names=["role", "content"],
    )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), fields)


def _json_line(prompt: Any, answer: Any) -> bytes:
    """A JSONL line of ``prompt`` (bytes, or (role, content) bytes pairs) and ``answer``
    (bytes or None), their bytes as they are."""
    if isinstance(prompt, bytes):
        text = b'"' + prompt + b'"'
    else:
        messages = [b'{"role": "' + r + b'", "content": "' + c + b'"}' for r, c in prompt]
        text = b"[" + b", ".join(messages) + b"]"
    line = b'{"prompt": ' + text
    return line + (b"}" if answer is None else b', "answer": "' + answer + b'"}')


NOT_UTF8 = {
    "text": (
        [b"hello", b"caf\xc3\xa9", b"bad\xff", b"fine", b"ok"],
        ["prompt: invalid UTF-8 at byte 4", "answer: invalid UTF-8 at byte 1"],
    ),
    "messages": (
        [
            [(b"user", b"hello")],
            [(b"system", b"caf\xc3\xa9"), (b"user", b"q")],
            [(b"user", b"ok"), (b"user", b"bad\xff")],
            [(b"us\xffr", b"fine")],
            [(b"user", b"ok")],
        ],
        [
            "prompt[1].content: invalid UTF-8 at byte 4",
            "prompt[0].role: invalid UTF-8 at byte 3",
            "answer: invalid UTF-8 at byte 1",
        ],
    ),
}


@pytest.mark.parametrize("kind", list(NOT_UTF8))
@pytest.mark.parametrize("path", ["fast", "row by row"])
def test_parquet_text_not_utf8_is_a_bad_row_as_in_jsonl(
    engine: str, tmp_path: Path, kind: str, path: str
) -> None:
    # Another writer's Parquet may hold text that is not UTF-8: each such row is a bad
    # row naming its column and byte, as JSONL names the line's, whether its batch is
    # counted with pyarrow.compute (every row good otherwise) or row by row (an empty
    # prompt in it); the other rows are counted as their JSONL's.
    prompts, wheres = NOT_UTF8[kind]
    answers = [b"world", None, b"x", b"a", b"\xe9t\xe9"]
    if path == "row by row":
        prompts = [*prompts, b"" if kind == "text" else []]
        answers = [*answers, b"a"]
    column = _text(prompts) if kind == "text" else _messages(prompts)
    dest = tmp_path / "r.parquet"
    pq.write_table(pa.table({"prompt": column, "answer": _text(answers)}), dest)
    src = tmp_path / "r.jsonl"
    src.write_bytes(
        b"".join(_json_line(p, a) + b"\n" for p, a in zip(prompts, answers, strict=True))
    )
    got, want = rollout_stats(str(dest), LIMITS), jsonl_stats(str(src), LIMITS)
    rows = [2, 3, 4] if kind == "messages" else [2, 4]
    expected = [
        f"{dest}: row {row}: {where} of the text" for row, where in zip(rows, wheres, strict=True)
    ]
    if path == "row by row":
        rows.append(5)
        expected.append(f"{dest}: row 5: prompt: " + ROW_MESSAGES["prompt_empty"])
    assert [str(error) for error in got.bad] == expected
    assert [error.line for error in want.bad] == [row + 1 for row in rows]  # type: ignore[attr-defined]
    assert all(
        re.fullmatch(r"\S+:\d+: invalid UTF-8 at byte \d+ of the line", str(error))
        for error in want.bad[: len(wheres)]
    )
    got.bad = want.bad = ()
    assert got.bad_rows == want.bad_rows == len(expected)
    assert _without_file_counts(got) == _without_file_counts(want)


def test_arrow_to_rows_names_text_that_is_not_utf8(engine: str) -> None:
    table = pa.table(
        {
            "prompt": _messages([[(b"user", b"ok")], [(b"user", b"a"), (b"user", b"b\xc3")]]),
            "answer": _text([b"fine", b"fine"]),
        }
    )
    with pytest.raises(
        RolloutRowError, match=r"^row 1: prompt\[1\]\.content: invalid UTF-8 at byte 2 of the text$"
    ) as caught:
        arrow_to_rows(table)
    assert (caught.value.index, caught.value.path, caught.value.code) == (
        1,
        "prompt[1].content",
        "text_utf8",
    )
    with pytest.raises(RolloutRowError, match=r"^row 2: answer: invalid UTF-8 at byte 1 "):
        arrow_to_rows(pa.table({"prompt": ["a", "b", "c"], "answer": _text([b"x", None, b"\xff"])}))


# ---- the report and the JSON -----------------------------------------------------------------


def test_the_text_report_draws_histograms(engine: str, cli: Cli, tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", SAMPLE)
    result = cli("stats", str(path))
    assert result.code == 0, result.err
    out = result.out
    assert f"{path}: 4 rows" in out
    assert "prompts: text 3 (75.0%), messages 1 (25.0%)" in out
    assert "answers: with 1 (25.0%), without 3 (75.0%)" in out
    assert "messages per prompt: min 2, median 2, max 2" in out
    assert "dropped keys: 5: id 2, reward 2, meta 1" in out
    assert "prompt length (characters): min 1, mean" in out
    assert "8-15 |" in out


def test_bars_fall_back_to_ascii_where_the_output_cannot_take_blocks() -> None:
    assert bar(8, 8, True) == "█" * 40
    assert bar(1, 80, True) == "▌"  # half a character: four eighths
    assert bar(1, 8, False) == "#" * 5
    assert can_draw(io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert not can_draw(io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    stats = RolloutStats(rows=1, text_prompts=1, prompt_chars=Lengths())
    stats.prompt_chars.add(5)
    text = render_text(stats, "f", "jsonl", "rust", unicode=False)
    text.encode("ascii")  # nothing but ASCII


def test_the_json_shape(engine: str, cli: Cli, tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", SAMPLE)
    result = cli("stats", str(path), "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["stats_version"] == STATS_VERSION
    assert (doc["rows"], doc["bad_rows"], doc["engine"]) == (4, 0, engine)
    assert doc["prompt_kinds"] == {"text": 3, "messages": 1}
    assert doc["answers"] == {"with": 1, "without": 3}
    assert doc["messages_per_prompt"] == {
        "min": 2,
        "median": 2,
        "max": 2,
        "counts": [{"messages": 2, "rows": 1}],
    }
    assert doc["dropped_keys"]["names"][0] == {"name": "id", "rows": 2}
    assert doc["prompt_chars"]["histogram"][-1] == {"from": 8, "to": 15, "rows": 1}
    assert doc["answer_chars"]["min"] == doc["answer_chars"]["max"] == 5


def test_median_is_the_lower_one() -> None:
    assert median({1: 1, 2: 1}) == 1
    assert median({1: 1, 2: 2}) == 2
    assert median({}) is None


def test_exit_codes(engine: str, cli: Cli, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.jsonl", ['{"prompt": "a"}', "{"])
    result = cli("stats", str(bad))  # the report all the same, the bad row listed
    assert result.code == 1 and "bad rows: 1" in result.out and "bad.jsonl:2:" in result.out
    ended = cli("stats", str(bad), "--max-rows", "1")
    assert ended.code == 1 and "bad.jsonl:2: more than 1 row" in ended.err
    assert cli("stats", str(tmp_path / "missing.jsonl")).code == 2
    assert cli("stats", str(bad), "--format", "yaml").code == 2
    empty = write(tmp_path / "empty.jsonl", [""])
    assert cli("stats", str(empty)).code == 1


def test_the_installed_command_reads_standard_input() -> None:
    done = cli_process("stats", "-", "--format", "json", stdin=b'{"prompt": "a", "answer": "b"}\n')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answers"] == {"with": 1, "without": 0}


# ---- the report holds whatever the file does ----------------------------------------------


def test_text_the_output_cannot_encode_is_written_escaped(
    engine: str, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PYTHONIOENCODING=ascii: a key name, the file's name and a bad row's message
    # (which names the file) are shown with backslash escapes, not an encoding error.
    path = write(tmp_path / "namés.jsonl", ['{"prompt": "a", "kéy": 1}', '{"prompt": 3}'])
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    result = cli("stats", str(path))
    assert result.code == 1, result.err  # the bad row, reported in full
    ascii_out.flush()
    out = ascii_out.buffer.getvalue().decode("ascii")
    assert f"{tmp_path}/nam\\xe9s.jsonl: 1 row (" in out
    assert f"  {tmp_path}/nam\\xe9s.jsonl:2: row 1: prompt: " in out
    assert "dropped keys: 1: k\\xe9y 1" in out
    assert "  1 | #" in out  # the bars in ASCII too


def test_key_names_cannot_reorder_or_command_the_output(
    engine: str, cli: Cli, tmp_path: Path
) -> None:
    lines = ['{"prompt": "a", "\\u202eRTL": 1, "##[error]x": 2, "\\u2066iso\\u2069": 3}']
    path = write(tmp_path / "r.jsonl", lines)
    text = cli("stats", str(path))
    assert text.code == 0, text.err
    assert "\u202e" not in text.out and "\u2066" not in text.out and "##[" not in text.out
    assert "\\u202eRTL 1" in text.out and "\\u2066iso\\u2069 1" in text.out
    doc = cli("stats", str(path), "--format", "json")
    assert "##[" not in doc.out
    names = {entry["name"] for entry in json.loads(doc.out)["dropped_keys"]["names"]}
    assert names == {"\u202eRTL", "##[error]x", "\u2066iso\u2069"}  # JSON: the names as they are


# ---- the words of the report ---------------------------------------------------------------


def test_counts_say_row_or_rows_with_thousands_separators(
    engine: str, cli: Cli, tmp_path: Path
) -> None:
    one = cli("stats", str(write(tmp_path / "one.jsonl", ['{"prompt": "a"}', ""])))
    assert one.code == 0, one.err
    assert "one.jsonl: 1 row (17 bytes, 1 blank line)," in one.out
    many = write(tmp_path / "many.jsonl", ['{"prompt": "a"}'] * 1234 + [""] * 1001)
    result = cli("stats", str(many))
    assert result.code == 0, result.err
    assert "many.jsonl: 1,234 rows (20,745 bytes, 1,001 blank lines)," in result.out


@pytest.mark.parametrize(
    ("name", "flag", "value", "hint"),
    [
        ("big.jsonl", "--max-rows", "2", "--max-rows N"),
        ("big.jsonl", "--max-bytes", "20", "--max-bytes B"),
        ("big.parquet", "--max-rows", "2", "--max-rows N"),
        ("big.parquet", "--max-bytes", "20", "--max-bytes B"),
    ],
)
def test_limits_are_named_as_the_command_line_sets_them(
    engine: str, cli: Cli, tmp_path: Path, name: str, flag: str, value: str, hint: str
) -> None:
    path = tmp_path / name
    rows = ['{"prompt": "a"}'] * 3
    if name.endswith(".parquet"):
        normalise_rollout_file(write(tmp_path / "src.jsonl", rows), path)
    else:
        write(path, rows)
    result = cli("stats", str(path), flag, value)
    assert result.code == 1, result.err
    assert re.search(facts(name, f"{flag[2:].replace('-', '_')}={value}", hint), result.err)
    assert "max_rows=" not in result.err.split(";")[-1]  # the library's knob, not the flag's
    assert "max_bytes=" not in result.err.split(";")[-1]


def test_parquet_from_a_pipe_is_refused_naming_it(engine: str, cli: Cli, tmp_path: Path) -> None:
    fifo = tmp_path / "rows.parquet"
    os.mkfifo(fifo)
    # Held open for reading and writing, the pipe has a writer: an open does not block.
    held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        result = cli("stats", str(fifo))
    finally:
        os.close(held)
    assert result.code == 2, result.err
    assert re.search(facts(str(fifo), "FIFO", "regular file", "seeking"), result.err)
    missing = cli("stats", str(tmp_path / "gone.parquet"))
    assert missing.code == 2
    assert re.search(facts(str(tmp_path / "gone.parquet"), "No such file"), missing.err)
