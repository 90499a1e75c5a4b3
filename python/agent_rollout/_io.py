"""The public file API: ``read_rollout_jsonl`` and ``normalise_rollout_file``.

This module alone decides how a file is handled: JSONL, gzip-compressed JSONL
or Parquet output, as the destination's name says (``_files.output_format``),
for ``normalise_rollout_file`` and for rows already normalised
(``write_rollout_rows``, what ``run`` writes). The engine in use does the work
(``agent_rollout._engine.jsonl``, ``agent_rollout.arrow.write_parquet``); both
share the destination (``agent_rollout._files.destination``), the signal
handling and every message.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Optional, Union, overload

from agent_rollout import _engine
from agent_rollout._engine.jsonl import read_rows, write_jsonl
from agent_rollout._errors import SKIP_INTO_SOURCE
from agent_rollout._exceptions import RolloutTypeError, RolloutValueError
from agent_rollout._files import (
    GZIP_LEVEL,
    Destination,
    destination,
    output_format,
    path_text,
    raise_if_terminated,
    replacing,
    signals_end_cleanly,
)
from agent_rollout._jsonl import FileCounts, FileLimits, OnBad, Progress, write_rows
from agent_rollout._limits import (
    MAX_ROLLOUT_BYTES,
    MAX_ROLLOUT_ROWS,
    check_max_bytes,
    check_max_rows,
)

if TYPE_CHECKING:
    import pyarrow as pa

PathArg = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class NormaliseReport:
    """What ``normalise_rollout_file`` did."""

    rows: int
    """Rows written (every non-blank input line is one row)."""
    lines: int
    """Input lines read, blank ones included."""
    blank_lines: int
    dropped_keys: int
    """Top-level row keys other than ``prompt``/``answer`` left out, summed over rows."""
    bytes_in: int
    """Input bytes read (after gzip decompression)."""
    bytes_out: int
    seconds: float
    engine: str
    bad_rows: int = 0
    """Bad rows left out (``on_bad="skip"``)."""
    skipped: tuple[ValueError, ...] = ()
    """The first of them (``BAD_ROWS_KEPT``), in line order, as ``on_bad="stop"``
    would have raised each (``RolloutRowError`` or ``RolloutFileError``)."""


@overload
def read_rollout_jsonl(
    path: PathArg,
    *,
    max_rows: int = ...,
    max_bytes: int = ...,
    as_arrow: Literal[False] = ...,
) -> tuple[dict, ...]: ...
@overload
def read_rollout_jsonl(
    path: PathArg,
    *,
    max_rows: int = ...,
    max_bytes: int = ...,
    as_arrow: Literal[True],
    prompt_kind: str = ...,
) -> pa.Table: ...
def read_rollout_jsonl(
    path: PathArg,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    max_bytes: int = MAX_ROLLOUT_BYTES,
    as_arrow: bool = False,
    prompt_kind: str = "auto",
) -> Any:
    """Read a rollout JSONL file (``.jsonl`` or gzip-compressed) into normalised rows.

    ``as_arrow=True`` returns a ``pyarrow.Table`` instead, built without Python
    row objects (``agent_rollout.arrow.read_rollout_table``; ``prompt_kind`` as there).

    Same rules and texts as :func:`normalise_rollout_rows`, with the file and
    line in front (``rollouts.jsonl:2: row 1: answer: must be a str or None,
    got 'int'``). Blank lines are skipped; reading stops at row
    ``max_rows + 1``, and after ``max_bytes`` bytes of input (counted after
    gzip decompression, blank lines included; default ``MAX_ROLLOUT_BYTES``,
    4 GiB). ``"-"`` reads standard input (descriptor 0; nothing more is read
    from it once the call returns).

    Raises:
        RolloutRowError: a row breaks a rule (``.index``, ``.path``, ``.line``).
        RolloutFileError: bad UTF-8, bad JSON (with the column), bad gzip, a line
            over ``MAX_LINE_BYTES``, no rows, more than ``max_rows`` rows or
            ``max_bytes`` bytes.
        OSError: the file cannot be read.
    """
    if as_arrow:
        from agent_rollout.arrow import read_rollout_table

        return read_rollout_table(
            path,
            max_rows=max_rows,
            max_bytes=max_bytes,
            prompt_kind=prompt_kind,  # type: ignore[arg-type]
        )
    text = path_text(path, "path")
    max_rows = check_max_rows(max_rows)
    max_bytes = check_max_bytes(max_bytes)
    return read_rows(text, FileLimits(max_rows, max_bytes))


def _checked(progress: Progress) -> Progress:
    """``progress``, then ``raise_if_terminated``: a SIGTERM or SIGHUP whose exception
    the caller's code dropped ends the run there (the Rust engine runs no other Python
    code while it reads, so nothing else could drop it)."""

    def report(rows: int, lines: int, bytes_in: int) -> None:
        progress(rows, lines, bytes_in)
        raise_if_terminated()

    return report


_ON_BAD = ("stop", "report", "skip")


def normalise_rollout_file(
    src: PathArg,
    dst: PathArg,
    *,
    max_rows: int = MAX_ROLLOUT_ROWS,
    max_bytes: int = MAX_ROLLOUT_BYTES,
    progress: Optional[Progress] = None,
    prompt_kind: str = "auto",
    on_bad: OnBad = "stop",
) -> NormaliseReport:
    """Normalise a rollout JSONL file into canonical JSONL, file to file.

    ``dst``'s name says the format (``agent_rollout._files.output_format``):
    ``.jsonl`` canonical JSONL, ``.jsonl.gz`` the same gzip-compressed,
    ``.parquet`` zstd Parquet of the rollout Arrow schema
    (``agent_rollout.arrow.write_parquet``; needs pyarrow; ``prompt_kind`` as
    in ``rows_to_arrow``), with the same guarantees. ``"-"`` (descriptor 1),
    and a name with no suffix that is no regular file (``/dev/stdout``,
    ``/dev/fd/N``, a named pipe, a device) get JSONL; any other name is a
    ``RolloutValueError`` naming the forms.

    The output has one row per line, ``prompt`` then ``answer``, compact
    separators, UTF-8 text (not ASCII-escaped) and floats that round-trip
    exactly. A regular ``dst`` (or a new one; a symlink, even a dangling one,
    is followed to its target) is written beside it and renamed over it only
    when every line passed: on any error, Ctrl-C, SIGTERM or SIGHUP, ``dst``
    is not created, or is left as it was, and no temporary file remains.
    ``"-"`` (descriptor 1), ``/dev/stdout``-like paths, devices and named
    pipes are written in place: streamed, nothing can be taken back. Input
    stops at ``max_rows`` rows and ``max_bytes`` bytes (after gzip
    decompression). ``progress(rows, lines, bytes_in)`` is called now and
    then, if given. The Rust engine runs without holding the interpreter, on
    all cores, in memory that does not grow with the file.

    ``on_bad`` says what a bad row (bad UTF-8, bad JSON, a broken row rule)
    does: ``"stop"`` raises the first; ``"report"`` reads on, counting every
    one, and raises ``RolloutBadRowsError`` (the first ``BAD_ROWS_KEPT`` errors
    in ``.errors``, their count in ``.bad_rows``) with nothing written (a
    stream gets no row from the first block holding a bad one on); ``"skip"``
    writes the good rows and returns the count and the first errors in the
    report (``bad_rows``, ``skipped``), raising ``RolloutBadRowsError`` only
    when no row is good. A fault of the file as a whole (a line over
    ``MAX_LINE_BYTES``, ``max_rows``, ``max_bytes``, bad gzip) still ends the
    read: after bad rows, as the ``RolloutBadRowsError``'s ``stopped``. An
    ``OSError`` (reading ``src``, writing ``dst``) is raised as it is, without
    the bad rows found before it: the machine cut the read short, not the
    data, and the run after the fix lists them all, with their full count. In
    Parquet output a row whose prompt is not of the table's kind (see
    ``prompt_kind``) is a bad row too.

    Raises the same errors as :func:`read_rollout_jsonl`, ``OSError`` when
    ``dst`` cannot be written (a symlink loop: ELOOP), and ``RolloutValueError``
    for ``on_bad="skip"`` when ``dst`` is ``src`` by any name, before anything is
    read (the skipped rows would be lost; in place otherwise: every row passes, or
    nothing is written).
    """
    src_text = path_text(src, "src")
    dst_text = path_text(dst, "dst")
    max_rows = check_max_rows(max_rows)
    max_bytes = check_max_bytes(max_bytes)
    if progress is not None and not callable(progress):
        raise RolloutTypeError(f"progress must be callable, got {type(progress).__name__}")
    if on_bad not in _ON_BAD:
        raise RolloutValueError(f"on_bad must be 'stop', 'report' or 'skip', got {on_bad!r}")
    engine = _engine.implementation()
    start = time.perf_counter()
    limits = FileLimits(max_rows, max_bytes)
    if progress is not None:
        progress = _checked(progress)
    with signals_end_cleanly():
        where = destination(dst_text)
        form = output_format(dst_text, where)
        if on_bad == "skip" and _same_file(src_text, where):
            raise RolloutValueError(SKIP_INTO_SOURCE.format(path=dst_text))
        counts: FileCounts
        # The file replaced, if any, is let go of off this thread (see `replacing`).
        with replacing(where):
            if form == "parquet":
                from agent_rollout.arrow import write_parquet

                counts = write_parquet(
                    src_text, dst_text, where, limits, progress, prompt_kind, on_bad
                )
            else:
                level = GZIP_LEVEL if form == "jsonl.gz" else None
                counts = write_jsonl(src_text, dst_text, where, limits, progress, on_bad, level)
    return NormaliseReport(
        rows=counts.rows,
        lines=counts.lines,
        blank_lines=counts.blank_lines,
        dropped_keys=counts.dropped_keys,
        bytes_in=counts.bytes_in,
        bytes_out=counts.bytes_out,
        seconds=time.perf_counter() - start,
        engine=engine,
        bad_rows=counts.bad_rows,
        skipped=counts.bad,
    )


def _same_file(src: str, where: Destination) -> bool:
    """Whether the output file is the input (by any name or link): renamed over it, the
    good rows would replace the file, and with ``on_bad="skip"`` the bad rows be lost."""
    if src == "-" or where.kind != "file":
        return False
    try:
        return os.path.samefile(src, where.path)
    except (OSError, ValueError):  # one of them missing, or a name the system refuses
        return False


def write_rollout_rows(
    rows: Sequence[dict],
    dest: str,
    on_row: Optional[Callable[[int], object]] = None,
    prompt_kind: str = "auto",
) -> int:
    """Write rows already normalised to ``dest``, in the format its name says
    (``output_format``: JSONL, gzip-compressed JSONL, or Parquet through
    ``agent_rollout.arrow``); return the bytes written. Written aside and
    renamed as every output is (``-`` and streams in place). ``on_row(count)``
    is called every 1024 rows of JSONL, if given; ``prompt_kind``, Parquet's prompt
    column (as in ``rows_to_arrow``: rows of both kinds need ``"messages"``)."""
    with signals_end_cleanly():
        where = destination(dest)
        form = output_format(dest, where)
        with replacing(where):
            if form == "parquet":
                from agent_rollout.arrow import write_rows_parquet

                return write_rows_parquet(rows, dest, where, prompt_kind)
            level = GZIP_LEVEL if form == "jsonl.gz" else None
            return write_rows(rows, dest, where, on_row, level)


__all__ = ["NormaliseReport", "normalise_rollout_file", "read_rollout_jsonl", "write_rollout_rows"]
