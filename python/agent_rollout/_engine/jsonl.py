"""JSONL files on either engine: ``read_rows`` and ``write_jsonl``.

The Rust engine's file functions (``_native.read_jsonl``, ``_native.normalise_file``)
or the twin's (``agent_rollout._jsonl``), with one result and one set of
exceptions: a native error comes back as the twin's ``RolloutRowError`` or
``RolloutFileError``, worded by ``agent_rollout._errors``.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from agent_rollout import _engine, _jsonl
from agent_rollout._errors import from_native_file
from agent_rollout._files import Destination, source_name
from agent_rollout._jsonl import FileCounts, FileLimits, Progress
from agent_rollout._limits import (
    MAX_JSON_DEPTH,
    MAX_LINE_BYTES,
    MAX_MESSAGE_DEPTH,
    int_digits_limit,
)


def file_limits(limits: FileLimits) -> Any:
    """The limits of one file run, as the Rust engine takes them (``_native.FileLimits``)."""
    return _engine.native.FileLimits(
        max_rows=limits.max_rows,
        max_bytes=limits.max_bytes,
        max_depth=MAX_MESSAGE_DEPTH,
        json_depth=MAX_JSON_DEPTH,
        max_int_digits=int_digits_limit(),
        max_line_bytes=MAX_LINE_BYTES,
    )


def file_counts(stats: Any) -> FileCounts:
    """The Rust engine's ``FileStats`` as ``FileCounts``."""
    return FileCounts(
        stats.rows,
        stats.lines,
        stats.blank_lines,
        stats.dropped_keys,
        stats.bytes_in,
        stats.bytes_out,
    )


def native_file_error(exc: Any, source: str, dest: Optional[str], limits: FileLimits) -> Exception:
    """A ``_native.NativeRowError`` from a file function, as the twin raises it."""
    return from_native_file(exc, source, dest, limits.max_rows, limits.max_bytes)


def read_rows(path: str, limits: FileLimits) -> tuple[dict, ...]:
    """Every row of the JSONL file ``path`` (``-``: standard input), normalised."""
    if _engine.implementation() == "python":
        return _jsonl.read_rows(path, limits)
    native = _engine.native
    try:
        rows: tuple[dict, ...] = native.read_jsonl(path, file_limits(limits))
    except native.NativeRowError as exc:
        raise native_file_error(exc, source_name(path), None, limits) from None
    return rows


def write_jsonl(
    src: str,
    dest: str,
    where: Destination,
    limits: FileLimits,
    progress: Optional[Progress],
) -> FileCounts:
    """Normalise the JSONL file ``src`` into canonical JSONL at ``where`` (``dest`` as
    the caller named it, for messages); the counts of the run."""
    if _engine.implementation() == "python":
        return _jsonl.normalise_to_jsonl(src, dest, where, limits, progress)
    if where.kind == "fd" and where.fd in (1, 2):
        # The Rust engine writes to the descriptor: what Python buffered goes first.
        (sys.stdout if where.fd == 1 else sys.stderr).flush()
    native = _engine.native
    try:
        stats = native.normalise_file(
            src, where.path, where.kind, where.fd, file_limits(limits), progress
        )
    except native.NativeRowError as exc:
        raise native_file_error(exc, source_name(src), dest, limits) from None
    return file_counts(stats)


__all__ = ["file_counts", "file_limits", "native_file_error", "read_rows", "write_jsonl"]
