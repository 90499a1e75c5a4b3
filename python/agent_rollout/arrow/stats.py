"""What a Parquet rollout file holds (``agent-rollout stats``): ``parquet_stats``.

Streams the file and counts its rows as ``_stats`` counts JSONL rows: only the
``prompt`` and ``answer`` columns are read (of a messages prompt, only each
message's ``role`` and ``content``), a batch at a time: ``_BATCH_ROWS`` rows, fewer
where they take more than ``_BATCH_BYTES`` as the footer counts them (``_plan``), a
column chunk at most ``_READ_BUFFER`` bytes at a time. So memory does not grow with
the file's rows or row groups, with two exceptions the footer cannot see: a single
value is decoded whole (pyarrow holds about three times its bytes while it reads
it), and a value a column chunk's dictionary repeats is decoded once per row, so a
batch of such rows can hold far more text than the footer counts. ``--max-bytes``
(``limits.max_bytes``) bounds the bytes of the columns read, uncompressed, as the
footer counts them, checked before any row is read; the footer itself, held
whole, is bounded by ``MAX_PARQUET_FOOTER_BYTES``.

A batch of the shapes this package writes (``prompt`` a string column, or a list
of message structs whose ``role`` and ``content`` are strings and whose other
fields are strings, ints or bools; ``answer`` a string column) whose rows all pass
the row rules and whose text is UTF-8 is counted with ``pyarrow.compute``
(lengths of ASCII text read off the offsets, no Python value handed to pyarrow:
see ``_int64s``); any other batch goes row by row through the row rules
(``_rows``), its JSON text read back as ``arrow_to_rows`` reads it, a bad row
counted and the read going on (text that is not UTF-8: a bad row naming its
column and byte, as a JSONL line's). Every column besides ``prompt`` and
``answer`` is a key the row rules drop, in every row; it is not read.

A file that cannot be read as Parquet, whatever is wrong with it (not Parquet,
empty, truncated, a broken footer or page, a page whose checksum does not
match, a folder, a footer over ``MAX_PARQUET_FOOTER_BYTES``), is one error:
``_unreadable``. Parquet is read by seeking (its footer, then each column chunk),
so the file must be a regular file: a named pipe, a socket or a device is
refused, by name, before it is opened (opening a pipe would wait for a writer).
"""

from __future__ import annotations

import array
import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

import pyarrow as pa

from agent_rollout import _rows
from agent_rollout._errors import (
    PARQUET_MESSAGES,
    RolloutFileError,
    RolloutRowError,
    file_error,
    plural,
    printable,
    row_error,
    shown_path,
)
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._jsonl import BadRows, FileLimits, Progress
from agent_rollout._limits import BAD_ROWS_KEPT, MAX_MESSAGE_DEPTH, MAX_PARQUET_FOOTER_BYTES
from agent_rollout._stats import Counter, Lengths, RolloutStats
from agent_rollout.arrow.read import iter_rows

_BATCH_ROWS = 8192
"""Rows a batch at most: few enough that a batch's text (2.5 MB of bench_stats.py's
two-message prompts) stays in the processor's cache; larger batches read slower and
keep more memory, smaller ones pay more calls a row (4,096 rows: the same time;
2,048: 25% more CPU)."""

_BATCH_BYTES = 2 << 20
"""Bytes a batch at most, of the columns read as the footer counts them (uncompressed):
a row group of longer rows is read in batches of fewer rows (``_plan``), a power of
two, one row at the least."""

_READ_BUFFER = 1 << 20
"""Bytes: a column chunk bigger than this is read through a buffer this big, never
whole, so memory does not grow with the file's row groups (``_plan``)."""

_NOT_SEEKABLE = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _unreadable(source: str, why: object) -> RolloutValueError:
    """The one error of a Parquet file that cannot be read, whatever is wrong with it
    (not Parquet at all, empty, truncated, a broken footer or page, a folder): the
    file's name, then ``PARQUET_MESSAGES["unreadable"]`` saying ``why`` on one line,
    printable."""
    reason = printable(" ".join(str(why).split()).rstrip(".")) or type(why).__name__
    message = PARQUET_MESSAGES["unreadable"].format(reason=reason)
    return RolloutValueError(f"{shown_path(source)}: {message}")


def _regular_size(path: str) -> int:
    """The size of the regular file ``path``. A missing or forbidden file is the
    ``OSError`` naming it; a folder is ``_unreadable``; a file that cannot be read by
    seeking is an ``OSError`` saying so."""
    mode = os.stat(path)  # missing, no permission: the OSError names the path
    if stat.S_ISDIR(mode.st_mode):
        raise _unreadable(path, "a folder, not a file")
    if not stat.S_ISREG(mode.st_mode):
        what = next((name for test, name in _NOT_SEEKABLE if test(mode.st_mode)), "a special file")
        raise OSError(
            errno.ESPIPE,
            f"cannot read Parquet from {what}: Parquet is read by seeking, "
            "which needs a regular file",
            path,
        )
    return mode.st_size


def _is_string(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def _is_list(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type))


def _plain(arrow_type: pa.DataType) -> bool:
    """A message field the row rules always pass (no floats, no JSON text, no nesting)."""
    return bool(
        _is_string(arrow_type)
        or pa.types.is_integer(arrow_type)
        or pa.types.is_boolean(arrow_type)
        or pa.types.is_null(arrow_type)
    ) and not isinstance(arrow_type, pa.JsonType)


def _fast_prompt(prompt_type: pa.DataType) -> Optional[str]:
    """``"text"`` or ``"messages"`` when batches of ``prompt_type`` may be counted with
    ``pyarrow.compute``; None when their rows go through the row rules."""
    if _is_string(prompt_type) and not isinstance(prompt_type, pa.JsonType):
        return "text"
    if not _is_list(prompt_type) or not pa.types.is_struct(prompt_type.value_type):
        return None
    message = prompt_type.value_type
    names = [message.field(i).name for i in range(message.num_fields)]
    if len(set(names)) != len(names) or "role" not in names:
        return None
    if not _is_string(message.field("role").type):
        return None
    if "content" in names and not _is_string(message.field("content").type):
        return None
    if not all(_plain(message.field(i).type) for i in range(message.num_fields)):
        return None
    return "messages"


def _int64s(values: list[int]) -> pa.Array:
    """``values`` as an int64 array, built from their bytes. A Python int handed to
    pyarrow (``pa.array``, ``pa.scalar``, an operand of a ``pyarrow.compute``
    function) makes it import pandas, to look for pandas' types: more time and
    memory than the whole count. The constants below are scalars of such arrays."""
    return pa.Array.from_buffers(
        pa.int64(), len(values), [None, pa.py_buffer(array.array("q", values))], null_count=0
    )


_POWERS = _int64s([1 << bits for bits in range(63)])
"""``_POWERS[k]``: 2**k, an int64 scalar."""

_ZERO = _int64s([0])[0]


def _call(function: str, *args: object) -> Any:
    """The ``pyarrow.compute`` function ``function`` on ``args`` (arrays and Arrow
    scalars, never a Python value: see ``_int64s``).

    ``pyarrow.compute`` is imported here, when a batch is first counted, not with
    this module: importing it makes a wrapper with a docstring for each of its
    functions (0.08 s of CPU, 5 MiB), which a file that turns out unreadable, or
    a caller that only imports this module, need not pay for."""
    import pyarrow.compute as pc

    return pc.call_function(function, list(args))


def _add_lengths(lengths: Lengths, values: pa.Array) -> None:
    """Add every length of ``values`` (int64, no nulls) to ``lengths``."""
    count = len(values)
    if count == 0:
        return
    least, most = (scalar.as_py() for scalar in _call("min_max", values).values())
    low, high = least.bit_length(), most.bit_length()
    # A length's bucket is its bit length: every length reaches 2**(low - 1), none
    # reaches 2**high; reaching[i]: how many reach 2**(low - 1 + i).
    reaching = [count]
    for bits in range(low, high):
        reaching.append(_call("sum", _call("greater_equal", values, _POWERS[bits])).as_py())
    reaching.append(0)
    for i, bucket in enumerate(range(low, high + 1)):
        lengths.buckets[bucket] += reaching[i] - reaching[i + 1]
    lengths.min = least if lengths.count == 0 else min(lengths.min, least)
    lengths.max = max(lengths.max, most)
    lengths.count += count
    lengths.total += _call("sum", values).as_py()


def _offsets(strings: pa.Array) -> pa.Array:
    """Where each string of ``strings`` starts in its data buffer, and where the last
    ends (``len + 1`` offsets; a view, nothing copied)."""
    offset_type = pa.int64() if pa.types.is_large_string(strings.type) else pa.int32()
    return pa.Array.from_buffers(
        offset_type,
        len(strings) + 1,
        [None, strings.buffers()[1]],
        null_count=0,
        offset=strings.offset,
    )


def _ascii(strings: pa.Array, offsets: pa.Array) -> bool:
    """Whether the bytes of ``strings`` (``offsets``: theirs) are all ASCII, one scan of
    their data buffer: then each character is one byte."""
    first, last = offsets[0].as_py(), offsets[len(offsets) - 1].as_py()
    if last == first:
        return True
    data = pa.Array.from_buffers(
        pa.uint8(), last - first, [None, strings.buffers()[2]], null_count=0, offset=first
    )
    return bool(_call("max", data).as_py() < 0x80)


def _utf8(strings: pa.Array) -> bool:
    """Whether ``strings`` are all UTF-8, as Arrow's text must be and another writer's
    file may not have it (``utf8_length`` would count such bytes as characters)."""
    try:
        strings.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _chars(strings: pa.Array) -> Optional[pa.Array]:
    """The length of each string in characters (int64; null for null): its bytes when
    they are all ASCII, which is read off the offsets, else ``utf8_length``; None when
    they are not all UTF-8 (``_utf8``): the batch then goes through the row rules."""
    if _ascii(strings, _offsets(strings)):
        return _call("binary_length", strings)
    if not _utf8(strings):
        return None
    return _call("utf8_length", strings)


def _message_chars(bounds: pa.Array, counts: pa.Array, messages: pa.Array) -> Optional[pa.Array]:
    """Each prompt's length: the characters of its messages' (str) ``content``.
    ``bounds``: the prompts' offsets into their list's values, ``messages`` those
    values from the first offset to the last; ``counts``: messages a prompt, at
    least one each.

    A prompt's messages are one after another, and so are their contents' bytes:
    when every content is a str and all are ASCII, a prompt's length is the
    bytes its contents span, read off two offsets. Otherwise from running sums
    of each content's length. None when a content is not UTF-8."""
    if messages.type.get_field_index("content") < 0:
        return _call("multiply", counts, _ZERO)
    content = messages.field("content")
    spans = _offsets(content)
    if content.null_count == 0 and _ascii(content, spans):
        if bounds[0].as_py() != 0:
            bounds = _call("subtract", bounds, bounds[0])
        return _call("pairwise_diff", _call("take", spans, bounds)).slice(1)
    chars = _chars(content)
    if chars is None:
        return None
    lengths = _call("coalesce", chars, _ZERO)
    last = _call("subtract", _call("cumulative_sum", counts), _POWERS[0])  # a prompt's last
    through = _call("take", _call("cumulative_sum", lengths), last)  # characters to its end
    return _call("coalesce", _call("pairwise_diff", through), through)


def _fast_batch(
    kind: str, prompts: pa.Array, answers: Optional[pa.Array], stats: RolloutStats
) -> bool:
    """Count a batch with ``pyarrow.compute`` if every row passes the row rules and its
    text is UTF-8; False (nothing counted) when one may not."""
    if prompts.null_count or (answers is not None and not _answers_plain(answers)):
        return False
    answer_chars = None
    if answers is not None and not pa.types.is_null(answers.type):
        answer_chars = _chars(answers)
        if answer_chars is None:
            return False
    if kind == "text":
        chars = _chars(prompts)
        if chars is None or _call("min", chars).as_py() == 0:
            return False
        stats.text_prompts += len(prompts)
    else:
        counts = _call("list_value_length", prompts)
        if _call("min", counts).as_py() == 0:
            return False
        # No prompt is null: the messages are those between the first and last offsets
        # (``flatten`` would import pyarrow.compute).
        bounds = prompts.offsets
        first, end = bounds[0].as_py(), bounds[len(bounds) - 1].as_py()
        messages = prompts.values.slice(first, end - first)
        roles = messages.field("role")
        if (
            messages.null_count
            or roles.null_count
            or _call("min", _call("binary_length", roles)).as_py() == 0
            or not (_ascii(roles, _offsets(roles)) or _utf8(roles))
        ):
            return False
        message_chars = _message_chars(bounds, counts, messages)
        if message_chars is None:
            return False
        chars = message_chars
        for entry in _call("value_counts", counts).to_pylist():
            count = int(entry["values"])
            stats.messages[count] = stats.messages.get(count, 0) + entry["counts"]
        stats.message_prompts += len(prompts)
    _add_lengths(stats.prompt_chars, chars)
    if answer_chars is not None:
        kept = _call("filter", answer_chars, _call("greater", answer_chars, _ZERO))  # null: dropped
        stats.answers += len(kept)
        _add_lengths(stats.answer_chars, kept)
    return True


def _answers_plain(answers: pa.Array) -> bool:
    return _is_string(answers.type) or pa.types.is_null(answers.type)


def _located(exc: RolloutRowError, source: str, index: int) -> RolloutRowError:
    """``exc`` of the batch's row ``exc.index`` as the file's row ``index``, named."""
    body = str(exc).split(": ", 1)[1]  # "row N: ..." (row_error's form)
    return RolloutRowError(
        f"{shown_path(source)}: row {index}: {body}", index=index, path=exc.path, code=exc.code
    )


_END = object()


def _slow_batch(table: pa.Table, counter: Counter, first: int, source: str, bad: BadRows) -> None:
    """Count a batch row by row through the row rules, going on past bad rows (its
    first row is the file's row ``first``)."""
    done = 0
    while done < table.num_rows:
        done = _slow_rows(table, done, counter, first, source, bad)


def _slow_rows(
    table: pa.Table, start: int, counter: Counter, first: int, source: str, bad: BadRows
) -> int:
    """``_slow_batch`` from the batch's row ``start`` on, up to its end or to a value
    of JSON text that does not parse (a bad row): the next row to count."""
    index = start
    rows = iter_rows(table.slice(start))
    while True:
        try:
            raw = next(rows, _END)
        except RolloutRowError as exc:  # JSON text that does not parse
            bad.add(_located(exc, source, first + start + exc.index))
            return start + exc.index + 1
        if raw is _END:
            return table.num_rows
        try:
            row = _rows.normalise_row(raw, MAX_MESSAGE_DEPTH)
        except _rows.RuleBroken as broken:
            broken.rev_path.reverse()
            error = row_error(broken.code, first + index, tuple(broken.rev_path), broken.fact)
            bad.add(_located(error, source, first + index))
        else:
            counter.add(row)
        index += 1


def _prompt_columns(parquet: Any, kind: Optional[str]) -> list[str]:
    """The Parquet columns to read for ``prompt``: a messages prompt counted with
    ``pyarrow.compute`` needs only its messages' ``role`` and ``content`` (its other
    fields are of types the row rules always pass); any other, the whole column."""
    if kind != "messages":
        return ["prompt"]
    schema = parquet.schema
    paths = [schema.column(i).path.split(".") for i in range(len(schema))]
    wanted = [
        ".".join(path)
        for path in paths
        if len(path) == 4 and path[0] == "prompt" and path[3] in ("role", "content")
    ]
    return wanted or ["prompt"]


@contextmanager
def _read_pool() -> Iterator[None]:
    """pyarrow's memory pool while a file is read: jemalloc where pyarrow has it, else
    the system allocator, unless ``ARROW_DEFAULT_MEMORY_POOL`` chooses; the pool before
    is put back after. mimalloc, pyarrow's usual default, keeps more of the batches'
    pages resident (1M rows: a peak 20 MiB higher, over 150 MiB) and hands them back
    to the system and faults them in again (twice the system time)."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        yield
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except pa.ArrowNotImplementedError:
        pool = pa.system_memory_pool()
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def _leaves(metadata: Any, columns: list[str]) -> list[int]:
    """The footer's leaf columns (their indices) that ``columns`` read."""
    schema = metadata.schema
    return [
        i
        for i in range(len(schema))
        if any(
            schema.column(i).path == name or schema.column(i).path.startswith(name + ".")
            for name in columns
        )
    ]


Runs = list[tuple[list[int], int]]
"""Row groups one after another read with one batch size: ``[(groups, rows), ...]``."""


def _plan(metadata: Any, leaves: list[int]) -> tuple[int, Runs, int]:
    """How the file is read, from its footer, one pass over its row groups: the
    uncompressed bytes of ``leaves`` (what ``--max-bytes`` bounds), the runs of row
    groups that share a batch size (``_BATCH_ROWS`` rows, fewer in a row group whose
    rows take more than ``_BATCH_BYTES`` that way) and the read buffer.

    The read buffer: the column chunks are read whole, one read each (0), when none
    is bigger than ``_READ_BUFFER``, else through a buffer that big. A chunk read
    whole lands in the read pool (``_read_pool``), once; the buffer, like the rest
    of the Parquet reader's own memory, comes from pyarrow's C++ default pool
    (mimalloc), whatever ``pyarrow.set_memory_pool`` says, and keeps more resident
    there: 1M rows in 27 row groups of 0.8 MB, a peak 10 MiB lower read whole, for
    no more time."""
    total = biggest = 0
    runs: Runs = []
    for group in range(metadata.num_row_groups):
        chunks = metadata.row_group(group)
        size = 0
        for i in leaves:
            chunk = chunks.column(i)
            size += max(chunk.total_uncompressed_size, 0)
            biggest = max(biggest, chunk.total_compressed_size)
        total += size
        rows = chunks.num_rows
        if rows <= 0:
            continue
        fits = min(max(_BATCH_BYTES * rows // max(size, 1), 1), _BATCH_ROWS)
        batch = 1 << (fits.bit_length() - 1)  # a power of two: fewer runs
        if runs and runs[-1][1] == batch:
            runs[-1][0].append(group)
        else:
            runs.append(([group], batch))
    return total, runs, _READ_BUFFER if biggest > _READ_BUFFER else 0


def _batches(
    file: Any, metadata: Any, columns: list[str], runs: Runs, buffer: int, source: str
) -> Iterator[pa.RecordBatch]:
    """The record batches of ``columns`` of the Parquet file ``file`` (``metadata``:
    its footer, read; ``runs`` and ``buffer``: ``_plan``'s), its pages checked against
    their checksums where it has them; a file that turns out unreadable on the way (a
    broken page) is ``_unreadable``.

    Decoded on this thread: pyarrow's threads (``use_threads``) decode a batch's
    top-level columns side by side, and nearly all the work is ``prompt``'s, so
    they save no time here, for 10-15 MiB more at the peak."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(
            file,
            metadata=metadata,
            buffer_size=buffer,
            pre_buffer=False,
            page_checksum_verification=True,
        )
    except (pa.ArrowException, OSError) as exc:
        raise _unreadable(source, exc) from None
    for groups, rows in runs:
        try:
            batches = parquet.iter_batches(
                batch_size=rows, row_groups=groups, columns=columns, use_threads=False
            )
        except (pa.ArrowException, OSError) as exc:
            raise _unreadable(source, exc) from None
        while True:
            try:
                batch = next(batches, None)
            except (pa.ArrowException, OSError) as exc:
                raise _unreadable(source, exc) from None
            if batch is None:
                break
            yield batch


def _footer_bytes(file: Any, size: int) -> int:
    """The bytes of the footer of the Parquet file ``file`` (``size`` bytes), as its
    last eight bytes say; 0 when they say no footer that fits in the file (pyarrow
    then says what is wrong)."""
    if size < 12:
        return 0
    file.seek(size - 8)
    tail = file.read(8)
    footer = int.from_bytes(tail[:4], "little")
    return footer if tail[4:] in (b"PAR1", b"PARE") and footer <= size - 12 else 0


def parquet_stats(
    path: str, limits: FileLimits, max_names: int, progress: Optional[Progress] = None
) -> RolloutStats:
    """What the Parquet rollout file ``path`` holds (``limits.max_rows`` rows at most,
    ``limits.max_bytes`` bytes of the columns read, uncompressed, as its footer counts
    them).

    Streams: the ``prompt`` and ``answer`` columns only (a messages prompt: only its
    ``role`` and ``content``), ``_BATCH_ROWS`` rows or ``_BATCH_BYTES`` at a time
    (``_batches``). A file that cannot be read as Parquet, or whose footer is over
    ``MAX_PARQUET_FOOTER_BYTES``, is ``_unreadable``."""
    import pyarrow.parquet as pq

    source = path
    size = _regular_size(path)
    # The file opened in the read pool: a column chunk read whole is allocated there.
    with _read_pool(), pa.OSFile(os.fsencode(path)) as file:  # bytes: any name
        try:
            footer = _footer_bytes(file, size)
        except OSError as exc:
            raise _unreadable(source, exc) from None
        if footer > MAX_PARQUET_FOOTER_BYTES:
            raise _unreadable(
                source,
                f"a footer of {footer:,} bytes, more than the {MAX_PARQUET_FOOTER_BYTES:,} "
                "read (MAX_PARQUET_FOOTER_BYTES): write it in fewer, larger row groups",
            )
        try:
            parquet = pq.ParquetFile(file)  # its footer: the reading is _batches'
            schema = parquet.schema_arrow
        except (pa.ArrowException, OSError) as exc:
            raise _unreadable(source, exc) from None
        return _count(file, parquet, schema, source, size, limits, max_names, progress)


def _count(
    file: Any,
    parquet: Any,
    schema: pa.Schema,
    source: str,
    size: int,
    limits: FileLimits,
    max_names: int,
    progress: Optional[Progress],
) -> RolloutStats:
    """``parquet_stats`` of a file opened and its schema read."""
    names = schema.names
    for name in ("prompt", "answer"):
        if names.count(name) > 1:
            raise RolloutValueError(
                f"{shown_path(source)}: {names.count(name)} columns named {name!r}; "
                "a rollout table needs one"
            )
    if "prompt" not in names:
        raise RolloutValueError(
            f"{shown_path(source)}: a rollout table needs a 'prompt' column; columns: {names}"
        )
    extra = [name for name in names if name not in ("prompt", "answer")]
    kind = _fast_prompt(schema.field("prompt").type)
    columns = _prompt_columns(parquet, kind) + (["answer"] if "answer" in names else [])
    stats = RolloutStats()
    counter = Counter(stats, max_names)
    bad = BadRows(BAD_ROWS_KEPT)
    rows = 0
    metadata = parquet.metadata
    total = metadata.num_rows
    if total > limits.max_rows:
        raise file_error("file_too_many_rows", source, limits.max_rows)
    read, runs, buffer = _plan(metadata, _leaves(metadata, columns))
    if read > limits.max_bytes:
        body = PARQUET_MESSAGES["file_too_large"].format(
            bytes=plural(limits.max_bytes, "byte"), max_bytes=limits.max_bytes
        )
        raise RolloutFileError(
            f"{shown_path(source)}: {body}", source=source, code="file_too_large"
        )
    for batch in _batches(file, metadata, columns, runs, buffer, source):
        prompts = batch.column("prompt")
        answers = batch.column("answer") if "answer" in names else None
        bad_before = bad.count
        if kind is None or not _fast_batch(kind, prompts, answers, stats):
            _slow_batch(pa.Table.from_batches([batch]), counter, rows, source, bad)
        good = batch.num_rows - (bad.count - bad_before)
        for name in extra:
            counter.add_name(name, good)
        rows += batch.num_rows
        if progress is not None:
            progress(rows, rows, size * rows // max(total, 1))
    if rows == 0:
        raise file_error("file_no_rows", source, limits.max_rows)
    counter.finish()
    stats.bad_rows, stats.bad = bad.count, tuple(bad.errors)
    stats.rows = rows - bad.count
    stats.lines = rows
    stats.dropped_keys = stats.rows * len(extra)
    stats.bytes_in = size
    return stats


__all__ = ["parquet_stats"]
