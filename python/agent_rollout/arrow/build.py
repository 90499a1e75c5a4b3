"""The twin's builder: Arrow arrays from values, ``TableBuilder``, batches converted to
a wider schema (``conform``, ``conform_table``, ``unify``), values Arrow cannot store."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any, Optional

import pyarrow as pa

from agent_rollout import _json
from agent_rollout._errors import RolloutRowError, row_error
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import (
    MAX_MESSAGE_FIELDS,
    int_digits_limit,
)
from agent_rollout.arrow.read import BadJson, pylist
from agent_rollout.arrow.schema import (
    BATCH_BYTES,
    BATCH_ROWS,
    INT64_MAX,
    INT64_MIN,
    JSON_TYPE,
    NULL,
    STRING,
    TEXT_SCHEMA,
    Ty,
    absorb,
    field_names,
    holds_json,
    join_types,
    merge_schemas,
    schema_for,
    to_arrow_type,
)


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
            return messages_as_json(pylist(array))
        return build_array(pylist(array), JSON_TYPE)
    if pa.types.is_list(array.type) and pa.types.is_list(target):
        child = conform(array.values, target.value_type, messages=messages)
        return pa.ListArray.from_arrays(array.offsets, child, type=target, mask=_mask(array))
    if pa.types.is_struct(array.type) and pa.types.is_struct(target):
        have, want = field_names(array.type), field_names(target)
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
        messages = pylist(array)
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


def build_array(values: list, arrow_type: pa.DataType) -> pa.Array:
    """An array of ``arrow_type`` (a join of the values' types) holding ``values``."""
    if arrow_type == NULL:
        return pa.nulls(len(values))
    if arrow_type == JSON_TYPE:
        texts = [None if value is None else _json.dumps(value) for value in values]
        return JSON_TYPE.wrap_array(pa.array(texts, type=STRING))
    if not holds_json(arrow_type):
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
    """The struct array of a batch's messages (``rust/arrow/batch.rs``'s ``message_struct``),
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
        content = pa.array(contents, type=STRING)
    children = [pa.array(roles, type=STRING), content]
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
    return JSON_TYPE.wrap_array(pa.array([message_text(m) for m in messages], type=STRING))


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

    def fits(self, is_text: bool) -> bool:
        """Whether a row whose prompt is (or is not) a str goes into the table."""
        kind = self.kind
        return kind is None or (kind == "text") == is_text or (is_text and self.wrap)

    def refused(self, index: int, line: Optional[int], source: Optional[str]) -> RolloutRowError:
        """The error for row ``index``, whose prompt does not fit (``fits``)."""
        code = "prompt_not_text" if self.kind == "text" else "prompt_not_messages"
        return row_error(code, index, ("prompt",), self.why, line=line, source=source)

    def check(self, is_text: bool, index: int, line: Optional[int], source: Optional[str]) -> None:
        if self.kind is None:
            self.kind = "text" if is_text else "messages"
            self.why = f"set by row {index}"
        elif not self.fits(is_text):
            raise self.refused(index, line, source)


class TableBuilder:
    """Collects normalised rows into record batches, each typed from its own rows (the twin).

    ``unify`` gives the batches of one table their joined schema.
    """

    def __init__(
        self, prompt_kind: str, batch_rows: Optional[int] = None, batch_bytes: Optional[int] = None
    ) -> None:
        self.kinds = KindCheck(prompt_kind)
        self.batch_rows = BATCH_ROWS if batch_rows is None else batch_rows
        self.batch_bytes = BATCH_BYTES if batch_bytes is None else min(batch_bytes, BATCH_BYTES)
        self.batches: list[pa.RecordBatch] = []
        self.rows: list[dict] = []  # the rows of the batch being built, for error reports
        self.indices: list[int] = []  # and their indices
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
        if not self.kinds.fits(is_text):
            self.flush()  # about to refuse this row: an earlier row Arrow cannot hold comes first
        self.kinds.check(is_text, index, line, source)
        self.rows.append(row)
        self.indices.append(index)
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
            found = unstorable_error(self.rows, self.indices)
            if found is None:
                raise
            raise found from None
        self.batches.append(batch)
        self.rows = []
        self.indices = []
        self._reset()
        return batch

    def _build(self) -> pa.RecordBatch:
        answer = pa.array(self.answers, type=STRING)
        if self.kinds.kind == "text":
            return pa.RecordBatch.from_arrays(
                [pa.array(self.prompts, type=STRING), answer], schema=TEXT_SCHEMA
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
        if not INT64_MIN <= value <= INT64_MAX:
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


def unstorable_error(rows: Iterable[Any], indices: Iterable[int]) -> Optional[Exception]:
    """The error for the first value of ``rows`` (whose indices are ``indices``) Arrow
    cannot hold."""
    for row, index in zip(rows, indices, strict=False):
        found = _unstorable(row, ())
        if found is not None:
            code, path = found
            fact = str(int_digits_limit()) if code == "int_too_long" else None
            return row_error(code, index, path, fact)
    return None


# ---- building from the Rust engine's buffers -----------------------------------------------
