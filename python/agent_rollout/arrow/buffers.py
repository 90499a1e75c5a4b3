"""The Rust engine's Arrow buffers wrapped without a copy (``buffer_of``, ``array_of``,
``batch_from_buffers``); ``rows_to_arrow`` and ``to_dataset`` on either engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from agent_rollout import _engine
from agent_rollout._errors import row_error
from agent_rollout._exceptions import MissingPackageError
from agent_rollout._limits import (
    MAX_MESSAGE_DEPTH,
    MAX_MESSAGE_FIELDS,
    MAX_ROLLOUT_ROWS,
    MAX_TYPED_DEPTH,
    check_max_rows,
    int_digits_limit,
)
from agent_rollout.backends import validate_rollout_backend

if TYPE_CHECKING:
    import datasets
from agent_rollout.arrow.build import TableBuilder, unify, unstorable_error
from agent_rollout.arrow.schema import (
    BATCH_BYTES,
    BATCH_ROWS,
    BOOL,
    FLOAT64,
    INT64,
    JSON_TYPE,
    STRING,
    PromptKind,
    check_prompt_kind,
    schema_for,
)

_FIXED_WIDTH = {"bool": BOOL, "int64": INT64, "float64": FLOAT64}


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
        array = pa.Array.from_buffers(STRING, count, buffers, null_count=nulls)
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


KIND_CODES = {"auto": 0, "text": 1, "messages": 2}


def shape() -> tuple[int, int]:
    """The bounds of the Arrow shape, as the Rust engine takes them (``max_fields``,
    ``typed_depth``): read at each call, as the twin reads them."""
    return MAX_MESSAGE_FIELDS, MAX_TYPED_DEPTH


def _native_batches(
    rows: Any, backend: str, max_rows: int, prompt_kind: str
) -> list[pa.RecordBatch]:
    native = _engine.native
    code = KIND_CODES[prompt_kind]
    # First pass: rows already in normalised form are built straight from the
    # input; anything else (None) goes through the row rules first.
    digits = int_digits_limit()
    parts = native.rows_to_arrow(
        rows, code, BATCH_ROWS, BATCH_BYTES, max_rows, MAX_MESSAGE_DEPTH, digits, *shape(), True
    )
    if parts is None:
        normalised = _engine.normalise_rollout_rows(rows, backend, max_rows=max_rows)
        try:
            parts = native.rows_to_arrow(
                normalised,
                code,
                BATCH_ROWS,
                BATCH_BYTES,
                max_rows,
                MAX_MESSAGE_DEPTH,
                digits,
                *shape(),
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
