"""The rollout schema and the type join: prompt kinds, ``TEXT_SCHEMA``/``MESSAGES_SCHEMA``,
value types (``absorb``, ``to_arrow_type``), ``join_types`` and ``merge_schemas``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, Optional, cast

import pyarrow as pa

from agent_rollout._exceptions import RolloutTypeError, RolloutValueError
from agent_rollout._limits import (
    MAX_MESSAGE_FIELDS,
    MAX_TYPED_DEPTH,
)

PromptKind = Literal["auto", "text", "messages"]
PROMPT_KINDS: tuple[str, ...] = ("auto", "text", "messages")

SCHEMA_VERSION = "2"
"""Written into every table's metadata. Reading back never depends on it: ``datasets`` and
other tools drop table metadata, so a column or message key means the same with or without."""
_META_KEY = b"agent_rollout.schema"
_META = {_META_KEY: SCHEMA_VERSION.encode()}

JSON_TYPE = pa.json_()
"""JSON text (the canonical ``arrow.json`` extension; ``datasets``' ``Json()``)."""

NULL = pa.null()
STRING = pa.string()
BOOL = pa.bool_()
INT64 = pa.int64()
FLOAT64 = pa.float64()
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

MESSAGE_TYPE = pa.struct([pa.field("role", STRING), pa.field("content", STRING)])
"""A message of only ``role`` and a str ``content``: what ``Dataset.from_list`` gives."""

TEXT_SCHEMA = pa.schema(
    [pa.field("prompt", STRING), pa.field("answer", STRING)],
    metadata=_META,
)
"""Rows whose prompts are str: TRL's standard format."""

MESSAGES_SCHEMA = pa.schema(
    [pa.field("prompt", pa.list_(MESSAGE_TYPE)), pa.field("answer", STRING)],
    metadata=_META,
)
"""Rows whose messages hold only ``role`` and ``content``: TRL's conversational format.
Messages with other keys get wider message structs (``schema_for``)."""

BATCH_ROWS = 65536
"""Rows per record batch the twin builds in memory (for Parquet, ``ROW_GROUP_ROWS``)."""

BATCH_BYTES = 1 << 28
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
    if prompt_type == STRING:
        return TEXT_SCHEMA
    if prompt_type == MESSAGES_SCHEMA.field("prompt").type:
        return MESSAGES_SCHEMA
    return pa.schema([pa.field("prompt", prompt_type), pa.field("answer", STRING)], metadata=_META)


# ---- the types: one join over the values ----------------------------------------------------


# The twin's types while a batch is typed (``rust/arrow/types.rs``'s ``Ty``): "null",
# "bool", "int", "float", "str", "json", ("list", item) or ("struct", names, types).
Ty = Any
_SCALARS = {str: "str", bool: "bool", float: "float"}
_ARROW_TYPES = {
    "null": NULL,
    "bool": BOOL,
    "int": INT64,
    "float": FLOAT64,
    "str": STRING,
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
        scalar = "int" if INT64_MIN <= value <= INT64_MAX else "json"
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


def field_names(struct: pa.DataType) -> list[str]:
    return [field.name for field in struct]


def join_types(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The least type holding values of both: null joins as the other, lists join
    their items, structs with the same keys in the same order join field by
    field; anything else is JSON text."""
    if a == b:
        return a
    if a == NULL:
        return b
    if b == NULL:
        return a
    if pa.types.is_list(a) and pa.types.is_list(b):
        return pa.list_(join_types(a.value_type, b.value_type))
    if pa.types.is_struct(a) and pa.types.is_struct(b) and field_names(a) == field_names(b):
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


def _nul_named(struct: pa.DataType) -> bool:
    return any("\x00" in field.name for field in struct)


def _without_nul_names(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with each struct that has a field name holding NUL as JSON text.

    The Arrow C data interface ends a name at its NUL: a table crossing it
    (``pyarrow.schema(struct)``, through which ``datasets`` casts every table it
    is given or reads) would lose the key and its values, quietly.
    """
    if pa.types.is_list(arrow_type):
        item = _without_nul_names(arrow_type.value_type)
        return arrow_type if item == arrow_type.value_type else pa.list_(item)
    if pa.types.is_struct(arrow_type):
        if _nul_named(arrow_type):
            return JSON_TYPE
        fields = [(field.name, _without_nul_names(field.type)) for field in arrow_type]
        if all(new == field.type for (_, new), field in zip(fields, arrow_type, strict=True)):
            return arrow_type
        return pa.struct(fields)
    return arrow_type


def merge_schemas(*schemas: pa.Schema) -> pa.Schema:
    """The one rollout schema that holds tables of every given schema (``conform_table``
    converts a table to it). Tables of str prompts and of message lists do not merge.
    A message with a key holding NUL is JSON text, and so is an object value with one
    (``_without_nul_names``)."""
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
    return schema_for(_without_nul_names(prompt))


# ---- converting arrays to a wider type ------------------------------------------------------


def holds_json(arrow_type: pa.DataType) -> bool:
    if arrow_type == JSON_TYPE:
        return True
    if pa.types.is_list(arrow_type):
        return holds_json(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return any(holds_json(field.type) for field in arrow_type)
    return False
