"""Arrow on either engine: record batches from rows (``row_batches``) and from a
JSONL file (``file_batches``), the same on both engines.

The Rust engine lays out the Arrow buffers itself (``_native.rows_to_arrow``,
``_native.read_jsonl_arrow``); they are wrapped here without a copy
(``buffer_of``, ``array_of``, ``batch_from_buffers``). The twin builds its
batches with ``agent_rollout.arrow.build.TableBuilder``.

Needs pyarrow: only the ``agent_rollout.arrow`` modules import this one. They
are imported inside the functions here, so that this module can be imported
first too (``agent_rollout.arrow`` imports this one while it loads).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, cast

import pyarrow as pa

from agent_rollout import _engine, _jsonl, _rows
from agent_rollout._engine.jsonl import file_counts, file_limits, native_file_error
from agent_rollout._errors import row_error
from agent_rollout._files import Opened, source_name
from agent_rollout._jsonl import BadRows, FileCounts, FileLimits, Progress, Tally
from agent_rollout._limits import (
    MAX_MESSAGE_DEPTH,
    MAX_MESSAGE_FIELDS,
    MAX_TYPED_DEPTH,
    int_digits_limit,
)

KIND_CODES = {"auto": 0, "text": 1, "messages": 2}
"""A prompt kind as the Rust engine takes it."""

_EMPTY = pa.py_buffer(b"")

_FIXED_WIDTH = {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64()}


def shape() -> tuple[int, int]:
    """The bounds of the Arrow shape, as the Rust engine takes them (``max_fields``,
    ``typed_depth``): read at each call, as the twin reads them."""
    return MAX_MESSAGE_FIELDS, MAX_TYPED_DEPTH


# ---- the Rust engine's buffers, wrapped --------------------------------------------------


def buffer_of(held: Any) -> pa.Buffer:
    """A ``_native.Buffer`` as a pyarrow buffer over the same memory (not copied; the
    pyarrow buffer keeps ``held`` alive, and nothing writes to it)."""
    size = held.size
    return pa.foreign_buffer(held.address, size, held) if size else _EMPTY


def array_of(column: Any) -> pa.Array:
    """The array a ``_native.Column`` describes (its buffers wrapped, not copied)."""
    from agent_rollout.arrow.schema import JSON_TYPE, STRING

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
    from agent_rollout.arrow.schema import schema_for

    prompt = array_of(parts.prompt)
    answer = array_of(parts.answer)
    return pa.RecordBatch.from_arrays([prompt, answer], schema=schema_for(prompt.type))


# ---- rows in ----------------------------------------------------------------------------


def row_batches(rows: Any, backend: str, max_rows: int, prompt_kind: str) -> list[pa.RecordBatch]:
    """Rollout rows checked and built into record batches (not yet of one schema:
    ``agent_rollout.arrow.build.unify`` gives them one). ``backend``, ``max_rows``
    and ``prompt_kind`` are checked already."""
    if _engine.implementation() == "rust":
        return _native_row_batches(rows, backend, max_rows, prompt_kind)
    from agent_rollout.arrow.build import TableBuilder

    normalised = _engine.normalise_rollout_rows(rows, backend, max_rows=max_rows)
    builder = TableBuilder(prompt_kind)
    for index, row in enumerate(normalised):
        builder.add(row, index)
    builder.flush()
    return builder.batches


def _native_row_batches(
    rows: Any, backend: str, max_rows: int, prompt_kind: str
) -> list[pa.RecordBatch]:
    from agent_rollout.arrow.build import unstorable_error
    from agent_rollout.arrow.schema import BATCH_BYTES, BATCH_ROWS

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
                found = unstorable_error(normalised[index:], range(index, len(normalised)))
                if found is not None:
                    raise found from None
                if code_name == "int_too_long":
                    fact = str(digits)  # the limit changed since (a signal handler's doing)
            raise row_error(code_name, index, segments, fact) from None
    return [batch_from_buffers(part) for part in parts]


# ---- files in ---------------------------------------------------------------------------


def file_batches(
    src: str,
    limits: FileLimits,
    prompt_kind: str,
    on_batch: Callable[[pa.RecordBatch], object],
    progress: Optional[Progress],
    source: Optional[str] = None,
    batch_rows: Optional[int] = None,
    batch_bytes: Optional[int] = None,
    bad: Optional[BadRows] = None,
    report: bool = False,
) -> FileCounts:
    """Stream a rollout JSONL file as record batches, in order; return the run's counts.

    Each batch is typed from its own rows: ``unify`` (or ``merge_schemas`` and
    ``conform_batch``) gives them one schema. Errors name ``source`` (default:
    ``src``). ``bytes_out`` is 0: the caller knows what it wrote. The Rust engine
    hands over a batch per chunk of input; the twin closes a batch at ``batch_rows``
    rows or ``batch_bytes`` of text (default ``BATCH_ROWS``, and 256 MiB).

    Without ``bad`` the first bad row is raised. With it (``_jsonl.BadRows``), a
    bad row goes there and the read goes on, as ``_jsonl.row_batches`` does: a row
    whose prompt is not of the table's kind is a bad row too, a row's index is its
    place in the file, the batches hold the good rows and ``rows`` counts them; a
    fault of the input as a whole is still raised, after the bad rows before it
    went to ``bad``, and a file of bad rows only is no ``file_no_rows`` error. With
    ``report`` as well, no batch is handed over from the first bad row on (the
    caller keeps none; the batches may end a block or a chunk later).
    """
    source = source_name(src) if source is None else source
    if _engine.implementation() == "rust":
        return _native_file_batches(src, limits, prompt_kind, on_batch, progress, source, bad,
                                    report)  # fmt: skip
    opened = _jsonl.open_jsonl(src)
    tally = Tally()
    refused = BadRows(0 if bad is None else bad.keep)
    try:
        # The loops are in a function of their own: see "Cleanup around loops" in
        # docs/architecture.md.
        _batches_of(opened, limits, tally, source, prompt_kind, on_batch, progress, batch_rows,
                    batch_bytes, bad, refused, report)  # fmt: skip
    finally:
        opened.stream.close()
        if bad is not None and refused.count:
            # In line order, among the rows the line checks and row rules refused.
            bad.count += refused.count
            merged = sorted([*bad.errors, *refused.errors], key=_line)
            bad.errors[:] = merged[: bad.keep]
    return FileCounts(
        tally.rows - refused.count, tally.lines, tally.blank_lines, tally.dropped_keys,
        tally.bytes_in, 0,
    )  # fmt: skip


def _line(error: ValueError) -> int:
    """The line of a bad row's error (a ``RolloutRowError`` or ``RolloutFileError``)."""
    line: int = getattr(error, "line", None) or 0
    return line


def _native_file_batches(
    src: str,
    limits: FileLimits,
    prompt_kind: str,
    on_batch: Callable[[pa.RecordBatch], object],
    progress: Optional[Progress],
    source: str,
    bad: Optional[BadRows],
    report: bool,
) -> FileCounts:
    native = _engine.native

    def collect(count: int, kept: Any) -> None:
        # The bad rows the engine counted and kept (a RolloutRowError or RolloutFileError each).
        assert bad is not None
        errors = [cast(ValueError, native_file_error(exc, source, None, limits)) for exc in kept]
        bad.errors.extend(errors[: bad.keep - len(bad.errors)])
        bad.count += count

    try:
        stats = native.read_jsonl_arrow(
            src,
            file_limits(limits),
            KIND_CODES[prompt_kind],
            *shape(),
            lambda parts: on_batch(batch_from_buffers(parts)),
            progress,
            "stop" if bad is None else "report" if report else "skip",
            0 if bad is None else bad.keep,
        )
    except native.NativeRowError as exc:
        carried = getattr(exc, "bad_rows", None)
        if carried is not None and bad is not None:
            collect(*carried)
        raise native_file_error(exc, source, None, limits) from None
    if bad is not None and stats.bad_rows:
        collect(stats.bad_rows, stats.bad)
    return file_counts(stats)


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
    bad: Optional[BadRows],
    refused: BadRows,
    report: bool,
) -> None:
    """``file_batches`` on the twin, from an input already open. With ``bad``, the
    rows whose prompt is not of the table's kind go to ``refused`` (the rows the
    line checks and row rules refuse go to ``bad``, and their count makes the
    indices of the rows after them: the two are merged at the end)."""
    from agent_rollout.arrow.build import TableBuilder

    builder = TableBuilder(prompt_kind, batch_rows, batch_bytes)
    kinds = builder.kinds
    batches = _jsonl.row_batches(opened, limits, tally, source, progress, partial=True, bad=bad)
    for batch in batches:
        with _rows.GcPause():
            rows = zip(batch, tally.batch_indices, tally.batch_lines, strict=True)
            for row, index, line in rows:
                if bad is not None and not kinds.fits(type(row["prompt"]) is str):
                    refused.add(kinds.refused(index, line, source))
                    continue
                builder.add(row, index, line=line, source=source)
        _hand_over(builder, on_batch, report and bool(refused.count or (bad and bad.count)))
    builder.flush()
    _hand_over(builder, on_batch, report and bool(refused.count or (bad and bad.count)))


def _hand_over(builder: Any, on_batch: Callable[[pa.RecordBatch], object], drop: bool) -> None:
    """The batches ``builder`` closed, to ``on_batch`` in order (dropped, with ``drop``)."""
    while builder.batches:
        batch = builder.batches.pop(0)
        if not drop:
            on_batch(batch)


__all__ = [
    "KIND_CODES",
    "array_of",
    "batch_from_buffers",
    "buffer_of",
    "file_batches",
    "row_batches",
    "shape",
]
