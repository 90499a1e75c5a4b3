"""JSONL files on either engine: ``read_rows`` and ``write_jsonl``.

The Rust engine's file functions (``_native.read_jsonl``, ``_native.normalise_file``)
or the twin's (``agent_rollout._jsonl``), with one result and one set of
exceptions: a native error comes back as the twin's ``RolloutRowError`` or
``RolloutFileError``, worded by ``agent_rollout._errors``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Optional, cast

from agent_rollout import _engine, _jsonl
from agent_rollout._errors import RolloutFileError, bad_rows_error, from_native_file
from agent_rollout._files import Destination, source_name
from agent_rollout._jsonl import FileCounts, FileLimits, OnBad, Progress
from agent_rollout._limits import (
    BAD_ROWS_KEPT,
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


def native_bad_rows(
    kept: Any, source: str, dest: Optional[str], limits: FileLimits
) -> tuple[ValueError, ...]:
    r"""The bad rows a Rust run went on past (its ``NativeRowError``\ s), as the twin
    raises them: each a ``RolloutRowError`` or ``RolloutFileError`` (never an OSError)."""
    return tuple(cast(ValueError, native_file_error(exc, source, dest, limits)) for exc in kept)


def native_run_error(exc: Any, source: str, dest: Optional[str], limits: FileLimits) -> Exception:
    """The ``NativeRowError`` that ended a Rust run going on past bad rows, as the twin
    raises it: a ``RolloutBadRowsError`` carrying the bad rows before it, when there
    were any and the fault is the input's (``BadRows::ended_by`` puts them on it)."""
    error = native_file_error(exc, source, dest, limits)
    carried = getattr(exc, "bad_rows", None)
    if carried is None or not isinstance(error, RolloutFileError):
        return error
    count, kept = carried
    bad = native_bad_rows(kept, source, dest, limits)
    return bad_rows_error(source, bad, count, None, error)


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
    on_bad: OnBad = "stop",
    gzip_level: Optional[int] = None,
) -> FileCounts:
    """Normalise the JSONL file ``src`` into canonical JSONL at ``where`` (``dest`` as
    the caller named it, for messages; gzip-compressed at ``gzip_level``, when
    given); the counts of the run.

    ``on_bad`` (``_jsonl.OnBad``): ``stop`` raises the first bad row; ``report``
    and ``skip`` go on past them, and raise ``RolloutBadRowsError`` carrying them
    (the first ``BAD_ROWS_KEPT``, and their count) when ``report`` found any,
    when every row was bad, or when a fault of the input as a whole ended the
    read after them; else ``skip`` writes the good rows, its counts saying what
    it left out.
    """
    if _engine.implementation() == "python":
        counts = _jsonl.normalise_to_jsonl(src, dest, where, limits, progress, on_bad, gzip_level)
    else:
        counts = _native_jsonl(src, dest, where, limits, progress, on_bad, gzip_level)
    if counts.bad_rows and (on_bad == "report" or counts.rows == 0):
        raise bad_rows_error(
            source_name(src), counts.bad, counts.bad_rows, counts.rows + counts.bad_rows
        )
    return counts


def _native_jsonl(
    src: str,
    dest: str,
    where: Destination,
    limits: FileLimits,
    progress: Optional[Progress],
    on_bad: OnBad,
    gzip_level: Optional[int],
) -> FileCounts:
    if where.kind == "fd" and where.fd in (1, 2):
        # The Rust engine writes to the descriptor: what Python buffered goes first.
        (sys.stdout if where.fd == 1 else sys.stderr).flush()
    native = _engine.native
    source = source_name(src)
    try:
        stats = native.normalise_file(
            src,
            where.path,
            where.kind,
            where.fd,
            file_limits(limits),
            progress,
            on_bad,
            BAD_ROWS_KEPT,
            gzip_level,
        )
    except native.NativeRowError as exc:
        raise native_run_error(exc, source, dest, limits) from None
    counts = file_counts(stats)
    if stats.bad_rows:
        bad = native_bad_rows(stats.bad, source, dest, limits)
        counts = dataclasses.replace(counts, bad_rows=stats.bad_rows, bad=bad)
    return counts


__all__ = [
    "file_counts",
    "file_limits",
    "native_bad_rows",
    "native_file_error",
    "native_run_error",
    "read_rows",
    "write_jsonl",
]
