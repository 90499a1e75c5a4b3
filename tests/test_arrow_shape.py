"""The Arrow shape of rows: typed the way ``datasets`` types them, one schema a table.

- the typing rule, case by case, on both engines, from Python rows and from JSONL;
- a property over generated rows whose message keys have consistent types (and
  the odd value that breaks them): both engines and every path (rows, JSONL,
  Parquet, small batches that must be joined) build one equal table, and it
  reads back as the rows, a null message field as an absent key;
- ``datasets``: plain messages are exactly ``Dataset.from_list``'s type and
  ``concatenate_datasets`` with a standard conversational dataset works; tool
  calls are typed as ``from_list`` types them;
- TRL: ``to_dataset`` rows rendered by real chat templates (TRL's Qwen2.5 and
  Llama 3.1, with a tokenizer built here) give the text the plain rows give;
- the edges: a Dataset's indices mapping, a 5,000-digit int, JSON text
  100,000 deep in a foreign table, duplicate columns, a schema that does not fit.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_rollout import (
    RolloutRowError,
    normalise_rollout_file,
    normalise_rollout_rows,
    read_rollout_jsonl,
)
from support import (
    ENGINES,
    indexed_outcome_on,
    on_engine,
    outcome_on,
    row_values,
    typed_unordered,
    without_null_keys,
    write_jsonl,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
arrow = pytest.importorskip("agent_rollout.arrow")


@contextmanager
def small_batches(rows: int) -> Iterator[None]:
    """Batches (and Parquet row groups) of ``rows`` rows: a table is joined from many."""
    saved = arrow.BATCH_ROWS, arrow.ROW_GROUP_ROWS
    arrow.BATCH_ROWS, arrow.ROW_GROUP_ROWS = rows, rows
    try:
        yield
    finally:
        arrow.BATCH_ROWS, arrow.ROW_GROUP_ROWS = saved


def message_field(table: Any, name: str) -> str:
    return str(table.schema.field("prompt").type.value_type.field(name).type)


# ---- the typing rule ---------------------------------------------------------------------

JSON = "extension<arrow.json>"
CASES: list[tuple[list[Any], str]] = [
    # (the values of one message key "x", one message each: the field's Arrow type)
    (["a", None], "string"),
    ([1, 2, None], "int64"),
    ([-(2**63), 2**63 - 1], "int64"),
    ([2**63], JSON),  # past int64: JSON text, every value of the field
    ([1.5, -0.0], "double"),
    ([1, 1.5], JSON),  # 1 and 1.0 are different values: not promoted to double
    ([True, False], "bool"),
    ([True, 1], JSON),
    (["a", 1], JSON),
    ([None], "null"),  # the key is there, with no value
    ([[1, 2], [], None], "list<item: int64>"),
    ([[]], "list<item: null>"),
    ([[1, "a"]], "list<item: extension<arrow.json>>"),
    ([{"a": 1}, {"a": None}, None], "struct<a: int64>"),
    ([{"a": 1}, {"b": 1}], JSON),  # other keys: JSON text, not a struct filled with nulls
    ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], JSON),  # the keys' order counts (templates show it)
    ([{}], JSON),  # Parquet has no empty struct
    ([{"a": [{"b": 1.0}]}, {"a": None}], "struct<a: list<item: struct<b: double>>>"),
    (
        [{"f": {"name": "n", "arguments": "{}"}}],
        "struct<f: struct<name: string, arguments: string>>",
    ),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("values", "expected"), CASES, ids=[str(case[0]) for case in CASES])
def test_message_keys_are_typed_by_one_rule(
    engine: str, values: list, expected: str, tmp_path: Path
) -> None:
    rows = [{"prompt": [{"role": "user", "content": "q", "x": value}]} for value in values]
    rows.append({"prompt": [{"role": "user", "content": "no x here"}]})
    table = on_engine(engine, lambda: arrow.rows_to_arrow(rows))
    assert message_field(table, "x") == expected
    assert table.schema.field("prompt").type.value_type.names == ["role", "content", "x"]
    expected_rows = tuple(without_null_keys(row) for row in normalise_rollout_rows(rows))
    assert typed_unordered(arrow.arrow_to_rows(table)) == typed_unordered(expected_rows)
    # From a file, and in batches of one row joined: the same table.
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    assert on_engine(engine, lambda: read_rollout_jsonl(src, as_arrow=True)).equals(table)
    with small_batches(1):
        assert on_engine(engine, lambda: arrow.rows_to_arrow(rows)).equals(table)


@pytest.mark.parametrize("engine", ENGINES)
def test_content_is_a_string_until_a_content_is_not_a_str(engine: str) -> None:
    def content_type(*contents: Any) -> str:
        rows = [{"prompt": [{"role": "user", "content": c} for c in contents]}]
        return message_field(on_engine(engine, lambda: arrow.rows_to_arrow(rows)), "content")

    assert content_type("a", None) == "string"
    assert content_type(None) == "string"
    rows = [{"prompt": [{"role": "user"}]}]  # no content at all: still a string field
    assert on_engine(engine, lambda: arrow.rows_to_arrow(rows)).schema == arrow.MESSAGES_SCHEMA
    assert content_type("a", [{"type": "text", "text": "b"}]) == JSON
    assert content_type([{"type": "text", "text": "b"}]) == JSON  # parts: JSON text too
    mixed = [
        {"prompt": [{"role": "user", "content": "a"}]},
        {"prompt": [{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}]},
    ]
    table = on_engine(engine, lambda: arrow.rows_to_arrow(mixed))
    assert table.column("prompt").to_pylist()[0][0]["content"] == '"a"'  # every content
    assert arrow.arrow_to_rows(table) == tuple(mixed)


@pytest.mark.parametrize("engine", ENGINES)
def test_fields_follow_the_keys_in_the_order_they_first_appear(engine: str) -> None:
    rows = [
        {"prompt": [{"role": "user", "content": "q", "name": "n"}]},
        {"prompt": [{"b": 1, "role": "user", "a": 2, "content": "r", "name": "m"}]},
    ]
    table = on_engine(engine, lambda: arrow.rows_to_arrow(rows))
    assert table.schema.field("prompt").type.value_type.names == [
        "role",
        "content",
        "name",
        "b",
        "a",
    ]


def test_merge_schemas_joins_and_refuses_mixed_kinds() -> None:
    a = arrow.rows_to_arrow([{"prompt": [{"role": "u", "x": 1}]}]).schema
    b = arrow.rows_to_arrow([{"prompt": [{"role": "u", "y": "s", "x": None}]}]).schema
    merged = arrow.merge_schemas(a, b)
    assert str(merged.field("prompt").type) == (
        "list<item: struct<role: string, content: string, x: int64, y: string>>"
    )
    assert arrow.merge_schemas(b, a).field("prompt").type.value_type.names == [
        "role",
        "content",
        "y",
        "x",
    ]
    with pytest.raises(ValueError, match="cannot share one schema"):
        arrow.merge_schemas(arrow.TEXT_SCHEMA, a)
    table = arrow.conform_table(arrow.rows_to_arrow([{"prompt": [{"role": "u", "x": 1}]}]), merged)
    assert table.schema == merged
    with pytest.raises(RolloutRowError) as info:
        arrow.conform_table(arrow.rows_to_arrow([{"prompt": [{"role": "u", "z": [1]}]}]), merged)
    assert str(info.value) == (
        "row 0: prompt[0].z: a value of Arrow type list<item: int64> has no place in the "
        "schema every block must share (give normalise_batch a schema= that holds it)"
    )


# ---- one table, whatever the path: a property -------------------------------------------

ATOMS = {
    "str": st.text(max_size=4),
    "int": st.integers(min_value=-(2**63), max_value=2**63 - 1),
    "big": st.integers(min_value=2**63, max_value=2**70),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "bool": st.booleans(),
}
SHAPES = st.recursive(
    st.sampled_from(sorted(ATOMS)),
    lambda inner: st.one_of(
        st.tuples(st.just("list"), inner),
        st.tuples(
            st.just("dict"),
            st.lists(
                st.tuples(st.sampled_from(["a", "b", "name", "arguments"]), inner),
                min_size=1,
                max_size=3,
                unique_by=lambda pair: pair[0],
            ).map(tuple),
        ),
    ),
    max_leaves=5,
)


def values_of(shape: Any) -> st.SearchStrategy[Any]:
    """Values of one shape, now and then None."""
    if isinstance(shape, str):
        base = ATOMS[shape]
    elif shape[0] == "list":
        base = st.lists(values_of(shape[1]), max_size=3)
    else:
        base = st.fixed_dictionaries({key: values_of(inner) for key, inner in shape[1]})
    return st.one_of(base, base, base, st.none())


MISSING = object()
PARTS = st.lists(
    st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=3)}),
        st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.just({"url": "u"})}),
    ),
    max_size=2,
)


@st.composite
def typed_rows(draw: Any) -> list[dict]:
    """Rows whose message keys each have one shape, now and then a value that breaks it."""
    shapes = draw(
        st.dictionaries(
            st.sampled_from(["tool_calls", "name", "score", "a b"]), SHAPES, min_size=1, max_size=3
        )
    )
    values = {key: values_of(shape) for key, shape in shapes.items()}
    odd_ones = draw(st.integers(0, 2)) == 0  # in a third of the examples, values that break
    with_parts = draw(st.integers(0, 4)) == 0
    contents = st.one_of(st.text(max_size=4), st.none(), st.just(MISSING))
    if with_parts:
        contents = st.one_of(contents, PARTS)
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        messages = []
        for _ in range(draw(st.integers(1, 3))):
            message: dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant"]))}
            content = draw(contents)
            if content is not MISSING:
                message["content"] = content
            for key, strategy in values.items():
                if draw(st.booleans()):
                    odd = odd_ones and draw(st.integers(0, 12)) == 0
                    message[key] = draw(row_values(odd=False) if odd else strategy)
            messages.append(message)
        prompt: Any = messages
        if draw(st.integers(0, 9)) == 0:
            prompt = draw(st.text(min_size=1, max_size=4))  # wrapped with prompt_kind="messages"
        rows.append({"prompt": prompt, "answer": draw(st.one_of(st.none(), st.text(max_size=3)))})
    return rows


def wrapped(row: dict) -> dict:
    if isinstance(row["prompt"], str):
        return {**row, "prompt": [{"role": "user", "content": row["prompt"]}]}
    return row


# Each example writes and reads two files on both engines.
@settings(max_examples=min(settings().max_examples, 150))
@given(typed_rows())
def test_every_path_builds_one_table_that_reads_back(rows: list[dict]) -> None:
    kind = "messages"
    expected = tuple(without_null_keys(wrapped(row)) for row in normalise_rollout_rows(rows))
    table = on_engine(ENGINES[0], lambda: arrow.rows_to_arrow(rows, prompt_kind=kind))
    assert typed_unordered(arrow.arrow_to_rows(table)) == typed_unordered(expected)
    with tempfile.TemporaryDirectory() as folder:
        src = write_jsonl(Path(folder) / "in.jsonl", rows)
        for engine in ENGINES:
            built = on_engine(engine, lambda: arrow.rows_to_arrow(rows, prompt_kind=kind))
            assert built.equals(table), engine
            read = outcome_on(engine, read_rollout_jsonl, src, as_arrow=True, prompt_kind=kind)
            assert read[0] == "ok" and read[1].equals(table), (engine, read)
            with small_batches(1):
                split = on_engine(engine, lambda: arrow.rows_to_arrow(rows, prompt_kind=kind))
                assert split.equals(table), engine
                dest = Path(folder) / f"{engine}.parquet"
                done = outcome_on(engine, normalise_rollout_file, src, dest, prompt_kind=kind)
                assert done[0] == "ok", done
                assert pq.read_table(dest).equals(table), engine


# The Rust walk fills a batch's columns as it reads, while each key's type stays as first
# seen, and reads the messages again when a value changes it (a null first, a list of
# nulls, a struct whose keys differ, an int past 64 bits...): both must build the twin's
# table. Cheap (no files), so many examples.
@settings(max_examples=max(settings().max_examples, 400))
@given(typed_rows(), st.integers(1, 4))
def test_engines_agree_however_the_types_change_within_a_batch(
    rows: list[dict], batch_rows: int
) -> None:
    if len(ENGINES) < 2:
        pytest.skip("the Rust engine is not built")
    for batch in (arrow.BATCH_ROWS, batch_rows):
        with small_batches(batch):
            rust = indexed_outcome_on("rust", arrow.rows_to_arrow, rows, prompt_kind="messages")
            python = indexed_outcome_on("python", arrow.rows_to_arrow, rows, prompt_kind="messages")
        if rust[0] == "ok" and python[0] == "ok":
            assert rust[1].equals(python[1], check_metadata=True), batch
        else:
            assert rust == python, batch


# ---- Hugging Face datasets ------------------------------------------------------------------

TOOL_ROWS = [
    {
        "prompt": [
            {"role": "system", "content": "You add numbers."},
            {"role": "user", "content": "2+2?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "add", "arguments": {"a": 2, "b": 2}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "name": "add", "content": "4"},
        ],
        "answer": "4",
    },
    {
        "prompt": [
            {"role": "user", "content": "3+5?"},
            {
                "role": "assistant",
                "content": "Let me add.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "add", "arguments": {"a": 3, "b": 5}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "add", "content": "8"},
        ],
        "answer": "8",
    },
]
OTHER_ARGUMENTS = {  # two tools: arguments of different keys
    "prompt": [
        {"role": "user", "content": "Lights on, then play jazz."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "lights", "arguments": {"room": "hall", "on": True}},
                },
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "play", "arguments": {"playlist": "jazz"}},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "name": "lights", "content": "done"},
        {"role": "tool", "tool_call_id": "call_3", "name": "play", "content": "playing"},
    ],
    "answer": "ok",
}
STRING_ARGUMENTS = {  # OpenAI's form: arguments as JSON text
    "prompt": [
        {"role": "user", "content": "1+1?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_4",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_4", "name": "add", "content": "2"},
    ],
    "answer": "2",
}
STANDARD = [  # a standard conversational dataset, as the Hub has them
    {"prompt": [{"role": "user", "content": "What is the capital of France?"}], "answer": "Paris"},
    {
        "prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+1?"}],
        "answer": "2",
    },
]


def test_plain_messages_are_exactly_what_dataset_from_list_gives() -> None:
    datasets = pytest.importorskip("datasets")
    rows = [
        {"prompt": [{"role": "user", "content": "2+2?"}], "answer": "4"},
        {
            "prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "3+3?"}],
            "answer": "6",
        },
    ]
    ours = arrow.to_dataset(rows)
    theirs = datasets.Dataset.from_list(rows)
    assert ours.features == theirs.features
    ours_type = ours.data.table.schema.field("prompt")
    assert ours_type.equals(theirs.data.table.schema.field("prompt"))  # nullability included
    standard = datasets.Dataset.from_list(STANDARD)
    both = datasets.concatenate_datasets([standard, ours])
    assert list(both["prompt"]) == [*standard["prompt"], *ours["prompt"]]
    assert list(both["answer"]) == ["Paris", "2", "4", "6"]
    assert arrow.arrow_to_rows(both) == (*normalise_rollout_rows(STANDARD), *tuple(rows))
    # And str prompts: a standard prompt-only dataset.
    text = arrow.to_dataset([{"prompt": "2+2?", "answer": "4"}])
    plain = datasets.Dataset.from_list([{"prompt": "The sky is", "answer": "blue"}])
    assert list(datasets.concatenate_datasets([plain, text])["prompt"]) == ["The sky is", "2+2?"]


def test_tool_calls_are_typed_as_dataset_from_list_types_them() -> None:
    datasets = pytest.importorskip("datasets")
    for rows in (TOOL_ROWS, [STRING_ARGUMENTS]):
        ours = arrow.to_dataset(rows)
        theirs = datasets.Dataset.from_list(rows)
        assert ours.features == theirs.features, rows
        assert ours[0]["prompt"] == theirs[0]["prompt"]
    tool_calls = arrow.to_dataset(TOOL_ROWS).features["prompt"].feature["tool_calls"]
    assert str(tool_calls.feature["function"]["arguments"]) == (
        "{'a': Value('int64'), 'b': Value('int64')}"
    )
    # Arguments of other keys: from_list fills each call with the other's keys as None;
    # here they are JSON text, which datasets reads back as the calls were.
    ours = arrow.to_dataset([OTHER_ARGUMENTS])
    calls = ours[0]["prompt"][1]["tool_calls"]
    assert [call["function"]["arguments"] for call in calls] == [
        {"room": "hall", "on": True},
        {"playlist": "jazz"},
    ]
    filled = datasets.Dataset.from_list([OTHER_ARGUMENTS])[0]["prompt"][1]["tool_calls"]
    assert filled[1]["function"]["arguments"] == {"room": None, "on": None, "playlist": "jazz"}


# ---- TRL: chat templates render the rows as they render plain rows --------------------------


def chat_tokenizer(template_name: str) -> Any:
    """A tokenizer built here (no download), carrying one of TRL's chat templates."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    template = resources.files("trl").joinpath("chat_templates", template_name).read_text()
    model = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="<unk>"))
    model.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    specials = ["<unk>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|eot_id|>"]
    trainer = tokenizers.trainers.WordLevelTrainer(special_tokens=specials)
    model.train_from_iterator(["what is two plus two", "add the numbers"], trainer)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=model,
        chat_template=template,
        unk_token="<unk>",
        bos_token="<|begin_of_text|>",
        eos_token="<|im_end|>",
    )


def test_qwen_template_renders_to_dataset_rows_as_the_plain_rows() -> None:
    """TRL's own path (``maybe_apply_chat_template`` on a Dataset row) with Qwen2.5's
    template, which renders tool calls: the text is the one the plain rows give."""
    data_utils = pytest.importorskip("trl.data_utils")
    tokenizer = chat_tokenizer("qwen2_5.jinja")
    image = {"prompt": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}
    rows = [*TOOL_ROWS, OTHER_ARGUMENTS, STRING_ARGUMENTS, *STANDARD, image]
    dataset = arrow.to_dataset(rows)
    rendered = 0
    for row, example in zip(rows[:-1], dataset, strict=False):  # Qwen2.5 renders no parts
        assert data_utils.is_conversational(example)
        ours = data_utils.maybe_apply_chat_template(example, tokenizer)["prompt"]
        plain = data_utils.maybe_apply_chat_template(row, tokenizer)["prompt"]
        assert ours == plain
        rendered += "<tool_call>" in ours
    assert rendered == 4
    assert (
        '"arguments": {"room": "hall", "on": true}'
        in data_utils.maybe_apply_chat_template(dataset[2], tokenizer)["prompt"]
    )


def test_llama_template_renders_arrow_to_rows_as_the_plain_rows() -> None:
    """Llama 3.1's template asks ``'tool_calls' in message``, so a Dataset's None-filled
    rows need TRL's ``remove_none_values``; ``arrow_to_rows`` gives the rows as they were."""
    data_utils = pytest.importorskip("trl.data_utils")
    tokenizer = chat_tokenizer("llama3_1.jinja")
    rows = [*TOOL_ROWS, STRING_ARGUMENTS, *STANDARD]
    back = arrow.arrow_to_rows(arrow.to_dataset(rows))
    for row, again in zip(rows, back, strict=True):
        ours = data_utils.maybe_apply_chat_template(again, tokenizer)["prompt"]
        assert ours == data_utils.maybe_apply_chat_template(row, tokenizer)["prompt"]
        if any("tool_calls" in message for message in row["prompt"]):
            assert '"parameters": ' in ours


# ---- the edges ------------------------------------------------------------------------------


def test_arrow_to_rows_honours_a_datasets_indices_mapping() -> None:
    pytest.importorskip("datasets")
    rows = [{"prompt": f"q{i}", "answer": str(i)} for i in range(10)]
    expected = normalise_rollout_rows(rows)
    dataset = arrow.to_dataset(rows)

    def by_answer(subset: Any) -> tuple:
        return tuple(expected[int(answer)] for answer in subset["answer"])

    assert arrow.arrow_to_rows(dataset.select([4, 1])) == (expected[4], expected[1])
    shuffled = dataset.shuffle(seed=3)
    assert list(shuffled["answer"]) != list(dataset["answer"])
    assert arrow.arrow_to_rows(shuffled) == by_answer(shuffled)
    kept = dataset.filter(lambda row: int(row["answer"]) % 3 == 0)
    assert arrow.arrow_to_rows(kept) == (expected[0], expected[3], expected[6], expected[9])
    split = dataset.train_test_split(test_size=0.3, seed=1)
    assert arrow.arrow_to_rows(split["test"]) == by_answer(split["test"])
    assert arrow.arrow_to_rows(split["train"]) == by_answer(split["train"])
    tools = arrow.to_dataset([*TOOL_ROWS, OTHER_ARGUMENTS])
    assert arrow.arrow_to_rows(tools.select([2, 0])) == tuple(
        without_null_keys(row) for row in (OTHER_ARGUMENTS, TOOL_ROWS[0])
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_an_int_too_long_to_write_is_refused_naming_row_and_path(engine: str) -> None:
    huge = 10**5000
    rows = [
        {"prompt": [{"role": "user", "content": "q"}]},
        {"prompt": [{"role": "user", "content": "q", "meta": {"n": [1, huge]}}]},
    ]
    assert on_engine(engine, lambda: normalise_rollout_rows(rows))[1] == rows[1]
    message = (
        "row 1: prompt[0].meta.n[1]: an int of more than 4300 digits cannot be stored in Arrow "
        "or Parquet (past int64 it is stored as JSON text, and Python writes no int that long "
        "as text: sys.set_int_max_str_digits)"
    )
    for data in (rows, [dict(row) for row in rows], tuple(rows)):
        _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, data)
        assert error == ("RolloutRowError", message, 1)
    # Not normalised form (a tuple in a message): the row rules run first, same error.
    odd = [{"prompt": [{"role": "user", "meta": ("x", huge)}]}]
    _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, odd)
    assert error[1].startswith("row 0: prompt[0].meta[1]: an int of more than 4300 digits")
    # An earlier row Arrow cannot hold for another reason is named first.
    first = [{"prompt": [{"role": "user", "content": "\ud800", "n": huge}]}]
    _, error = indexed_outcome_on(engine, arrow.rows_to_arrow, first)
    assert error[1].startswith("row 0: prompt[0].content: a str with a lone surrogate")
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # no limit: then it is JSON text like any long int
    try:
        table = on_engine(engine, lambda: arrow.rows_to_arrow(rows))
        assert arrow.arrow_to_rows(table)[1]["prompt"][0]["meta"]["n"][1] == huge
    finally:
        sys.set_int_max_str_digits(previous)


INT64 = 2**63
LONG_INTS = [
    *(INT64 - 1, INT64, -INT64, -INT64 - 1, 16**1000, -(16**1000) + 1),
    *(10**639, 10**640, 10**4299, 10**4300, 10**4419, 10**4420, -(10**9999), -(10**10000)),
]


def str_refuses(value: int, limit: int) -> bool:
    """Whether ``str(value)`` raises under the digit limit ``limit``."""
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        str(value)
    except ValueError:
        return True
    finally:
        sys.set_int_max_str_digits(previous)
    return False


@settings(max_examples=150)
@given(
    st.lists(st.one_of(st.integers(), st.sampled_from(LONG_INTS)), min_size=1, max_size=4),
    st.sampled_from([0, 640, 4300, 10000]),
)
@hypothesis.example(values=[-(10**10000)], limit=10000)  # written from 3.12 on
def test_ints_past_int64_are_written_as_str_writes_them(values: list, limit: int) -> None:
    """The Rust engine writes an int past int64 from its hex digits (``str()`` can run
    signal handlers midway): the same JSON text as the twin's ``json.dumps``, and refused
    exactly where ``str()`` refuses under ``sys.get_int_max_str_digits()``: past the limit
    (at 640: 641 digits refused, 640 written), or earlier by a bound on the int's size
    (4,420 digits at 4300), and from 3.12 not at all past 1,000 CPython digits within that
    bound (10,001 digits at 10000, which ``_pylong`` writes)."""
    too_long = any(str_refuses(value, limit) for value in values)
    rows = [{"prompt": [{"role": "user", "content": "q", "n": values, "m": values[-1]}]}]
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        outcomes = [indexed_outcome_on(engine, arrow.rows_to_arrow, rows) for engine in ENGINES]
        # Read back with no limit: from 3.12, str() writes some ints that int() refuses
        # to read under the same limit (10,001 digits at 10000).
        sys.set_int_max_str_digits(0)
        back = [arrow.arrow_to_rows(table) for kind, table in outcomes if kind == "ok"]
    finally:
        sys.set_int_max_str_digits(previous)
    kinds = {kind for kind, _ in outcomes}
    assert kinds == {"error" if too_long else "ok"}, outcomes
    if too_long:
        assert all(error == outcomes[0][1] for _, error in outcomes)
        assert outcomes[0][1][1].startswith("row 0: prompt[0].")
        return
    tables = [table for _, table in outcomes]
    assert all(table.equals(tables[0]) for table in tables)
    assert back[0][0]["prompt"] == rows[0]["prompt"]


def json_table(text: str) -> Any:
    """A foreign table whose message field ``x`` is JSON text (``arrow.json``)."""
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("x", pa.string())])
    storage = pa.array([[{"role": "user", "content": "q", "x": text}]], type=pa.list_(message))
    json_message = pa.struct(
        [("role", pa.string()), ("content", pa.string()), ("x", arrow.JSON_TYPE)]
    )
    return pa.table({"prompt": storage.cast(pa.list_(json_message)), "answer": ["a"]})


def test_json_nested_100000_deep_in_a_foreign_table_is_refused_naming_row_and_path() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    too_deep = "nested deeper than 128 levels (MAX_JSON_DEPTH)"
    with pytest.raises(RolloutRowError) as info:
        arrow.arrow_to_rows(json_table(deep))
    assert str(info.value) == f"row 0: prompt[0].x: must be null or JSON text: {too_deep}"
    # Within JSON's limit but past the message's: the row rules name it.
    with pytest.raises(RolloutRowError, match=r"row 0: prompt\[0\]\.x(\[0\])+: nested deeper"):
        arrow.arrow_to_rows(json_table("[" * 100 + "]" * 100))
    with pytest.raises(RolloutRowError) as info:
        arrow.arrow_to_rows(json_table("{1}"))
    assert str(info.value) == (
        "row 0: prompt[0].x: must be null or JSON text: expected a string key in double quotes"
    )
    # A list of JSON items (datasets' use_json form): the item is named.
    items = pa.array(['{"role": "user", "content": "q"}', "[" * 200 + "]" * 200]).cast(
        arrow.JSON_TYPE
    )
    listed = pa.table({"prompt": pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), items)})
    with pytest.raises(RolloutRowError, match=r"^row 0: prompt\[1\]: must be null or JSON text"):
        arrow.arrow_to_rows(listed)


def test_duplicate_columns_are_refused_with_a_clear_error() -> None:
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["prompt", "prompt"])
    with pytest.raises(ValueError) as info:
        arrow.arrow_to_rows(table)
    assert not isinstance(info.value, RolloutRowError)  # about the table, not a row
    assert str(info.value) == (
        "a rollout table has 2 columns named 'prompt'; it needs one (columns: ['prompt', 'prompt'])"
    )
    answers = pa.Table.from_arrays(
        [pa.array(["q"]), pa.array(["a"]), pa.array(["b"])], names=["prompt", "answer", "answer"]
    )
    with pytest.raises(ValueError, match="2 columns named 'answer'"):
        arrow.arrow_to_rows(answers.to_batches()[0])


NUL_ROWS = [
    # A key holding NUL: the Arrow C data interface (``pa.schema(struct)``, and so
    # every ``datasets.Dataset``) ends a field name at its NUL, and its values with it.
    ({"role": "user", "content": "c", "a\x00b": 1}, JSON),  # the message is JSON text
    (
        {"role": "user", "content": "c", "n": 2, "x": {"y\x00": [1], "z": "s"}},
        "struct<role: string, content: string, n: int64, x: extension<arrow.json>>",
    ),
]


@pytest.mark.parametrize(("message", "item"), NUL_ROWS, ids=["message key", "nested key"])
def test_a_key_holding_nul_is_kept_on_every_route_back(
    engine: str, message: dict, item: str, tmp_path: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    plain = {"prompt": [{"role": "user", "content": "p"}], "answer": "a"}
    rows = (plain, {"prompt": [message], "answer": "b"})
    table = arrow.rows_to_arrow(rows)
    assert str(table.schema.field("prompt").type.value_type) == item
    assert arrow.arrow_to_rows(table) == rows
    assert arrow.arrow_to_rows(arrow.to_dataset(rows)) == rows
    assert arrow.arrow_to_rows(datasets.Dataset(table)) == rows
    src = write_jsonl(tmp_path / "in.jsonl", list(rows))
    assert read_rollout_jsonl(src, as_arrow=True).equals(table)
    with small_batches(1):  # the second row group widens the file's schema
        dest = tmp_path / "out.parquet"
        normalise_rollout_file(src, dest)
    assert pq.read_table(dest).equals(table)
    loaded = datasets.load_dataset(
        "parquet", data_files=str(dest), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert arrow.arrow_to_rows(loaded) == rows


def test_a_message_key_named_extra_json_is_data_on_every_route_back(
    engine: str, tmp_path: Path
) -> None:
    """A user's key is data whatever its name: tables read back without our metadata
    (``datasets`` drops it) once merged an ``extra_json`` key's text into the message."""
    message = {"role": "user", "content": "c", "extra_json": '{"role": "system", "content": "x"}'}
    rows = ({"prompt": [message], "answer": "a"},)
    assert arrow.arrow_to_rows(arrow.rows_to_arrow(rows)) == rows
    assert arrow.arrow_to_rows(arrow.to_dataset(rows)) == rows
    bare = arrow.rows_to_arrow(rows).replace_schema_metadata(None)
    assert arrow.arrow_to_rows(bare) == rows
    src, dest = tmp_path / "in.jsonl", tmp_path / "x.parquet"
    src.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    normalise_rollout_file(src, dest)
    assert arrow.arrow_to_rows(pq.read_table(dest)) == rows
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset(
        "parquet", data_files=str(dest), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert arrow.arrow_to_rows(loaded) == rows
