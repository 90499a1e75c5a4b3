"""Rollout rows as Arrow: the shape ``datasets`` and trainers read, lossless.

Needs ``pyarrow`` (``pip install 'agent-rollout[arrow]'``), so the package
imports this module only when it is asked for (``agent_rollout.rows_to_arrow``
and friends, Parquet output of ``normalise_rollout_file``, ``as_arrow=True``,
``agent_rollout.ray``). The schema is written down here and in
``docs/arrow.md``; ``rust/arrow.rs`` builds the same tables:

* ``prompt`` is a ``string`` column (TRL's *standard* format) or a
  ``list<struct<role: string, content: string, ...>>`` column (TRL's
  *conversational* format). One table holds one kind: the first row decides,
  unless ``prompt_kind`` says which; a row of the other kind is refused,
  naming it. ``prompt_kind="messages"`` makes a mixed input uniform by
  turning each str prompt into ``[{"role": "user", "content": prompt}]``.
* A message struct has ``role`` and ``content`` first, then one field per
  other key the table's messages have (``tool_calls``, ``tool_call_id``,
  ``name``...), in the order the keys first appear, each typed the way
  ``datasets.Dataset.from_list`` types it. Messages with only ``role`` and a
  str ``content`` are exactly ``struct<role: string, content: string>``.
* What one Arrow type cannot hold consistently is JSON text in an
  ``arrow.json`` field (``datasets`` reads it as the value, its ``Json()``
  feature): a key whose values are of different JSON types, objects whose
  keys differ, an int past int64, and ``content`` once any content is not a
  str (then every content of the table is JSON text). Nothing is dropped.
* Two bounds (``agent_rollout._limits``) keep the shape one the standard
  readers read, in memory that does not grow with keys times messages: a
  list or object deeper than ``MAX_TYPED_DEPTH`` levels of a message is JSON
  text; past ``MAX_MESSAGE_FIELDS`` keys besides ``role`` and ``content``, each
  message is JSON text (``prompt: list<arrow.json>``, ``message_text``).
* ``answer`` is a ``string`` (null: the row has no answer).

The typing is a join over the values (``merge_schemas``): batches are typed
apart and a table gets the join of their types; ``conform`` converts a batch
to a wider type. ``arrow_to_rows`` gives the rows back: a null message field
reads back as an absent key.
"""

from __future__ import annotations

import bisect
import os
import shutil
import stat
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, Optional, cast

from agent_rollout._exceptions import MissingPackageError, RolloutTypeError, RolloutValueError

try:
    import pyarrow as pa
except ImportError as exc:  # pragma: no cover - exercised only without pyarrow
    raise MissingPackageError(
        "agent_rollout.arrow needs pyarrow: pip install 'agent-rollout[arrow]'"
    ) from exc

from agent_rollout import _engine, _json, _jsonl, _rows
from agent_rollout._errors import JSON_REASONS, from_native_file, row_error
from agent_rollout._files import (
    Destination,
    Opened,
    Output,
    naming,
    path_text,
    raise_if_terminated,
    release_reader,
    remove_temp,
    source_name,
)
from agent_rollout._jsonl import FileCounts, FileLimits, Progress, Tally
from agent_rollout._limits import (
    MAX_MESSAGE_DEPTH,
    MAX_MESSAGE_FIELDS,
    MAX_ROLLOUT_BYTES,
    MAX_ROLLOUT_ROWS,
    MAX_TYPED_DEPTH,
    check_max_bytes,
    check_max_rows,
    int_digits_limit,
)
from agent_rollout.backends import validate_rollout_backend

if TYPE_CHECKING:
    import datasets

PromptKind = Literal["auto", "text", "messages"]
PROMPT_KINDS: tuple[str, ...] = ("auto", "text", "messages")

SCHEMA_VERSION = "2"
"""Written into every table's metadata. Reading back never depends on it: ``datasets`` and
other tools drop table metadata, so a column or message key means the same with or without."""
_META_KEY = b"agent_rollout.schema"
_META = {_META_KEY: SCHEMA_VERSION.encode()}

JSON_TYPE = pa.json_()
"""JSON text (the canonical ``arrow.json`` extension; ``datasets``' ``Json()``)."""

_NULL = pa.null()
_STRING = pa.string()
_BOOL = pa.bool_()
_INT64 = pa.int64()
_FLOAT64 = pa.float64()
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

MESSAGE_TYPE = pa.struct([pa.field("role", _STRING), pa.field("content", _STRING)])
"""A message of only ``role`` and a str ``content``: what ``Dataset.from_list`` gives."""

TEXT_SCHEMA = pa.schema(
    [pa.field("prompt", _STRING), pa.field("answer", _STRING)],
    metadata=_META,
)
"""Rows whose prompts are str: TRL's standard format."""

MESSAGES_SCHEMA = pa.schema(
    [pa.field("prompt", pa.list_(MESSAGE_TYPE)), pa.field("answer", _STRING)],
    metadata=_META,
)
"""Rows whose messages hold only ``role`` and ``content``: TRL's conversational format.
Messages with other keys get wider message structs (``schema_for``)."""

BATCH_ROWS = 65536
"""Rows per record batch the twin builds in memory (for Parquet, ``ROW_GROUP_ROWS``)."""

_BATCH_BYTES = 1 << 28
"""A batch is closed early once its text passes this many bytes (offsets are 32-bit)."""


def arrow_schema(prompt_kind: Literal["text", "messages"]) -> pa.Schema:
    """The Arrow schema of a rollout table whose prompts are of ``prompt_kind``
    (for messages: the schema when they hold only ``role`` and ``content``)."""
    if prompt_kind == "text":
        return TEXT_SCHEMA
    if prompt_kind == "messages":
        return MESSAGES_SCHEMA
    raise RolloutValueError(f"prompt_kind must be 'text' or 'messages', got {prompt_kind!r}")


def check_prompt_kind(prompt_kind: object) -> PromptKind:
    if prompt_kind not in PROMPT_KINDS:
        raise RolloutValueError(
            f"prompt_kind must be one of {', '.join(PROMPT_KINDS)}; got {prompt_kind!r}"
        )
    return cast(PromptKind, prompt_kind)


def schema_for(prompt_type: pa.DataType) -> pa.Schema:
    """The rollout schema whose ``prompt`` column is of ``prompt_type``."""
    if prompt_type == _STRING:
        return TEXT_SCHEMA
    if prompt_type == MESSAGES_SCHEMA.field("prompt").type:
        return MESSAGES_SCHEMA
    return pa.schema([pa.field("prompt", prompt_type), pa.field("answer", _STRING)], metadata=_META)


# ---- the types: one join over the values ----------------------------------------------------


# The twin's types while a batch is typed (``rust/arrow.rs``'s ``Ty``): "null",
# "bool", "int", "float", "str", "json", ("list", item) or ("struct", names, types).
Ty = Any
_SCALARS = {str: "str", bool: "bool", float: "float"}
_ARROW_TYPES = {
    "null": _NULL,
    "bool": _BOOL,
    "int": _INT64,
    "float": _FLOAT64,
    "str": _STRING,
    "json": JSON_TYPE,
}


def absorb(ty: Ty, value: Any, level: int = 2) -> Ty:
    """``ty`` joined with the type of one normalised value at nesting ``level`` of a
    message (a message key's value is level 2; ``Ty::absorb``). A list or object
    deeper than ``MAX_TYPED_DEPTH`` is JSON text."""
    if value is None or ty == "json":
        return ty
    kind = type(value)
    scalar = _SCALARS.get(kind)
    if scalar is None and kind is int:
        scalar = "int" if _INT64_MIN <= value <= _INT64_MAX else "json"
    if scalar is not None:
        return scalar if ty == "null" or ty == scalar else "json"
    if level > MAX_TYPED_DEPTH:
        return "json"  # deeper than the standard Parquet readers read
    if kind is list:
        if ty == "null":
            item = "null"
        elif type(ty) is tuple and ty[0] == "list":
            item = ty[1]
        else:
            return "json"
        for entry in value:
            item = absorb(item, entry, level + 1)
        return ("list", item)
    if kind is dict:
        if not value:
            return "json"  # Parquet has no struct without fields
        names = tuple(value)
        if ty == "null":
            types = tuple(absorb("null", entry, level + 1) for entry in value.values())
            return ("struct", names, types)
        if type(ty) is tuple and ty[0] == "struct" and ty[1] == names:
            joined = tuple(
                absorb(t, entry, level + 1) for t, entry in zip(ty[2], value.values(), strict=True)
            )
            return ("struct", names, joined)
        return "json"
    raise RolloutTypeError(f"not a normalised value: {kind.__name__}")  # pragma: no cover - a guard


def to_arrow_type(ty: Ty) -> pa.DataType:
    """The Arrow type of one of the twin's types."""
    if type(ty) is str:
        return _ARROW_TYPES[ty]
    if ty[0] == "list":
        return pa.list_(to_arrow_type(ty[1]))
    return pa.struct([(name, to_arrow_type(t)) for name, t in zip(ty[1], ty[2], strict=True)])


def _names(struct: pa.DataType) -> list[str]:
    return [field.name for field in struct]


def join_types(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The least type holding values of both: null joins as the other, lists join
    their items, structs with the same keys in the same order join field by
    field; anything else is JSON text."""
    if a == b:
        return a
    if a == _NULL:
        return b
    if b == _NULL:
        return a
    if pa.types.is_list(a) and pa.types.is_list(b):
        return pa.list_(join_types(a.value_type, b.value_type))
    if pa.types.is_struct(a) and pa.types.is_struct(b) and _names(a) == _names(b):
        return pa.struct(
            [(fa.name, join_types(fa.type, fb.type)) for fa, fb in zip(a, b, strict=True)]
        )
    return JSON_TYPE


def _other_keys(fields: Iterable[str]) -> int:
    """How many of a message struct's fields are not ``role`` or ``content``."""
    return sum(1 for name in fields if name != "role" and name != "content")


def join_messages(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """Two message types joined: every key of both structs (``a``'s first, in order),
    typed by ``join_types``; past ``MAX_MESSAGE_FIELDS`` keys besides ``role`` and
    ``content`` (or when either is already JSON text), JSON text."""
    if a == b:
        return a
    if a == JSON_TYPE or b == JSON_TYPE:
        return JSON_TYPE
    fields = {field.name: field.type for field in a}
    for field in b:
        known = fields.get(field.name)
        fields[field.name] = field.type if known is None else join_types(known, field.type)
    if _other_keys(fields) > MAX_MESSAGE_FIELDS:
        return JSON_TYPE
    return pa.struct(list(fields.items()))


def _message_list(arrow_type: pa.DataType) -> bool:
    """A list of messages: of structs, or of JSON text (past ``MAX_MESSAGE_FIELDS``)."""
    return bool(
        pa.types.is_list(arrow_type)
        and (pa.types.is_struct(arrow_type.value_type) or arrow_type.value_type == JSON_TYPE)
    )


def merge_schemas(*schemas: pa.Schema) -> pa.Schema:
    """The one rollout schema that holds tables of every given schema (``conform_table``
    converts a table to it). Tables of str prompts and of message lists do not merge."""
    prompt: Optional[pa.DataType] = None
    for schema in schemas:
        other = schema.field("prompt").type
        if prompt is None or prompt == other:
            prompt = other
        elif _message_list(prompt) and _message_list(other):
            prompt = pa.list_(join_messages(prompt.value_type, other.value_type))
        else:
            raise RolloutValueError(
                f"rollout tables with prompt columns of types {prompt} and {other} "
                "cannot share one schema"
            )
    if prompt is None:
        raise RolloutValueError("merge_schemas needs at least one schema")
    return schema_for(prompt)


# ---- converting arrays to a wider type ------------------------------------------------------


class NotFits(Exception):
    """An array's values have no place in the target type; ``name`` is the message key,
    ``index`` the message (when the messages are JSON text; else the key's first value)."""

    def __init__(
        self, name: Optional[str], arrow_type: pa.DataType, index: Optional[int] = None
    ) -> None:
        super().__init__(name, arrow_type, index)
        self.name = name
        self.arrow_type = arrow_type
        self.index = index


def _mask(array: pa.Array) -> Optional[pa.Array]:
    return array.is_null() if array.null_count else None


def conform(array: pa.Array, target: pa.DataType, *, messages: bool = False) -> pa.Array:
    """``array`` as ``target``, a type that holds it (a join of its type): missing
    fields become nulls, values where ``target`` is JSON become their JSON text.
    ``messages``: the array is a message list, whose structs join by key."""
    if array.type == target:
        return array
    count = len(array)
    if array.null_count == count:
        return pa.nulls(count, target)
    if target == JSON_TYPE:
        if messages and pa.types.is_struct(array.type):
            return messages_as_json(_pylist(array))
        return build_array(_pylist(array), JSON_TYPE)
    if pa.types.is_list(array.type) and pa.types.is_list(target):
        child = conform(array.values, target.value_type, messages=messages)
        return pa.ListArray.from_arrays(array.offsets, child, type=target, mask=_mask(array))
    if pa.types.is_struct(array.type) and pa.types.is_struct(target):
        have, want = _names(array.type), _names(target)
        if messages:
            for name in have:
                if name not in want and array.field(name).null_count != count:
                    raise NotFits(name, array.field(name).type)
        elif have != want:
            raise NotFits(None, array.type)
        children = []
        for field in target:
            if field.name not in have:
                children.append(pa.nulls(count, field.type))
                continue
            child = array.field(field.name)
            try:
                children.append(conform(child, field.type))
            except NotFits:
                if messages:
                    raise NotFits(field.name, child.type) from None
                raise
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(array))
    if messages and array.type == JSON_TYPE and pa.types.is_struct(target):
        return _messages_from_json(array, target)
    raise NotFits(None, array.type)


def _messages_from_json(array: pa.Array, target: pa.DataType) -> pa.Array:
    """Messages as JSON text (past ``MAX_MESSAGE_FIELDS``) as the message struct
    ``target``, where it holds every value of theirs (a schema given by hand);
    else ``NotFits`` naming the first message and key it has no place for."""
    try:
        messages = _pylist(array)
    except BadJson:
        raise NotFits(None, array.type) from None
    fields = {field.name: field.type for field in target}
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise NotFits(None, array.type)
        for key, value in message.items():
            if value is None:
                continue
            place = fields.get(key)
            own = to_arrow_type(absorb("null", value))
            if place is None or join_types(place, own) != place:
                raise NotFits(key, own, index)
    rows = [{name: message.get(name) for name in fields} for message in messages]
    return build_array(rows, target)


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch of our rollout layout as ``schema`` (see ``conform``)."""
    prompt = batch.column(0)
    target = schema.field("prompt").type
    if prompt.type != target:
        prompt = conform(prompt, target, messages=True)
    return pa.RecordBatch.from_arrays([prompt, batch.column(1)], schema=schema)


def conform_table(table: pa.Table, schema: pa.Schema, start: int = 0) -> pa.Table:
    """A table of our rollout layout as ``schema``; a value ``schema`` has no place for
    is refused with ``RolloutRowError`` naming its row (counted from ``start``) and key."""
    if table.schema.equals(schema, check_metadata=True):
        return table
    batches = []
    row = start
    for batch in table.to_batches():
        try:
            batches.append(conform_batch(batch, schema))
        except NotFits as exc:
            raise _not_fitting(batch, exc, row) from None
        row += batch.num_rows
    return pa.Table.from_batches(batches, schema=schema)


def _not_fitting(batch: pa.RecordBatch, exc: NotFits, start: int) -> Exception:
    prompt = batch.column(0)
    if exc.name is None or not pa.types.is_list(prompt.type):
        return RolloutValueError(
            f"a rollout table of prompt type {prompt.type} does not fit the schema given"
        )
    if exc.index is not None:
        first = exc.index
    else:
        first = prompt.values.field(exc.name).is_valid().to_pylist().index(True)
    offsets = prompt.offsets.to_pylist()
    row = bisect.bisect_right(offsets, first) - 1
    position = first - offsets[row]
    return row_error(
        "schema_mismatch", start + row, ("prompt", position, exc.name), str(exc.arrow_type)
    )


def unify(batches: list[pa.RecordBatch]) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    """The batches of one table (each typed from its own rows) under their joined schema."""
    schema = merge_schemas(*(batch.schema for batch in batches))
    return schema, [conform_batch(batch, schema) for batch in batches]


# ---- building (the pure-Python twin) -------------------------------------------------------


def _holds_json(arrow_type: pa.DataType) -> bool:
    if arrow_type == JSON_TYPE:
        return True
    if pa.types.is_list(arrow_type):
        return _holds_json(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return any(_holds_json(field.type) for field in arrow_type)
    return False


def build_array(values: list, arrow_type: pa.DataType) -> pa.Array:
    """An array of ``arrow_type`` (a join of the values' types) holding ``values``."""
    if arrow_type == _NULL:
        return pa.nulls(len(values))
    if arrow_type == JSON_TYPE:
        texts = [None if value is None else _json.dumps(value) for value in values]
        return JSON_TYPE.wrap_array(pa.array(texts, type=_STRING))
    if not _holds_json(arrow_type):
        return pa.array(values, type=arrow_type)  # pyarrow cannot make JSON fields from values
    if pa.types.is_list(arrow_type):
        offsets = [0]
        flat: list = []
        nulls = [value is None for value in values]
        for value in values:
            if value is not None:
                flat.extend(value)
            offsets.append(len(flat))
        return pa.ListArray.from_arrays(
            pa.array(offsets, type=pa.int32()),
            build_array(flat, arrow_type.value_type),
            type=arrow_type,
            mask=pa.array(nulls) if any(nulls) else None,
        )
    if pa.types.is_struct(arrow_type):
        nulls = [value is None for value in values]
        children = [
            build_array(
                [None if value is None else value[field.name] for value in values], field.type
            )
            for field in arrow_type
        ]
        return pa.StructArray.from_arrays(
            children, fields=list(arrow_type), mask=pa.array(nulls) if any(nulls) else None
        )
    return pa.array(values, type=arrow_type)


def message_array(roles: list, contents: list, extras: list[tuple[int, dict]]) -> pa.Array:
    """The struct array of a batch's messages (``rust/arrow.rs``'s ``message_struct``),
    or past ``MAX_MESSAGE_FIELDS`` keys their JSON text.

    ``contents`` holds each str content (None for none); ``extras`` the other
    members of the messages that have any, as ``(message index, members)``.
    """
    content_json = False
    types: dict[str, Ty] = {}
    for _, members in extras:
        for key, value in members.items():
            if key == "content":
                content_json = True  # only a content that is neither str nor None gets here
                continue
            types[key] = absorb(types.get(key, "null"), value)
        if len(types) > MAX_MESSAGE_FIELDS:
            return _messages_text(roles, contents, extras)
    fields = {name: to_arrow_type(ty) for name, ty in types.items()}
    if content_json:
        values = list(contents)
        for index, members in extras:
            if "content" in members:
                values[index] = members["content"]
        content = build_array(values, JSON_TYPE)
    else:
        content = pa.array(contents, type=_STRING)
    children = [pa.array(roles, type=_STRING), content]
    for name, arrow_type in fields.items():
        values = [None] * len(roles)
        for index, members in extras:
            if name in members:
                values[index] = members[name]
        children.append(build_array(values, arrow_type))
    names = ["role", "content", *fields]
    return pa.StructArray.from_arrays(
        children,
        fields=[pa.field(name, child.type) for name, child in zip(names, children, strict=True)],
    )


def message_text(message: dict) -> str:
    """A message as JSON text, the form of every message of a table with more than
    ``MAX_MESSAGE_FIELDS`` keys besides ``role`` and ``content``: ``role``,
    ``content``, then the other keys in sorted order (one order however the rows
    were cut into batches), those whose value is None left out (as a null field
    reads back)."""
    out = {"role": message.get("role")}
    content = message.get("content")
    if content is not None:
        out["content"] = content
    for key in sorted(message):
        value = message[key]
        if value is not None and key != "role" and key != "content":
            out[key] = value
    return _json.dumps(out)


def messages_as_json(messages: list) -> pa.Array:
    """Messages (dicts) as an array of JSON text, each by ``message_text``."""
    return JSON_TYPE.wrap_array(pa.array([message_text(m) for m in messages], type=_STRING))


def _messages_text(roles: list, contents: list, extras: list[tuple[int, dict]]) -> pa.Array:
    """The messages of a batch as JSON text (``message_array`` past ``MAX_MESSAGE_FIELDS``)."""
    messages = [
        {"role": role, "content": content} for role, content in zip(roles, contents, strict=True)
    ]
    for index, members in extras:
        messages[index].update(members)
    return messages_as_json(messages)


def _json_size(value: Any) -> int:
    """How much text a value takes as JSON (for closing batches early)."""
    try:
        return len(_json.dumps(value))  # the C encoder: faster than walking in Python
    except ValueError:  # an int too long to write: reported when the batch is built
        return _text_size(value)


def _text_size(value: Any) -> int:
    """About how much text a value takes as JSON."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is list:
        return 2 + sum(_text_size(entry) for entry in value)
    if kind is dict:
        return 2 + sum(len(key) + 3 + _text_size(entry) for key, entry in value.items())
    if kind is int:
        return value.bit_length() // 3 + 2
    return 8


class KindCheck:
    """Tracks the table's prompt kind; names the first row of the other kind."""

    __slots__ = ("kind", "why", "wrap")

    def __init__(self, prompt_kind: str) -> None:
        self.kind: Optional[str] = None if prompt_kind == "auto" else prompt_kind
        self.why = f"prompt_kind={prompt_kind!r}"
        self.wrap = prompt_kind == "messages"  # str prompts become one user message

    def check(self, is_text: bool, index: int, line: Optional[int], source: Optional[str]) -> None:
        kind = "text" if is_text else "messages"
        if self.kind is None:
            self.kind = kind
            self.why = f"set by row {index}"
            return
        if kind == self.kind or (is_text and self.wrap):
            return
        code = "prompt_not_text" if self.kind == "text" else "prompt_not_messages"
        raise row_error(code, index, ("prompt",), self.why, line=line, source=source)


class TableBuilder:
    """Collects normalised rows into record batches, each typed from its own rows (the twin).

    ``unify`` gives the batches of one table their joined schema.
    """

    def __init__(
        self, prompt_kind: str, batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None
    ) -> None:
        self.kinds = KindCheck(prompt_kind)
        self.batch_rows = BATCH_ROWS if batch_rows is None else batch_rows
        self.batch_bytes = _BATCH_BYTES if batch_bytes is None else min(batch_bytes, _BATCH_BYTES)
        self.batches: list[pa.RecordBatch] = []
        self.rows: list[dict] = []  # the rows of the batch being built, for error reports
        self.start = 0  # index of its first row
        self._reset()

    def _reset(self) -> None:
        self.prompts: list[Any] = []
        self.offsets: list[int] = [0]
        self.roles: list[str] = []
        self.contents: list[Optional[str]] = []
        self.extras: list[tuple[int, dict]] = []
        self.answers: list[Optional[str]] = []
        self.size = 0

    def add(
        self, row: dict, index: int, line: Optional[int] = None, source: Optional[str] = None
    ) -> None:
        prompt = row["prompt"]
        is_text = type(prompt) is str
        kind = self.kinds.kind
        if kind is not None and (kind == "text") != is_text and not (is_text and self.kinds.wrap):
            self.flush()  # about to refuse this row: an earlier row Arrow cannot hold comes first
        self.kinds.check(is_text, index, line, source)
        if not self.answers:
            self.start = index
        self.rows.append(row)
        if self.kinds.kind == "text":
            self.prompts.append(prompt)
            self.size += len(prompt)
        elif is_text:
            self.roles.append("user")
            self.contents.append(prompt)
            self.offsets.append(len(self.roles))
            self.size += len(prompt)
        else:
            for message in prompt:
                self._message(message)
            self.offsets.append(len(self.roles))
        answer = row.get("answer")
        self.answers.append(answer)
        if answer is not None:
            self.size += len(answer)
        if len(self.answers) >= self.batch_rows or self.size >= self.batch_bytes:
            self.flush()

    def _message(self, message: dict) -> None:
        content = None
        members: Optional[dict] = None
        for key, value in message.items():
            if key == "role":
                continue
            if key == "content" and (value is None or type(value) is str):
                content = value
                continue
            if members is None:
                members = {}
            members[key] = value
            self.size += len(key) + _json_size(value)
        if members is not None:
            self.extras.append((len(self.roles), members))
        self.roles.append(message["role"])
        self.contents.append(content)
        if content is not None:
            self.size += len(content)

    def flush(self) -> Optional[pa.RecordBatch]:
        """Close the batch being built (if it has rows); return it."""
        if not self.answers:
            return None
        try:
            batch = self._build()
        except (UnicodeEncodeError, ValueError):
            # A lone surrogate (pyarrow's UTF-8), or an int too long to write as JSON text.
            found = unstorable_error(self.rows, self.start)
            if found is None:
                raise
            raise found from None
        self.batches.append(batch)
        self.rows = []
        self._reset()
        return batch

    def _build(self) -> pa.RecordBatch:
        answer = pa.array(self.answers, type=_STRING)
        if self.kinds.kind == "text":
            return pa.RecordBatch.from_arrays(
                [pa.array(self.prompts, type=_STRING), answer], schema=TEXT_SCHEMA
            )
        messages = message_array(self.roles, self.contents, self.extras)
        prompt = pa.ListArray.from_arrays(pa.array(self.offsets, type=pa.int32()), messages)
        return pa.RecordBatch.from_arrays([prompt, answer], schema=schema_for(prompt.type))


def _unstorable(value: Any, path: tuple) -> Optional[tuple[str, tuple]]:
    """The first str (key or value) that is not valid UTF-8, or int too long to write
    as text, in ``value``: (code, path)."""
    kind = type(value)
    if kind is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "not_utf8", path
        return None
    if kind is int:
        if not _INT64_MIN <= value <= _INT64_MAX:
            try:
                str(value)
            except ValueError:
                return "int_too_long", path
        return None
    if kind is list:
        for position, item in enumerate(value):
            found = _unstorable(item, (*path, position))
            if found is not None:
                return found
    elif kind is dict:
        for key, item in value.items():
            found = _unstorable(key, (*path, key))
            if found is None:
                found = _unstorable(item, (*path, key))
            if found is not None:
                return found
    return None


def unstorable_error(rows: Any, start: int) -> Optional[Exception]:
    """The error for the first value from ``rows[0]`` (row ``start``) Arrow cannot hold."""
    for offset, row in enumerate(rows):
        found = _unstorable(row, ())
        if found is not None:
            code, path = found
            fact = str(int_digits_limit()) if code == "int_too_long" else None
            return row_error(code, start + offset, path, fact)
    return None


# ---- building from the Rust engine's buffers -----------------------------------------------

_FIXED_WIDTH = {"bool": _BOOL, "int64": _INT64, "float64": _FLOAT64}


_EMPTY = pa.py_buffer(b"")


def buffer_of(held: Any) -> pa.Buffer:
    """A ``_native.Buffer`` as a pyarrow buffer over the same memory (not copied; the
    pyarrow buffer keeps ``held`` alive, and nothing writes to it)."""
    size = held.size
    return pa.foreign_buffer(held.address, size, held) if size else _EMPTY


def array_of(column: Any) -> pa.Array:
    """The array a ``_native.Column`` describes (its buffers wrapped, not copied)."""
    kind = column.kind
    count = column.len
    nulls = column.null_count
    validity = None if column.validity is None else buffer_of(column.validity)
    if kind == "string" or kind == "json":
        buffers = [validity, buffer_of(column.offsets), buffer_of(column.data)]
        array = pa.Array.from_buffers(_STRING, count, buffers, null_count=nulls)
        return array if kind == "string" else JSON_TYPE.wrap_array(array)
    if kind == "list":
        child = array_of(column.children[0])
        return pa.Array.from_buffers(
            pa.list_(child.type),
            count,
            [validity, buffer_of(column.offsets)],
            null_count=nulls,
            children=[child],
        )
    if kind == "struct":
        children = [array_of(child) for child in column.children]
        arrow_type = pa.struct(
            [pa.field(name, child.type) for name, child in zip(column.names, children, strict=True)]
        )
        return pa.Array.from_buffers(
            arrow_type, count, [validity], null_count=nulls, children=children
        )
    if kind == "null":
        return pa.nulls(count)
    return pa.Array.from_buffers(
        _FIXED_WIDTH[kind], count, [validity, buffer_of(column.data)], null_count=nulls
    )


def batch_from_buffers(parts: Any) -> pa.RecordBatch:
    """Assemble the record batch the Rust engine laid out (no copy of the buffers).

    ``parts`` is a ``_native.ArrowBatch``: ``kind`` ``"text"`` or
    ``"messages"``, ``rows``, and the ``prompt`` and ``answer`` columns
    (``_native.Column`` trees: kind, length, null count, validity, offsets,
    data, children, field names).
    """
    prompt = array_of(parts.prompt)
    answer = array_of(parts.answer)
    return pa.RecordBatch.from_arrays([prompt, answer], schema=schema_for(prompt.type))


_KIND_CODES = {"auto": 0, "text": 1, "messages": 2}


def _shape() -> tuple[int, int]:
    """The bounds of the Arrow shape, as the Rust engine takes them (``max_fields``,
    ``typed_depth``): read at each call, as the twin reads them."""
    return MAX_MESSAGE_FIELDS, MAX_TYPED_DEPTH


def _native_batches(
    rows: Any, backend: str, max_rows: int, prompt_kind: str
) -> list[pa.RecordBatch]:
    native = _engine.native
    code = _KIND_CODES[prompt_kind]
    # First pass: rows already in normalised form are built straight from the
    # input; anything else (None) goes through the row rules first.
    digits = int_digits_limit()
    parts = native.rows_to_arrow(
        rows, code, BATCH_ROWS, _BATCH_BYTES, max_rows, MAX_MESSAGE_DEPTH, digits, *_shape(), True
    )
    if parts is None:
        normalised = _engine.normalise_rollout_rows(rows, backend, max_rows=max_rows)
        try:
            parts = native.rows_to_arrow(
                normalised,
                code,
                BATCH_ROWS,
                _BATCH_BYTES,
                max_rows,
                MAX_MESSAGE_DEPTH,
                digits,
                *_shape(),
                False,
            )
        except native.NativeRowError as exc:
            code_name, index, segments, fact, _line, _column = exc.args
            if code_name in ("not_utf8", "int_too_long"):
                found = unstorable_error(normalised[index:], index)
                if found is not None:
                    raise found from None
                if code_name == "int_too_long":
                    fact = str(digits)  # the limit changed since (a signal handler's doing)
            raise row_error(code_name, index, segments, fact) from None
    return [batch_from_buffers(part) for part in parts]


# ---- public API -------------------------------------------------------------------------


def rows_to_arrow(
    rows: Any,
    backend: str = "openenv",
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
) -> pa.Table:
    """Normalise rollout rows and return them as a ``pyarrow.Table`` of the rollout schema.

    Same rules and errors as :func:`agent_rollout.normalise_rollout_rows`. With
    ``prompt_kind="auto"`` the first row decides whether ``prompt`` is a string
    or a message-list column and a row of the other kind raises
    ``RolloutRowError`` naming it; ``"text"`` and ``"messages"`` say so up
    front, and ``"messages"`` wraps each str prompt as one user message.
    Message keys beyond ``role`` and ``content`` become typed fields (see the
    module's docstring and docs/arrow.md).
    """
    prompt_kind = check_prompt_kind(prompt_kind)
    if _engine.implementation() == "rust":
        backend = validate_rollout_backend(backend)
        max_rows = check_max_rows(max_rows)
        batches = _native_batches(rows, backend, max_rows, prompt_kind)
    else:
        normalised = _engine.normalise_rollout_rows(rows, backend, max_rows=max_rows)
        builder = TableBuilder(prompt_kind)
        for index, row in enumerate(normalised):
            builder.add(row, index)
        builder.flush()
        batches = builder.batches
    schema, batches = unify(batches)
    return pa.Table.from_batches(batches, schema=schema)


def to_dataset(
    rows: Any,
    backend: str = "openenv",
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    prompt_kind: PromptKind = "auto",
) -> datasets.Dataset:
    """:func:`rows_to_arrow`, as a Hugging Face ``datasets.Dataset`` (needs ``datasets``;
    fields of JSON text read as values with ``datasets`` 4.7 or later)."""
    try:
        import datasets
    except ImportError as exc:
        raise MissingPackageError(
            "to_dataset needs the 'datasets' package: pip install datasets"
        ) from exc
    table = rows_to_arrow(rows, backend, max_rows=max_rows, prompt_kind=prompt_kind)
    return datasets.Dataset(datasets.table.InMemoryTable(table), fingerprint=_fingerprint(table))


def _fingerprint(table: pa.Table) -> str:
    """A hash of the table's content (its schema and buffers), as the Dataset's fingerprint.

    ``datasets`` would otherwise pickle the whole table to hash it, which costs
    more than building it. ``xxhash`` comes with ``datasets``.
    """
    import xxhash

    digest = xxhash.xxh64()
    digest.update(table.schema.serialize())
    for column in table.columns:
        for chunk in column.chunks:
            digest.update(f"{chunk.offset}:{len(chunk)}".encode())
            for buffer in chunk.buffers():
                digest.update(b"-" if buffer is None else buffer)
    return str(digest.hexdigest())


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


def _pylist(array: pa.Array) -> list:
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
        prompts = batch.column(prompt_at).to_pylist()
        answers: Iterable[Any] = (
            batch.column(answer_at).to_pylist() if answer_at is not None else [None] * len(prompts)
        )
        for prompt, answer in zip(prompts, answers, strict=True):
            if decode is not None and prompt is not None:
                prompt = decode(prompt, index)
            yield {"prompt": prompt} if answer is None else {"prompt": prompt, "answer": answer}
            index += 1


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


__all__ = [
    "BATCH_ROWS",
    "IN_FLIGHT_BYTES",
    "IN_FLIGHT_ROWS",
    "JSON_TYPE",
    "MESSAGES_SCHEMA",
    "MESSAGE_TYPE",
    "PROMPT_KINDS",
    "ROW_GROUP_BYTES",
    "ROW_GROUP_ROWS",
    "TEXT_SCHEMA",
    "arrow_schema",
    "arrow_to_rows",
    "batch_from_buffers",
    "check_prompt_kind",
    "conform_table",
    "file_batches",
    "merge_schemas",
    "read_rollout_table",
    "rows_to_arrow",
    "to_dataset",
    "write_parquet",
]


# ---- files: JSONL in, Arrow batches out ------------------------------------------------------

ROW_GROUP_ROWS = 16384
"""Rows per Parquet row group. Groups are written on a thread of their own while
the reader parses on: a small group starts that thread early and leaves little
to write once the parse is done (65,536-row groups left a third of a 100k-row
file to write after it)."""

ROW_GROUP_BYTES = 1 << 25
"""A row group is also written once its Arrow data passes this many bytes, so
long rows (multi-turn rollouts with tool output) make smaller groups."""

IN_FLIGHT_ROWS = 65536
"""The most rows of finished row groups handed to the writer thread and not yet
written (the one being written included): past them, the reader waits for it."""

IN_FLIGHT_BYTES = 1 << 27
"""The most Arrow bytes of finished row groups handed to the writer thread and
not yet written: memory does not grow with the file."""


def file_batches(
    src: str,
    limits: FileLimits,
    prompt_kind: str,
    on_batch: Callable[[pa.RecordBatch], object],
    progress: Optional[Progress],
    source: Optional[str] = None,
    batch_rows: Optional[int] = None,
    batch_bytes: Optional[int] = None,
) -> FileCounts:
    """Stream a rollout JSONL file as record batches, in order; return the run's counts.

    Each batch is typed from its own rows: ``unify`` (or ``merge_schemas`` and
    ``conform_batch``) gives them one schema. Errors name ``source`` (default:
    ``src``). ``bytes_out`` is 0: the caller knows what it wrote. The Rust engine
    hands over a batch per chunk of input; the twin closes a batch at ``batch_rows``
    rows or ``batch_bytes`` of text (default ``BATCH_ROWS``, and 256 MiB).
    """
    source = source_name(src) if source is None else source
    max_rows = limits.max_rows
    if _engine.implementation() == "rust":
        native = _engine.native
        try:
            stats = native.read_jsonl_arrow(
                src,
                _engine.file_limits(max_rows, limits.max_bytes),
                _KIND_CODES[prompt_kind],
                *_shape(),
                lambda parts: on_batch(batch_from_buffers(parts)),
                progress,
            )
        except native.NativeRowError as exc:
            raise from_native_file(exc, source, None, max_rows, limits.max_bytes) from None
        return _engine.file_counts(stats)
    opened = _jsonl.open_jsonl(src)
    tally = Tally()
    try:
        # The loops are in a function of their own: see "Cleanup around loops" in
        # docs/architecture.md.
        _batches_of(opened, limits, tally, source, prompt_kind, on_batch, progress, batch_rows,
                    batch_bytes)  # fmt: skip
    finally:
        opened.stream.close()
    return FileCounts(
        tally.rows, tally.lines, tally.blank_lines, tally.dropped_keys, tally.bytes_in, 0
    )


def _batches_of(
    opened: Opened,
    limits: FileLimits,
    tally: Tally,
    source: str,
    prompt_kind: str,
    on_batch: Callable[[pa.RecordBatch], object],
    progress: Optional[Progress],
    batch_rows: Optional[int],
    batch_bytes: Optional[int],
) -> None:
    """``file_batches`` on the twin, from an input already open."""
    builder = TableBuilder(prompt_kind, batch_rows, batch_bytes)
    index = 0
    batches = _jsonl.row_batches(opened, limits, tally, source, progress, partial=True)
    for batch in batches:
        with _rows.GcPause():
            for row, line in zip(batch, tally.batch_lines, strict=True):
                builder.add(row, index, line=line, source=source)
                index += 1
        while builder.batches:
            on_batch(builder.batches.pop(0))
    builder.flush()
    while builder.batches:
        on_batch(builder.batches.pop(0))


def read_rollout_table(
    path: Any,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    max_bytes: int = MAX_ROLLOUT_BYTES,
    prompt_kind: PromptKind = "auto",
) -> pa.Table:
    """Read a rollout JSONL file straight into a ``pyarrow.Table`` of the rollout schema.

    The Rust engine parses and checks the lines on worker threads and builds
    the Arrow buffers there: no Python row objects are made. Same rules,
    limits and errors as :func:`agent_rollout.read_rollout_jsonl`, plus the
    prompt-kind rule of :func:`rows_to_arrow` (the error names the file and
    line). ``read_rollout_jsonl(path, as_arrow=True)`` calls this.
    """
    text = path_text(path, "path")
    limits = FileLimits(check_max_rows(max_rows), check_max_bytes(max_bytes))
    prompt_kind = check_prompt_kind(prompt_kind)
    batches: list[pa.RecordBatch] = []
    file_batches(text, limits, prompt_kind, batches.append, None)
    schema, batches = unify(batches)
    return pa.Table.from_batches(batches, schema=schema)


def parquet_writer(path: str, schema: pa.Schema) -> Any:
    """A zstd ``ParquetWriter`` for rollout tables.

    Dictionary encoding only for the messages' ``role`` (a handful of words);
    statistics only for ``answer``. pyarrow's defaults try a dictionary for
    every column and keep min/max of every string: on prompts, which are long
    and mostly distinct, both cost time (about half of ``write_table``'s) and
    the abandoned dictionaries made the file larger (0.51 MB against 0.28 MB
    for ``bench_jsonl.py``'s 100k rows).
    """
    import pyarrow.parquet as pq

    prompt = schema.field("prompt").type
    messages = pa.types.is_list(prompt) and pa.types.is_struct(prompt.value_type)
    dictionary = ["prompt.list.element.role"] if messages else []
    # Opened by its bytes: pyarrow takes a str path as UTF-8, which a file name need not be.
    sink = pa.OSFile(os.fsencode(path), "wb")
    try:
        writer = pq.ParquetWriter(
            sink,
            schema,
            compression="zstd",
            use_dictionary=dictionary,
            write_statistics=["answer"],
        )
    except BaseException:
        sink.close()
        raise
    writer.file_handle = sink  # closed by writer.close(), as a file it opened itself
    return writer


class ParquetSink:
    """Record batches into one zstd Parquet file of one schema, row group by row group.

    The file's schema is the join of the batches' (``merge_schemas``): a batch
    that widens it (a message key not seen before, values of a new type) makes
    the sink rewrite the row groups already written, one at a time, under the
    wider schema. A regular file is written to the ``Output``'s temporary file;
    a device, pipe or descriptor gets the finished file, spooled to a private
    temporary file first (written Parquet cannot be widened in a stream). Such a
    destination is opened only by ``finish``: when anything fails before,
    ``abandon`` lets a reader already waiting on a named pipe go (it gets the end
    of its input) instead of leaving it waiting for ever.

    A full row group is encoded, compressed and written on a thread of its own
    (pyarrow lets go of the GIL there) while the Rust reader parses the next
    lines. Finished groups queue for that thread, in order, up to
    ``IN_FLIGHT_ROWS`` rows and ``IN_FLIGHT_BYTES`` bytes; past that the next
    group waits for room, so memory holds those plus the group being filled.
    A write's error is raised at a later group, at ``finish`` or when widening
    (the groups queued after it are not written), and ``abandon`` returns it
    when something after it failed first (the write came first: it is the
    error reported). Where no thread can start (interpreter shutdown), groups
    are written in line.
    """

    def __init__(self, where: Destination, dest: str) -> None:
        self.where = where
        self.dest = dest
        self.output: Optional[Output] = None
        self.path: Optional[str] = None  # the file pyarrow writes
        self.spool: Optional[Output] = None  # a private temporary file, never committed
        self.old: Optional[str] = None  # the file _widen is copying from
        self.writer: Any = None
        self.schema: Optional[pa.Schema] = None
        self.pending: list[pa.RecordBatch] = []
        self.sizes = {"rows": 0, "bytes": 0}
        self.thread: Any = None  # a ThreadPoolExecutor of one thread, once a group is written
        # The groups handed to it and not yet taken back, oldest first: (Future, rows, bytes).
        self.writing: deque[tuple[Any, int, int]] = deque()
        self.broken = False  # a group's write failed: the groups after it are not written
        self.stopping = False  # interrupted: the groups not yet begun are not written
        self.in_line = False  # no thread takes groups: each is written on the caller's

    def add(self, batch: pa.RecordBatch) -> None:
        raise_if_terminated()  # a SIGTERM whose exception code on the way dropped
        if self.schema is None:
            self._open(batch.schema)
        elif not batch.schema.equals(self.schema):
            wider = merge_schemas(self.schema, batch.schema)
            if not wider.equals(self.schema):
                self._widen(wider)
            batch = conform_batch(batch, wider)
        self.pending.append(batch)
        self.sizes["rows"] += batch.num_rows
        self.sizes["bytes"] += batch.nbytes
        if self.sizes["rows"] >= ROW_GROUP_ROWS or self.sizes["bytes"] >= ROW_GROUP_BYTES:
            self._write_pending()

    def _open(self, schema: pa.Schema) -> None:
        # Made on the first rows, so a bad source is reported before the
        # destination is touched (as for JSONL output).
        # Each Output is held before open() makes its file: abandon() finds
        # whatever an interrupt leaves half made.
        if self.where.kind == "file":
            self.output = Output(self.where, self.dest)
            self.output.open()
            self.path = self.output.temp
        else:
            spool = os.path.join(tempfile.gettempdir(), "agent-rollout.parquet")
            self.spool = Output(Destination("file", spool), os.path.dirname(spool), private=True)
            self.spool.open()
            self.path = self.spool.temp
        self.schema = schema
        assert self.path is not None
        with naming(self.dest):
            self.writer = parquet_writer(self.path, schema)

    def _take_pending(self) -> Optional[pa.Table]:
        if not self.pending:
            return None
        table = pa.Table.from_batches(self.pending, schema=self.schema)
        self.pending.clear()
        self.sizes["rows"] = self.sizes["bytes"] = 0
        return table

    def _write_pending(self) -> None:
        table = self._take_pending()
        if table is not None:
            rows, size = table.num_rows, table.nbytes
            self._wait(rows, size)
            if not self.in_line:
                try:
                    if self.thread is None:
                        # Imported here: its import registers an atexit hook, refused at
                        # shutdown.
                        from concurrent.futures import ThreadPoolExecutor

                        self.thread = ThreadPoolExecutor(
                            1, thread_name_prefix="agent-rollout-parquet"
                        )
                    future = self.thread.submit(self._write_group, self.writer, table)
                except RuntimeError:
                    # The interpreter is shutting down (no pool takes new work), or the
                    # thread could not start (its work item stays queued, never to run:
                    # nothing is submitted again, and only a submit starts a thread).
                    self.in_line = True
                else:
                    self.writing.append((future, rows, size))
                    return
            self._wait(every=True)  # the groups queued before it are written first
            self._write_group(self.writer, table)

    def _write_group(self, writer: Any, table: pa.Table) -> None:
        if self.broken or self.stopping:
            return  # an earlier group's error is the one reported; or interrupted
        try:
            with naming(self.dest):
                writer.write_table(table, row_group_size=None)
        except BaseException:
            self.broken = True
            raise

    @property
    def in_flight(self) -> dict[str, int]:
        """The rows and Arrow bytes of the groups handed to the writer thread."""
        return {
            "rows": sum(rows for _, rows, _ in self.writing),
            "bytes": sum(size for _, _, size in self.writing),
        }

    def _wait(self, rows: int = 0, size: int = 0, *, every: bool = False) -> None:
        """Take the groups whose write ended off the queue, oldest first, and wait for
        more until ``rows`` more rows and ``size`` more bytes fit beside the rest
        (until none is left, with ``every``); raise the error of a write that ended."""
        while self.writing:
            future = self.writing[0][0]
            in_flight = self.in_flight
            room = (
                in_flight["rows"] + rows <= IN_FLIGHT_ROWS
                and in_flight["bytes"] + size <= IN_FLIGHT_BYTES
            )
            if room and not every and not future.done():
                return
            self._take_oldest()

    def _take_oldest(self) -> None:
        """Wait for the oldest group in flight and take it off the queue; raise its
        write's error (or a signal's exception that ended the wait: it stays queued)."""
        future = self.writing[0][0]
        try:
            future.result()
        finally:
            if future.done():
                self.writing.popleft()

    def _stop_thread(self) -> Optional[BaseException]:
        """Wait for the groups in flight and end the thread; return the first error a
        write raised. A signal's exception while waiting is raised."""
        failed = None
        while self.writing:
            future = self.writing[0][0]
            try:
                self._take_oldest()
            except BaseException as exc:
                if not future.done() or future.exception() is not exc:
                    raise  # Ctrl-C, SIGTERM while waiting: not the write's error
                if failed is None:
                    failed = exc
        if self.thread is not None:
            self.thread.shutdown(wait=True)
            self.thread = None
        return failed

    def _widen(self, wider: pa.Schema) -> None:
        import pyarrow.parquet as pq

        assert self.path is not None and self.schema is not None
        self._wait(every=True)
        self.pending = [conform_batch(batch, wider) for batch in self.pending]
        old = self.old = self.path + ".old.tmp"  # abandon() removes it too
        with naming(self.dest):
            self.writer.close()
            self.writer = None
            try:  # the rename inside: an interrupt right after it still removes ``old``
                os.replace(self.path, old)
                self.writer = parquet_writer(self.path, wider)
                os.chmod(self.path, stat.S_IMODE(os.stat(old).st_mode))
                written = pq.ParquetFile(pa.OSFile(os.fsencode(old)))  # bytes: any name
                try:
                    for group in range(written.num_row_groups):
                        table = conform_table(written.read_row_group(group), wider)
                        self.writer.write_table(table, row_group_size=None)
                finally:
                    written.close(force=True)  # and the file it was given
            finally:
                remove_temp(old)  # if the rename failed, the error is on its way
                self.old = None
        self.schema = wider

    def finish(self) -> int:
        """Write what is left, close the file and put it in place; return its size."""
        failed = self._stop_thread()
        if failed is not None:
            raise failed
        # The last group is written here: there is no more parsing for a thread
        # to overlap with (and a file of one group starts no thread at all).
        table = self._take_pending()
        if table is not None:
            self._write_group(self.writer, table)
        assert self.path is not None
        with naming(self.dest):
            self.writer.close()
            size = os.path.getsize(self.path)
        if self.output is not None:
            self.output.commit()
            return size
        output = self.output = Output(self.where, self.dest)
        output.open()
        with open(self.path, "rb") as spooled:
            # The copy's loop runs in a function of its own: see "Cleanup around
            # loops" in docs/architecture.md.
            shutil.copyfileobj(spooled, output, 1 << 20)
        output.commit()
        self._remove_spool()
        return size

    def _remove_spool(self) -> None:
        if self.spool is not None:
            self.spool.abandon()
            self.spool = None

    def abandon(self, *, interrupted: bool = False) -> Optional[BaseException]:
        """Stop, leaving nothing behind; return the error of a group write handed over
        before whatever made us stop (it came first: the caller reports it). The
        groups queued are written (and dropped) first, so which error is reported
        does not hang on the writer's pace; when ``interrupted`` (Ctrl-C, SIGTERM)
        only the group being written is waited for."""
        failed = None
        try:
            self.stopping = interrupted
            failed = self._stop_thread()
            if self.writer is not None:
                try:
                    self.writer.close()
                except Exception:
                    pass  # already failing: the first error is the one reported
        finally:
            # Even when a second signal interrupts the above.
            if self.output is not None:
                self.output.abandon()
            else:
                release_reader(self.where)  # never opened: a pipe's reader may be waiting
            if self.old is not None:
                remove_temp(self.old)  # an interrupt in _widen after its rename
            self._remove_spool()
        return failed


def write_parquet(
    src: str,
    dest: str,
    where: Destination,
    limits: FileLimits,
    progress: Optional[Progress],
    prompt_kind: str = "auto",
) -> FileCounts:
    """Normalise the rollout JSONL file ``src`` into the zstd Parquet file ``dest``.

    Row groups of about ``ROW_GROUP_ROWS`` rows are written as they fill, so
    memory does not grow with the file (``ParquetSink``: a batch that widens
    the schema rewrites the groups written so far). ``where`` is where
    ``dest`` really goes (``agent_rollout._files.destination``); the output is
    an ``agent_rollout._files.Output``, as for JSONL: a regular file is
    written beside itself and renamed into place only when every row passed,
    so on any error (Ctrl-C, SIGTERM and SIGHUP included) it is left as it
    was and no temporary file remains; a device, named pipe or one of our
    descriptors gets the finished file.
    """
    prompt_kind = check_prompt_kind(prompt_kind)
    sink = ParquetSink(where, dest)
    try:
        # The twin's batches are row groups already (the Rust engine's are chunks).
        counts = file_batches(
            src, limits, prompt_kind, sink.add, progress, None, ROW_GROUP_ROWS, ROW_GROUP_BYTES
        )
        if sink.schema is None:  # pragma: no cover - file_batches gives a batch or raises
            raise RolloutValueError(f"{src}: no rows")
        bytes_out = sink.finish()
    except BaseException as exc:
        earlier = sink.abandon(interrupted=not isinstance(exc, Exception))
        if earlier is not None and isinstance(exc, Exception):
            # A row group failed to write before the rows that failed after it were read.
            raise earlier from None
        raise
    return FileCounts(
        counts.rows,
        counts.lines,
        counts.blank_lines,
        counts.dropped_keys,
        counts.bytes_in,
        bytes_out,
    )
