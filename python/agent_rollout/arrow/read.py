"""Rollout tables read back: JSON text and message decoders, ``iter_rows``, ``arrow_to_rows``.

Text that is not UTF-8 (Arrow's and Parquet's text must be; another writer's file
may break it) is the ``text_utf8`` error of its row, naming the column and the
byte, as a JSONL line's is: ``row 1: prompt[0].content: invalid UTF-8 at byte 4
of the text``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Optional

import pyarrow as pa

from agent_rollout import _engine, _json
from agent_rollout._errors import JSON_REASONS, PathSegment, row_error
from agent_rollout._exceptions import RolloutTypeError, RolloutValueError
from agent_rollout._limits import (
    MAX_ROLLOUT_ROWS,
    int_digits_limit,
)


def _as_table(data: Any) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    inner = getattr(data, "data", None)  # datasets.Dataset keeps its table in .data.table
    if isinstance(getattr(inner, "table", None), pa.Table) and hasattr(data, "with_format"):
        # select, shuffle, filter and splits keep the table and add an indices
        # mapping: the rows are those the Dataset shows, in its order.
        return data.with_format("arrow")[:]
    if hasattr(data, "__arrow_c_stream__"):  # polars, DuckDB, arro3, ... (the PyCapsule interface)
        return pa.table(data)
    raise RolloutTypeError(
        "arrow_to_rows needs a pyarrow Table or RecordBatch, a datasets.Dataset or an object "
        f"with __arrow_c_stream__, got {type(data).__name__}"
    )


# ---- reading tables back ----------------------------------------------------------------


class BadJson(Exception):
    """JSON text that does not parse; ``segments`` is where, below the field that holds it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.segments: list = []


def _loads(text: Any) -> Any:
    if text is None:
        return None  # JSON null is stored as a null entry
    if not isinstance(text, str):
        raise BadJson(f"got {type(text).__name__}")
    try:
        return _json.loads(text)
    except _json.JsonSyntaxError as exc:
        reason = JSON_REASONS.get(exc.reason, exc.reason)
        raise BadJson(reason.replace("{int_digits}", str(int_digits_limit()))) from None


Decoder = Callable[[Any], Any]


def _is_list(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type))


def decoder_for(arrow_type: pa.DataType) -> Optional[Decoder]:
    """How to turn a value ``to_pylist`` gives for ``arrow_type`` into the value it holds
    (JSON text parsed); None when it already is that value."""
    if isinstance(arrow_type, pa.JsonType):
        return _loads
    if _is_list(arrow_type):
        item = decoder_for(arrow_type.value_type)
        if item is None:
            return None

        def decode_list(value: Any) -> Any:
            if value is None:
                return None
            out = []
            for position, entry in enumerate(value):
                try:
                    out.append(item(entry))
                except BadJson as exc:
                    exc.segments.insert(0, position)
                    raise
            return out

        return decode_list
    if pa.types.is_struct(arrow_type):
        fields = [(field.name, decoder_for(field.type)) for field in arrow_type]
        inner = [(name, decode) for name, decode in fields if decode is not None]
        if not inner:
            return None

        def decode_struct(value: Any) -> Any:
            if value is None:
                return None
            out = dict(value)
            for name, decode in inner:
                try:
                    out[name] = decode(out[name])
                except BadJson as exc:
                    exc.segments.insert(0, name)
                    raise
            return out

        return decode_struct
    return None


def pylist(array: pa.Array) -> list:
    decode = decoder_for(array.type)
    values = array.to_pylist()
    return values if decode is None else [decode(value) for value in values]


MessagesDecoder = Callable[[list, int], list]


def _messages_decoder(message_type: pa.DataType) -> MessagesDecoder:
    """Decode the messages of one row: a null field reads back as an absent key."""
    fields = [(field.name, decoder_for(field.type)) for field in message_type]
    inner = [(name, decode) for name, decode in fields if decode is not None]

    def decode_messages(messages: list, index: int) -> list:
        out = []
        for position, message in enumerate(messages):
            if not isinstance(message, dict):
                out.append(message)  # the row rules name it
                continue
            decoded_message = {key: value for key, value in message.items() if value is not None}
            for name, decode in inner:
                if name in decoded_message:
                    try:
                        decoded_message[name] = decode(decoded_message[name])
                    except BadJson as exc:
                        path = ("prompt", position, name, *exc.segments)
                        raise row_error("json_text", index, path, exc.reason) from None
            out.append(decoded_message)
        return out

    return decode_messages


def _prompt_decoder(prompt_type: pa.DataType) -> Optional[MessagesDecoder]:
    if not _is_list(prompt_type):
        decode = decoder_for(prompt_type)
        if decode is None:
            return None
        one = decode

        def decode_prompt(prompt: Any, index: int) -> Any:
            try:
                return one(prompt)
            except BadJson as exc:
                raise row_error("json_text", index, ("prompt", *exc.segments), exc.reason) from None

        return decode_prompt
    item = prompt_type.value_type
    if pa.types.is_struct(item):
        return _messages_decoder(item)
    decode_items = decoder_for(prompt_type)
    if decode_items is None:
        return None
    items = decode_items

    def decode_item_list(prompt: Any, index: int) -> Any:
        try:
            return items(prompt)
        except BadJson as exc:
            raise row_error("json_text", index, ("prompt", *exc.segments), exc.reason) from None

    return decode_item_list


def _list_like(arrow_type: pa.DataType) -> bool:
    return bool(
        _is_list(arrow_type)
        or pa.types.is_fixed_size_list(arrow_type)
        or pa.types.is_list_view(arrow_type)
        or pa.types.is_large_list_view(arrow_type)
        or pa.types.is_map(arrow_type)
    )


def _bad_text(value: pa.Scalar) -> Optional[tuple[tuple[PathSegment, ...], int]]:
    """Where ``value`` holds text that is not UTF-8: the path below it and the 1-based
    byte in that text; None when it reads back."""
    try:
        value.as_py()
    except UnicodeDecodeError as exc:
        byte = exc.start + 1
    else:
        return None
    if _list_like(value.type) and value.is_valid:
        for position, item in enumerate(value.values):
            found = _bad_text(item)
            if found is not None:
                return (position, *found[0]), found[1]
    elif pa.types.is_struct(value.type) and value.is_valid:
        for at, field in enumerate(value.type):
            found = _bad_text(value[at])
            if found is not None:
                return (field.name, *found[0]), found[1]
    return (), byte


def _not_utf8(
    batch: pa.RecordBatch, columns: list[tuple[str, int]]
) -> tuple[int, tuple[PathSegment, ...], int]:
    """The first row of ``batch`` whose ``columns`` hold text that is not UTF-8 (their
    ``to_pylist`` raised ``UnicodeDecodeError``): its index, the path to that text and
    the 1-based byte in it."""
    for row in range(batch.num_rows):
        for name, at in columns:
            found = _bad_text(batch.column(at)[row])
            if found is not None:
                return row, (name, *found[0]), found[1]
    raise RolloutValueError("text that is not UTF-8, at no row found")  # to_pylist said so


def _batch_rows(
    batch: pa.RecordBatch,
    prompt_at: int,
    answer_at: Optional[int],
    decode: Optional[MessagesDecoder],
    first: int,
) -> Iterator[dict]:
    """The rows of ``batch``, decoded, its first the table's row ``first``. Text that is
    not UTF-8 (a file of another writer) is the ``text_utf8`` error of its row, raised
    after the rows before it."""
    try:
        prompts = batch.column(prompt_at).to_pylist()
        answers: Iterable[Any] = (
            batch.column(answer_at).to_pylist() if answer_at is not None else [None] * len(prompts)
        )
    except UnicodeDecodeError:
        columns = [("prompt", prompt_at)] + (
            [("answer", answer_at)] if answer_at is not None else []
        )
        row, path, byte = _not_utf8(batch, columns)
        yield from _batch_rows(batch.slice(0, row), prompt_at, answer_at, decode, first)
        raise row_error("text_utf8", first + row, path, str(byte)) from None
    index = first
    for prompt, answer in zip(prompts, answers, strict=True):
        if decode is not None and prompt is not None:
            prompt = decode(prompt, index)
        yield {"prompt": prompt} if answer is None else {"prompt": prompt, "answer": answer}
        index += 1


def iter_rows(data: Any) -> Iterator[dict]:
    """The rows of a rollout table, decoded (not yet checked)."""
    table = _as_table(data)
    names = table.column_names
    for name in ("prompt", "answer"):
        count = names.count(name)
        if count > 1:
            raise RolloutValueError(
                f"a rollout table has {count} columns named {name!r}; it needs one "
                f"(columns: {names})"
            )
    if "prompt" not in names:
        raise RolloutValueError(f"a rollout table needs a 'prompt' column; columns: {names}")
    prompt_at = names.index("prompt")
    answer_at = names.index("answer") if "answer" in names else None
    decode = _prompt_decoder(table.schema.field(prompt_at).type)
    index = 0
    for batch in table.to_batches():
        yield from _batch_rows(batch, prompt_at, answer_at, decode, index)
        index += batch.num_rows


def arrow_to_rows(
    data: Any, backend: str = "openenv", *, max_rows: int = MAX_ROLLOUT_ROWS
) -> tuple[dict, ...]:
    """The rows of a rollout table (ours, or one of the same shape), checked by the row rules.

    Accepts a ``pyarrow.Table``/``RecordBatch``, a ``datasets.Dataset`` (its
    rows as it shows them: after ``select``, ``shuffle``, ``filter`` or a split,
    those rows in that order), or anything that exports ``__arrow_c_stream__``
    (a polars DataFrame...). A null message field reads back as an absent key,
    JSON text as its value: ``arrow_to_rows(rows_to_arrow(rows))`` is
    ``normalise_rollout_rows(rows)`` without the message keys whose value is None.
    """
    return _engine.normalise_rollout_rows(iter_rows(data), backend, max_rows=max_rows)
