"""Rows as Arrow: the schema, the round trip, both engines alike, TRL and datasets."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_rollout import RolloutRowError, normalise_rollout_rows
from support import (
    ENGINES,
    indexed_outcome_on,
    patch_arrow,
    row_strategy,
    typed_unordered,
    use_engine,
    without_null_keys,
)

pa = pytest.importorskip("pyarrow")
arrow = pytest.importorskip("agent_rollout.arrow")


def wrapped(row: dict) -> dict:
    """A row as ``prompt_kind='messages'`` stores it: a str prompt is one user message."""
    if isinstance(row["prompt"], str):
        return {**row, "prompt": [{"role": "user", "content": row["prompt"]}]}
    return row


# ---- the schema --------------------------------------------------------------------------


def test_schema_is_written_down_once() -> None:
    assert arrow.arrow_schema("text") is arrow.TEXT_SCHEMA
    assert arrow.arrow_schema("messages") is arrow.MESSAGES_SCHEMA
    assert str(arrow.TEXT_SCHEMA.field("prompt").type) == "string"
    assert str(arrow.MESSAGES_SCHEMA.field("prompt").type) == (
        "list<item: struct<role: string, content: string>>"
    )
    assert arrow.TEXT_SCHEMA.field("answer").nullable
    assert arrow.TEXT_SCHEMA.metadata == {b"agent_rollout.schema": b"2"}
    with pytest.raises(ValueError, match="prompt_kind must be 'text' or 'messages'"):
        arrow.arrow_schema("auto")


@pytest.mark.parametrize("engine", ENGINES)
def test_answer_is_kept_when_the_first_row_has_none(engine: str) -> None:
    # Dataset.from_list(rows) drops "answer" from every row here.
    rows = [{"prompt": "a"}, {"prompt": "b", "answer": "2"}]
    kind, table = indexed_outcome_on(engine, arrow.rows_to_arrow, rows)
    assert kind == "ok"
    assert table.schema == arrow.TEXT_SCHEMA
    assert table.to_pylist() == [{"prompt": "a", "answer": None}, {"prompt": "b", "answer": "2"}]


@pytest.mark.parametrize("engine", ENGINES)
def test_messages_with_extras_and_image_parts_are_lossless(engine: str) -> None:
    rows = [
        {
            "prompt": [
                {"role": "system", "content": "be brief"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "4.5"},
                {"content": "odd order", "role": "user", "score": 1.5, "n": 10**30, "ok": True},
                {"role": "user"},
            ],
            "answer": "x",
        }
    ]
    kind, table = indexed_outcome_on(engine, arrow.rows_to_arrow, rows)
    assert kind == "ok", table
    assert str(table.schema.field("prompt").type) == (
        "list<item: struct<role: string, content: extension<arrow.json>, "
        "tool_calls: list<item: struct<id: string, function: struct<name: string, "
        "arguments: string>>>, tool_call_id: string, name: string, score: double, "
        "n: extension<arrow.json>, ok: bool>>"
    )
    messages = table.column("prompt").to_pylist()[0]  # pyarrow shows JSON fields as their text
    assert messages[0]["content"] == '"be brief"'
    assert messages[1]["content"].startswith('[{"type":"text","text":"what is this?"}')
    assert messages[2]["content"] is None
    assert messages[2]["tool_calls"] == [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]
    assert (messages[4]["score"], messages[4]["n"], messages[4]["ok"]) == (
        1.5,
        "1000000000000000000000000000000",
        True,
    )
    assert messages[5] == dict.fromkeys(messages[5]) | {"role": "user"}
    # Back to rows: the same, but for the None content (a null field reads back as absent).
    expected = normalise_rollout_rows(rows)
    del expected[0]["prompt"][2]["content"]
    assert typed_unordered(arrow.arrow_to_rows(table)) == typed_unordered(expected)


# ---- mixed kinds -------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_mixed_prompts_are_refused_naming_the_first_row_of_the_other_kind(engine: str) -> None:
    text_first = [{"prompt": "a"}, {"prompt": "b"}, {"prompt": [{"role": "user"}]}]
    _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, text_first)
    assert error == (
        "RolloutRowError",
        "row 2: prompt: a list of chat messages in a table of str prompts (set by row 0); "
        "prompt_kind='messages' makes every prompt a message list",
        2,
    )
    messages_first = [{"prompt": [{"role": "user"}]}, {"prompt": "b"}]
    _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, messages_first)
    assert error[1] == (
        "row 1: prompt: a str in a table of chat-message prompts (set by row 0); "
        "prompt_kind='messages' wraps each str prompt as one user message"
    )
    _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, messages_first, prompt_kind="text")
    assert error[1].startswith(
        "row 0: prompt: a list of chat messages in a table of str prompts (prompt_kind='text')"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_prompt_kind_messages_makes_a_mixed_input_uniform(engine: str) -> None:
    rows = [{"prompt": "a", "answer": "1"}, {"prompt": [{"role": "system", "content": "s"}]}]
    kind, table = indexed_outcome_on(engine, arrow.rows_to_arrow, rows, prompt_kind="messages")
    assert kind == "ok"
    assert arrow.arrow_to_rows(table) == (
        {"prompt": [{"role": "user", "content": "a"}], "answer": "1"},
        {"prompt": [{"role": "system", "content": "s"}]},
    )


def test_prompt_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="prompt_kind must be one of auto, text, messages"):
        arrow.rows_to_arrow([{"prompt": "a"}], prompt_kind="chat")


@pytest.mark.parametrize("engine", ENGINES)
def test_text_arrow_cannot_hold_is_named(engine: str) -> None:
    rows = [{"prompt": "ok"}, {"prompt": [{"role": "user", "meta": {"k\udc00": 1}}]}]
    _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, rows, prompt_kind="messages")
    assert error == (
        "RolloutRowError",
        'row 1: prompt[0].meta["k\\udc00"]: a str with a lone surrogate (U+D800..U+DFFF) '
        "cannot be stored in Arrow or Parquet, whose text is UTF-8",
        1,
    )
    # An earlier row Arrow cannot hold is named before a later kind mismatch.
    rows = [{"prompt": "a", "answer": "\ud800"}, {"prompt": [{"role": "user"}]}]
    _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, rows)
    assert error[1].startswith("row 0: answer: a str with a lone surrogate")


# ---- the round trip, over the parity tests' random rows ----------------------------------


@given(st.lists(row_strategy(odd=False), max_size=6))
def test_round_trip_over_json_like_rows(data: list) -> None:
    for engine in ENGINES:
        expected = indexed_outcome_on(engine, normalise_rollout_rows, data)
        got = indexed_outcome_on(engine, arrow.rows_to_arrow, data, prompt_kind="messages")
        if expected[0] == "error":
            assert got == expected
            continue
        assert got[0] == "ok", got
        back = arrow.arrow_to_rows(got[1])
        assert typed_unordered(back) == typed_unordered(
            tuple(without_null_keys(wrapped(row)) for row in expected[1])
        )
        kinds = {isinstance(row["prompt"], str) for row in expected[1]}
        auto = indexed_outcome_on(engine, arrow.rows_to_arrow, data)
        if len(kinds) == 1:
            assert typed_unordered(arrow.arrow_to_rows(auto[1])) == typed_unordered(
                tuple(without_null_keys(row) for row in expected[1])
            )
        else:
            first_other = next(
                i
                for i, row in enumerate(expected[1])
                if isinstance(row["prompt"], str) != isinstance(expected[1][0]["prompt"], str)
            )
            assert auto[0] == "error" and auto[1][2] == first_other


@given(st.lists(row_strategy(odd=True), max_size=6), st.sampled_from(arrow.PROMPT_KINDS))
def test_engines_build_equal_tables_or_raise_the_same_error(data: list, kind: str) -> None:
    if len(ENGINES) < 2:
        pytest.skip("the Rust engine is not built")
    rust = indexed_outcome_on("rust", arrow.rows_to_arrow, data, prompt_kind=kind)
    python = indexed_outcome_on("python", arrow.rows_to_arrow, data, prompt_kind=kind)
    if rust[0] == "ok" and python[0] == "ok":
        assert rust[1].equals(python[1], check_metadata=True)
    else:
        assert rust == python


# ---- reading tables back ----------------------------------------------------------------


def test_arrow_to_rows_takes_record_batches_polars_and_c_stream_objects() -> None:
    rows = [{"prompt": [{"role": "user", "content": "q", "name": "n"}], "answer": "a"}]
    table = arrow.rows_to_arrow(rows)
    assert arrow.arrow_to_rows(table.to_batches()[0]) == tuple(rows)
    polars = pytest.importorskip("polars")
    assert arrow.arrow_to_rows(polars.from_arrow(table)) == tuple(rows)
    with pytest.raises(TypeError, match="arrow_to_rows needs a pyarrow Table"):
        arrow.arrow_to_rows([{"prompt": "x"}])


def test_arrow_to_rows_checks_foreign_tables() -> None:
    no_role = pa.table({"prompt": [[{"content": "q"}]], "answer": ["a"]})
    with pytest.raises(RolloutRowError, match=r"row 0: prompt\[0\]: a chat message needs a 'role'"):
        arrow.arrow_to_rows(no_role)
    with pytest.raises(ValueError, match="needs a 'prompt' column"):
        arrow.arrow_to_rows(pa.table({"question": ["q"]}))


# ---- Hugging Face datasets and TRL -------------------------------------------------------


def test_to_dataset_keeps_every_answer_and_trl_sees_conversations() -> None:
    datasets = pytest.importorskip("datasets")
    data_utils = pytest.importorskip("trl.data_utils")
    rows = [{"prompt": [{"role": "user", "content": "2+2?"}]}, {"prompt": "x", "answer": "4"}]
    dataset = arrow.to_dataset(rows, prompt_kind="messages")
    assert isinstance(dataset, datasets.Dataset)
    assert dataset["answer"] == [None, "4"]
    assert data_utils.is_conversational(dataset[0])
    assert arrow.arrow_to_rows(dataset) == (
        {"prompt": [{"role": "user", "content": "2+2?"}]},
        {"prompt": [{"role": "user", "content": "x"}], "answer": "4"},
    )
    standard = arrow.to_dataset([{"prompt": "2+2?", "answer": "4"}])
    assert not data_utils.is_conversational(standard[0])
    assert standard[0] == {"prompt": "2+2?", "answer": "4"}


def test_public_names_and_the_base_install_imports_no_arrow() -> None:
    import agent_rollout

    assert agent_rollout.rows_to_arrow is arrow.rows_to_arrow
    assert agent_rollout.arrow_to_rows is arrow.arrow_to_rows
    assert agent_rollout.to_dataset is arrow.to_dataset
    code = (
        "import sys, agent_rollout;"
        "agent_rollout.normalise_rollout_rows([{'prompt': 'a'}]);"
        "heavy = ('pyarrow', 'datasets', 'ray', 'agent_rollout.arrow');"
        "bad = [m for m in heavy if m in sys.modules];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class EvilKey:
    """A key whose hash matches "prompt": every lookup of "prompt" runs its __eq__."""

    def __init__(self, victim: list) -> None:
        self.victim = victim
        self.armed = False

    def __hash__(self) -> int:
        return hash("prompt")

    def __eq__(self, other: object) -> bool:
        if self.armed:
            self.victim.clear()
        return False


def test_rows_changed_by_user_code_during_a_lookup() -> None:
    results = []
    for engine in ENGINES:
        rows: list = []
        evil = EvilKey(rows)
        # The key goes in first, so a lookup of "prompt" meets it first.
        rows.extend([{evil: 1, "prompt": "a"}, {"prompt": "b"}, {"prompt": "c"}])
        evil.armed = True
        results.append(indexed_outcome_on(engine, arrow.rows_to_arrow, rows))
    kinds = {kind for kind, _ in results}
    assert kinds == {"ok"}, results
    tables = [table for _, table in results]
    assert all(t.equals(tables[0]) for t in tables)
    assert tables[0].column("prompt").to_pylist() == ["a"]


class Mutator:
    """A row key whose hash matches "prompt": looking "prompt" up in its row runs ``__eq__``,
    which changes a message of an earlier row (read once, to be read again when its batch
    is built)."""

    def __init__(self, change: Any) -> None:
        self.change = change
        self.armed = False

    def __hash__(self) -> int:
        return hash("prompt")

    def __eq__(self, other: object) -> bool:
        if self.armed:
            self.armed = False
            self.change()
        return False


CHANGES = {
    "a value of another type": lambda m: m.__setitem__("score", "now a str"),
    "keys added": lambda m: m.update({"extra": 1, "more": [1]}),
    "a nested object's keys": lambda m: m["tool_calls"][0].update({"function": None, "x": 1}),
    "a list emptied": lambda m: m["tool_calls"].clear(),
    "a huge int": lambda m: m.__setitem__("score", 10**5000),
    "emptied": lambda m: m.clear(),
}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_a_message_changed_between_its_two_reads_is_no_panic(change: str) -> None:
    """The Rust engine reads a message's other keys twice (to type them, then to build
    them); user code that runs in between may change them: a table of consistent rows,
    or the row rules' error, never a panic."""
    for engine in ENGINES:
        message = {"role": "assistant", "score": 1.5, "tool_calls": [{"id": "a", "function": {}}]}
        mutator = Mutator(lambda message=message: CHANGES[change](message))
        rows = [{"prompt": [message]}, {mutator: 1, "prompt": [{"role": "user", "content": "q"}]}]
        mutator.armed = True
        kind, result = indexed_outcome_on(engine, arrow.rows_to_arrow, rows)
        if kind == "ok":
            result.validate(full=True)
            assert len(arrow.arrow_to_rows(result)) == 2
        else:
            assert result[0] == "RolloutRowError", (engine, change, result)


@pytest.mark.parametrize("content", [[1], {"a": 1}, 5])
def test_a_content_changed_after_its_read_keeps_the_value_read(content: Any) -> None:
    """A content that is not a str is written as JSON text when the message is read
    (Rust once read it again when the batch was finished, after user code had run):
    both engines hold the value the rows had when they were read."""
    tables = {}
    for engine in ENGINES:
        message = {"role": "user", "content": content}
        mutator = Mutator(lambda message=message: message.__setitem__("content", [2]))
        rows = [{"prompt": [message]}, {mutator: 1, "prompt": [{"role": "user", "content": "q"}]}]
        mutator.armed = True
        kind, table = indexed_outcome_on(engine, arrow.rows_to_arrow, rows)
        assert kind == "ok", table
        tables[engine] = arrow.arrow_to_rows(table)[0]["prompt"][0]["content"]
    assert list(tables.values()) == [content] * len(ENGINES), tables


def test_a_finaliser_that_changes_a_message_mid_build_is_no_panic() -> None:
    """A collection can run during any allocation, and a ``__del__`` can change
    the message (or a dict inside it) being walked: no PanicException, a table."""
    import gc

    for engine in ENGINES:
        for threshold in range(1, 12):
            inner = {f"i{i}": [i] for i in range(20)}
            message = {"role": "u", "meta": inner, **{f"k{i}": [i] for i in range(20)}}

            class Bomb:
                victims = (message, inner)

                def __del__(self) -> None:
                    outer, nested = self.victims
                    outer.clear()
                    outer["role"] = "x"
                    nested.clear()

            rows = [{"prompt": [message]}]
            gc.collect()
            gc.disable()
            bomb = Bomb()
            bomb.cycle = bomb  # type: ignore[attr-defined]
            del bomb
            old = gc.get_threshold()
            gc.set_threshold(threshold, 10**6, 10**6)  # gen-0 collections only: fast
            gc.enable()
            try:
                kind, table = indexed_outcome_on(engine, arrow.rows_to_arrow, rows)
            finally:
                gc.set_threshold(*old)
            assert kind == "ok", (engine, threshold, table)
            table.validate(full=True)


def test_the_examples_in_docs_arrow_md_run() -> None:
    pytest.importorskip("datasets")
    docs = Path(__file__).resolve().parent.parent / "docs" / "arrow.md"
    blocks = re.findall(r"```python\n(.*?)```", docs.read_text(encoding="utf-8"), re.S)
    ran = 0
    for block in blocks:
        if "import ray" in block:
            continue  # the Ray recipe runs in tests/test_ray.py, on a local cluster
        exec(compile(block, str(docs), "exec"), {})
        ran += 1
    assert ran == 2


def test_every_nemo_gym_example_file_goes_into_one_table() -> None:
    """The example rows of the nemo-gym wheel (images, tool calls): lossless, all in one table."""
    import os

    from agent_rollout.backends.nemo_gym import read_gym_jsonl

    value = os.environ.get("AGENT_ROLLOUT_NEMO_GYM_DATA")
    if not value or not Path(value).is_dir():
        pytest.skip("AGENT_ROLLOUT_NEMO_GYM_DATA is not set (see tests/test_backend_nemo_gym.py)")
    everything: list[dict] = []
    files = 0
    for path in sorted(Path(value).rglob("*.jsonl")):
        try:
            converted = read_gym_jsonl(path)
        except ValueError:
            continue  # the files the NeMo Gym tests list as refused
        files += 1
        everything.extend(converted)
    assert files > 200
    with_images = sum(
        any(isinstance(m.get("content"), list) for m in row["prompt"]) for row in everything
    )
    assert with_images > 0
    tables = []
    for engine in ENGINES:
        kind, table = indexed_outcome_on(engine, arrow.rows_to_arrow, everything, max_rows=10**6)
        assert kind == "ok", table
        tables.append(table)
    assert all(t.equals(tables[0]) for t in tables)
    assert typed_unordered(arrow.arrow_to_rows(tables[0], max_rows=10**6)) == typed_unordered(
        normalise_rollout_rows(everything, max_rows=10**6)
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_batches_hold_batch_rows(engine: str, monkeypatch: Any) -> None:
    patch_arrow(monkeypatch, "BATCH_ROWS", 10)
    rows = [{"prompt": f"q{i}"} for i in range(35)]
    for kind in arrow.PROMPT_KINDS:
        _, table = indexed_outcome_on(engine, arrow.rows_to_arrow, rows, prompt_kind=kind)
        assert [len(b) for b in table.to_batches()] == [10, 10, 10, 5], kind


def test_without_pyarrow_the_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['pyarrow'] = None\n"
        "import agent_rollout\n"
        "from agent_rollout import *\n"
        "try:\n"
        "    agent_rollout.rows_to_arrow\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ("agent_rollout.arrow needs pyarrow: pip install 'pyarrow>=19'")


# ---- the engine's buffers, handed over without a copy ---------------------------------------


def test_the_engines_buffers_live_as_long_as_the_arrays(tmp_path: Path) -> None:
    """pyarrow wraps the Rust engine's buffers where they lie (``_native.Buffer``): each
    lives while any table, slice or exported array uses it, and goes when none does."""
    import gc
    import pickle
    import weakref

    import pyarrow.parquet as pq

    from agent_rollout import _engine
    from agent_rollout._jsonl import FileLimits

    if not _engine.native_available():
        pytest.skip("the Rust engine is not built")
    rows = [
        {"prompt": [{"role": "user", "content": f"question {i} " * 20}], "answer": str(i)}
        for i in range(3000)
    ] + [{"prompt": [{"role": "user", "content": None}], "answer": None}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(f'{{"prompt":"text {i}","answer":"{i}"}}\n' for i in range(3000)))
    held: list[Any] = []
    real = arrow.buffer_of

    def watched(buffer: Any) -> Any:
        held.append(weakref.ref(buffer))
        return real(buffer)

    batches: list[Any] = []
    with use_engine("rust"), pytest.MonkeyPatch.context() as patch:
        patch_arrow(patch, "buffer_of", watched)
        table = arrow.rows_to_arrow(rows)
        arrow.file_batches(str(src), FileLimits(10_000, 1 << 30), "auto", batches.append, None)
    streamed = pa.Table.from_batches(batches)
    del batches
    gc.collect()
    assert held and all(ref() is not None for ref in held)  # the tables hold every one
    assert table.to_pylist() == rows
    assert streamed.column("prompt").to_pylist() == [f"text {i}" for i in range(3000)]
    assert pickle.loads(pickle.dumps(table)).equals(table)
    pq.write_table(table, tmp_path / "out.parquet")
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == rows
    tail = table.slice(2999)
    del table, streamed
    gc.collect()
    alive = [ref for ref in held if ref() is not None]
    assert alive and len(alive) < len(held)  # the slice keeps its own; the rest are gone
    assert tail.to_pylist() == rows[2999:]
    del tail
    gc.collect()
    assert all(ref() is None for ref in held)  # and nothing is kept after the last array
