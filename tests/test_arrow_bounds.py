"""The two bounds of the Arrow shape, on both engines and every path.

- ``MAX_MESSAGE_FIELDS``: past that many distinct message keys besides ``role``
  and ``content``, each message is JSON text (``prompt: list<arrow.json>``), so
  a file whose messages each carry a key of their own makes a table (and a
  Parquet file) of a few columns, not one per key;
- ``MAX_TYPED_DEPTH``: a list or object deeper than that in a message is JSON
  text, so ``pyarrow.parquet.read_table`` and ``datasets.load_dataset("parquet")``
  read the file with their defaults (they refuse a list nested about 48 deep);
- both read back as the rows that went in (a None-valued message key as absent,
  as everywhere in Arrow), through ``arrow_to_rows`` and ``datasets``; rows,
  JSONL, batches of one row joined and Parquet give one table on both engines
  (a property, with the bounds made small).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rollout import (
    RolloutRowError,
    normalise_rollout_file,
    normalise_rollout_rows,
    read_rollout_jsonl,
)
from agent_rollout._limits import MAX_MESSAGE_DEPTH, MAX_MESSAGE_FIELDS, MAX_TYPED_DEPTH
from support import (
    ENGINES,
    arrow_modules,
    json_scalars,
    on_engine,
    outcome_on,
    typed_unordered,
    without_null_keys,
    write_jsonl,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
arrow = pytest.importorskip("agent_rollout.arrow")

JSON = "extension<arrow.json>"


@contextmanager
def shaped(
    fields: Optional[int] = None, depth: Optional[int] = None, batch_rows: Optional[int] = None
) -> Iterator[None]:
    """The bounds (and batches and Parquet row groups of ``batch_rows`` rows) changed
    for the block, on both engines (the twin reads them at each call, and passes them
    to the Rust engine)."""
    names = ("MAX_MESSAGE_FIELDS", "MAX_TYPED_DEPTH", "BATCH_ROWS", "ROW_GROUP_ROWS")
    saved = [
        (module, name, getattr(module, name)) for name in names for module in arrow_modules(name)
    ]
    for name, value in zip(names, (fields, depth, batch_rows, batch_rows), strict=True):
        if value is not None:
            for module in arrow_modules(name):
                setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def expected_rows(rows: list) -> tuple:
    """The rows as they read back from Arrow (str prompts wrapped as one user message)."""
    out = []
    for row in normalise_rollout_rows(rows):
        if isinstance(row["prompt"], str):
            row = {**row, "prompt": [{"role": "user", "content": row["prompt"]}]}
        out.append(without_null_keys(row))
    return tuple(out)


def load_parquet(path: Path, cache: Path) -> Any:
    """``datasets.load_dataset("parquet")`` with its defaults (a cache of the test's own)."""
    datasets = pytest.importorskip("datasets")
    return datasets.load_dataset(
        "parquet", data_files=str(path), split="train", cache_dir=str(cache)
    )


def every_path(rows: list, folder: Path) -> Any:
    """The table of ``rows`` (prompt_kind "messages"), checked to be the one every path
    builds on both engines (rows; JSONL; batches and row groups of one row, joined and
    widened; Parquet) and to read back as the rows."""
    kind = "messages"
    table = on_engine(ENGINES[0], lambda: arrow.rows_to_arrow(rows, prompt_kind=kind))
    assert typed_unordered(arrow.arrow_to_rows(table)) == typed_unordered(expected_rows(rows))
    src = write_jsonl(folder / "in.jsonl", rows)
    for engine in ENGINES:
        built = on_engine(engine, lambda: arrow.rows_to_arrow(rows, prompt_kind=kind))
        assert built.equals(table, check_metadata=True), engine
        read = outcome_on(engine, read_rollout_jsonl, src, as_arrow=True, prompt_kind=kind)
        assert read[0] == "ok" and read[1].equals(table), (engine, read)
        with shaped(batch_rows=1):
            split = on_engine(engine, lambda: arrow.rows_to_arrow(rows, prompt_kind=kind))
            assert split.equals(table), engine
            dest = folder / f"{engine}.parquet"
            done = outcome_on(engine, normalise_rollout_file, src, dest, prompt_kind=kind)
            assert done[0] == "ok", done
            assert pq.read_table(dest).equals(table), engine
    return table


# ---- MAX_MESSAGE_FIELDS ----------------------------------------------------------------------


def own_keys(count: int) -> list[dict]:
    """Rows whose messages each carry a key of their own (``count`` keys in all), between
    messages of a few shared keys: values None, parts, objects, big ints, odd key names."""
    rows: list[dict] = [
        {
            "prompt": [
                {"role": "user", "content": "q", "name": "n", "meta": {"a": 1, "b": [2.5]}},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}], "x": None},
            ],
            "answer": "a",
        },
        {"prompt": [{"role": "user", "content": [{"type": "text", "text": "t"}], "é": -(2**62)}]},
    ]
    shared = 5  # name, meta, tool_calls, x, é
    rows += [
        {"prompt": [{"k" + str(i): i, "role": "user", "content": f"c{i}"}], "answer": str(i)}
        for i in range(count - shared)
    ]
    return rows


@pytest.mark.parametrize("engine", ENGINES)
def test_past_max_message_fields_each_message_is_json_text(engine: str, tmp_path: Path) -> None:
    at_bound = on_engine(engine, lambda: arrow.rows_to_arrow(own_keys(MAX_MESSAGE_FIELDS)))
    message = at_bound.schema.field("prompt").type.value_type
    assert pa.types.is_struct(message) and message.num_fields == MAX_MESSAGE_FIELDS + 2
    rows = own_keys(MAX_MESSAGE_FIELDS + 1)
    table = on_engine(engine, lambda: arrow.rows_to_arrow(rows))
    assert str(table.schema.field("prompt").type) == f"list<item: {JSON}>"
    # role, content, then the other keys sorted; a None-valued key left out, as Arrow
    # reads a null field back.
    texts = table.column("prompt").to_pylist()
    assert texts[0] == [
        '{"role":"user","content":"q","meta":{"a":1,"b":[2.5]},"name":"n"}',
        '{"role":"assistant","tool_calls":[{"id":"c1"}]}',
    ]
    assert texts[1] == [
        '{"role":"user","content":[{"type":"text","text":"t"}],"é":' + str(-(2**62)) + "}"
    ]
    assert texts[2] == ['{"role":"user","content":"c0","k0":0}']
    assert arrow.arrow_to_rows(table) == expected_rows(rows)
    # Through Parquet: pyarrow and datasets read each message back as it was.
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    assert outcome_on(engine, normalise_rollout_file, src, dest)[0] == "ok"
    assert pq.read_table(dest).equals(table)
    loaded = load_parquet(dest, tmp_path / "cache")
    assert [row["prompt"] for row in loaded] == [row["prompt"] for row in expected_rows(rows)]
    assert arrow.arrow_to_rows(loaded) == expected_rows(rows)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_key_per_message_keeps_the_table_and_the_parquet_file_small(
    engine: str, tmp_path: Path
) -> None:
    """The cost that grew with the square of the keys: a field per key on every message."""
    rows = [
        {"prompt": [{"role": "user", "content": "c", f"k{i}": 1}], "answer": "a"}
        for i in range(3000)
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    table = on_engine(engine, lambda: read_rollout_jsonl(src, as_arrow=True, max_rows=10_000))
    assert table.nbytes < src.stat().st_size  # each message's text, and the offsets
    dest = tmp_path / "out.parquet"
    assert outcome_on(engine, normalise_rollout_file, src, dest)[0] == "ok"
    assert pq.ParquetFile(dest).metadata.num_columns == 2  # the messages' text, the answer
    assert arrow.arrow_to_rows(pq.read_table(dest), max_rows=10_000) == tuple(rows)


def test_the_join_of_message_structs_past_the_bound_is_json_text() -> None:
    many = arrow.rows_to_arrow(own_keys(MAX_MESSAGE_FIELDS))
    one_more = arrow.rows_to_arrow([{"prompt": [{"role": "user", "new": True}]}])
    joined = arrow.merge_schemas(many.schema, one_more.schema)
    assert str(joined.field("prompt").type) == f"list<item: {JSON}>"
    json_list = joined.field("prompt").type
    assert arrow.merge_schemas(one_more.schema, joined).field("prompt").type == json_list
    assert arrow.merge_schemas(joined, joined).field("prompt").type == json_list
    with pytest.raises(ValueError, match="cannot share one schema"):
        arrow.merge_schemas(arrow.TEXT_SCHEMA, joined)
    both = pa.concat_tables(
        [arrow.conform_table(many, joined), arrow.conform_table(one_more, joined)]
    )
    rows = [*own_keys(MAX_MESSAGE_FIELDS), {"prompt": [{"role": "user", "new": True}]}]
    assert both.equals(arrow.rows_to_arrow(rows))
    assert arrow.arrow_to_rows(both) == expected_rows(rows)


def test_json_text_messages_fit_a_struct_schema_given_only_where_it_holds_them() -> None:
    """A schema given by hand (``normalise_batch(schema=...)``): the messages are converted
    to its struct, or refused naming the row and the first key it has no place for."""
    rows = own_keys(MAX_MESSAGE_FIELDS + 1)
    table = arrow.rows_to_arrow(rows)
    with pytest.raises(RolloutRowError) as info:
        arrow.conform_table(table, arrow.MESSAGES_SCHEMA)
    assert str(info.value).startswith(
        "row 0: prompt[0].meta: a value of Arrow type struct<a: int64, b: list<item: double>> "
        "has no place in the schema"
    )
    message = arrow.rows_to_arrow(own_keys(MAX_MESSAGE_FIELDS)).schema.field("prompt").type
    wide = pa.struct([*message.value_type, pa.field(f"k{MAX_MESSAGE_FIELDS - 5}", pa.int64())])
    fitted = arrow.conform_table(
        table, arrow.merge_schemas(pa.schema([("prompt", pa.list_(wide))]))
    )
    assert fitted.schema.field("prompt").type.value_type == wide
    assert arrow.arrow_to_rows(fitted) == expected_rows(rows)


# ---- MAX_TYPED_DEPTH -------------------------------------------------------------------------


def nested(levels: int, kind: str) -> Any:
    """``levels`` lists (or objects) one inside the other, around the int 1."""
    value: Any = 1
    for _ in range(levels):
        value = [value] if kind == "list" else {"a": value}
    return value


def depth_of(arrow_type: Any) -> tuple[int, str]:
    """How many lists or structs nest in ``arrow_type``, and the type inside them."""
    levels = 0
    while pa.types.is_list(arrow_type) or pa.types.is_struct(arrow_type):
        arrow_type = arrow_type.value_type if pa.types.is_list(arrow_type) else arrow_type[0].type
        levels += 1
    return levels, str(arrow_type)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["list", "object"])
def test_past_max_typed_depth_a_value_is_json_text(engine: str, kind: str) -> None:
    # A message key's value is level 2: MAX_TYPED_DEPTH - 1 containers are typed.
    typed = MAX_TYPED_DEPTH - 1
    for levels, expected in ((typed, (typed, "int64")), (typed + 1, (typed, JSON))):
        rows = [{"prompt": [{"role": "user", "content": "q", "k": nested(levels, kind)}]}]
        table = on_engine(engine, lambda rows=rows: arrow.rows_to_arrow(rows))
        message = table.schema.field("prompt").type.value_type
        assert depth_of(message.field("k").type) == expected, levels
        assert arrow.arrow_to_rows(table) == tuple(rows)


@pytest.mark.parametrize("engine", ENGINES)
def test_values_nested_as_deep_as_a_message_may_go_read_with_the_standard_readers(
    engine: str, tmp_path: Path
) -> None:
    """A list 48 deep made a file pyarrow and datasets refuse ("Parquet schema too deeply
    nested"); an object 61 deep one datasets refuses (its Arrow import nests 64 types)."""
    deepest = MAX_MESSAGE_DEPTH - 1  # the message is level 1
    rows = [
        {
            "prompt": [
                {"role": "user", "content": "q", "k": nested(deepest, "list")},
                {"role": "user", "content": "r", "o": nested(deepest, "object")},
            ],
            "answer": "a",
        },
        {"prompt": [{"role": "user", "content": "s", "k": nested(48, "list")}]},
    ]
    assert normalise_rollout_rows(rows) == tuple(rows)  # within the row rules' depth
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    dest = tmp_path / "out.parquet"
    assert outcome_on(engine, normalise_rollout_file, src, dest)[0] == "ok"
    table = pq.read_table(dest)
    assert table.equals(on_engine(engine, lambda: arrow.rows_to_arrow(rows)))
    assert table.equals(on_engine(ENGINES[0], lambda: arrow.rows_to_arrow(rows)))
    assert arrow.arrow_to_rows(table) == expected_rows(rows)
    loaded = load_parquet(dest, tmp_path / "cache")
    assert loaded[0]["prompt"][0]["k"] == nested(deepest, "list")
    assert loaded[0]["prompt"][1]["o"] == nested(deepest, "object")
    assert arrow.arrow_to_rows(loaded) == expected_rows(rows)


# ---- both bounds, small: every path gives one table ---------------------------------------

KEYS = ["a", "b", "é", "Z", "tool_calls", "a b"]
VALUES = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["x", "y"]), inner, min_size=1, max_size=2),
    ),
    max_leaves=6,
)
DEEP = st.builds(nested, st.integers(0, 6), st.sampled_from(["list", "object"]))
MISSING = object()
CONTENTS = st.one_of(
    st.text(max_size=3),
    st.none(),
    st.just(MISSING),
    st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=2)})),
)


@st.composite
def bounded_rows(draw: Any) -> list[dict]:
    """Rows of messages with a few keys from a small pool, values deep now and then."""
    rows = []
    for _ in range(draw(st.integers(1, 5))):
        messages = []
        for _ in range(draw(st.integers(1, 3))):
            message: dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant"]))}
            content = draw(CONTENTS)
            if content is not MISSING:
                message["content"] = content
            for key in draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True)):
                message[key] = draw(st.one_of(VALUES, DEEP))
            messages.append(message)
        prompt: Any = messages
        if draw(st.integers(0, 9)) == 0:
            prompt = draw(st.text(min_size=1, max_size=3))  # wrapped: prompt_kind="messages"
        rows.append({"prompt": prompt, "answer": draw(st.one_of(st.none(), st.text(max_size=2)))})
    return rows


# Each example writes and reads two files on both engines.
@settings(max_examples=min(settings().max_examples, 100))
@given(bounded_rows(), st.integers(0, 3), st.integers(1, 4))
def test_every_path_builds_one_table_within_small_bounds(
    rows: list[dict], fields: int, depth: int
) -> None:
    with shaped(fields=fields, depth=depth), tempfile.TemporaryDirectory() as folder:
        every_path(rows, Path(folder))
