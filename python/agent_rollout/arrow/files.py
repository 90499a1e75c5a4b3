"""JSONL in, Arrow batches out: ``file_batches`` and ``read_rollout_table``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import pyarrow as pa

from agent_rollout import _engine, _jsonl, _rows
from agent_rollout._errors import from_native_file
from agent_rollout._files import (
    Opened,
    path_text,
    source_name,
)
from agent_rollout._jsonl import FileCounts, FileLimits, Progress, Tally
from agent_rollout._limits import (
    MAX_ROLLOUT_BYTES,
    MAX_ROLLOUT_ROWS,
    check_max_bytes,
    check_max_rows,
)
from agent_rollout.arrow.buffers import KIND_CODES, batch_from_buffers, shape
from agent_rollout.arrow.build import TableBuilder, unify
from agent_rollout.arrow.schema import PromptKind, check_prompt_kind

# ---- files: JSONL in, Arrow batches out ------------------------------------------------------


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
                KIND_CODES[prompt_kind],
                *shape(),
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
