"""What a Parquet rollout file holds (``agent-rollout stats``): ``parquet_stats``.

Reads the ``prompt`` and ``answer`` columns a record batch at a time (memory
does not grow with the file) and counts them as ``_stats`` counts JSONL rows.
A batch of the shapes this package writes (``prompt`` a string column, or a
list of message structs whose ``role`` and ``content`` are strings and whose
other fields are strings, ints or bools; ``answer`` a string column) whose
rows all pass the row rules is counted with ``pyarrow.compute``; any other
batch goes row by row through the row rules (``_rows``), its JSON text read
back as ``arrow_to_rows`` reads it, a bad row counted and the read going on.
Every column besides ``prompt`` and
``answer`` is a key the row rules drop, in every row.

Parquet is read by seeking (its footer, then each column chunk), so the file
must be a regular file: a named pipe, a socket or a device is refused, by name,
before it is opened (opening a pipe would wait for a writer).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

from agent_rollout import _rows
from agent_rollout._errors import RolloutRowError, file_error, row_error, shown_path
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._jsonl import BadRows, FileLimits, Progress
from agent_rollout._limits import BAD_ROWS_KEPT, MAX_MESSAGE_DEPTH
from agent_rollout._stats import Counter, Lengths, RolloutStats
from agent_rollout.arrow.read import iter_rows

_BATCH_ROWS = 65536

_NOT_SEEKABLE = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _regular_size(path: str) -> int:
    """The size of the regular file ``path``; the ``OSError`` naming it otherwise (missing,
    a folder, or a file that cannot be read by seeking)."""
    mode = os.stat(path)  # missing, no permission: the OSError names the path
    if stat.S_ISDIR(mode.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
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


def _add_lengths(lengths: Lengths, values: pa.Array) -> None:
    """Add every length of ``values`` (ints, no nulls) to ``lengths``."""
    if len(values) == 0:
        return
    least, most = pc.min_max(values).values()
    least, most = least.as_py(), most.as_py()
    # A length's bucket is its bit length: how many of 1, 2, 4, ... it reaches.
    bucket = pc.less(values, 0).cast(pa.int32())  # zeros: no length is negative
    for bits in range(most.bit_length()):
        bucket = pc.add(bucket, pc.greater_equal(values, 1 << bits).cast(pa.int32()))
    for entry in pc.value_counts(bucket).to_pylist():
        lengths.buckets[entry["values"]] += entry["counts"]
    lengths.min = least if lengths.count == 0 else min(lengths.min, least)
    lengths.max = max(lengths.max, most)
    lengths.count += len(values)
    lengths.total += pc.sum(values).as_py()


def _message_chars(prompts: pa.Array, messages: pa.Array) -> pa.Array:
    """Each prompt's length: the characters of its messages' (str) ``content``."""
    if messages.type.get_field_index("content") < 0:
        return pa.array([0] * len(prompts), pa.int64())
    lengths = pc.fill_null(pc.utf8_length(messages.field("content")), 0).cast(pa.int64())
    rows = pa.table({"row": pc.list_parent_indices(prompts), "n": lengths})
    return rows.group_by("row").aggregate([("n", "sum")]).column("n_sum").combine_chunks()


def _fast_batch(
    kind: str, prompts: pa.Array, answers: Optional[pa.Array], stats: RolloutStats
) -> bool:
    """Count a batch with ``pyarrow.compute`` if every row passes the row rules; False
    (nothing counted) when one may not."""
    if prompts.null_count or (answers is not None and not _answers_plain(answers)):
        return False
    if kind == "text":
        chars = pc.utf8_length(prompts).cast(pa.int64())
        if pc.min(chars).as_py() == 0:
            return False
        stats.text_prompts += len(prompts)
    else:
        counts = pc.list_value_length(prompts)
        if pc.min(counts).as_py() == 0:
            return False
        messages = prompts.flatten()
        roles = messages.field("role")
        if messages.null_count or roles.null_count or pc.min(pc.utf8_length(roles)).as_py() == 0:
            return False
        chars = _message_chars(prompts, messages)
        for entry in pc.value_counts(counts).to_pylist():
            count = int(entry["values"])
            stats.messages[count] = stats.messages.get(count, 0) + entry["counts"]
        stats.message_prompts += len(prompts)
    _add_lengths(stats.prompt_chars, chars)
    _add_answers(answers, stats)
    return True


def _answers_plain(answers: pa.Array) -> bool:
    return _is_string(answers.type) or pa.types.is_null(answers.type)


def _add_answers(answers: Optional[pa.Array], stats: RolloutStats) -> None:
    if answers is None or pa.types.is_null(answers.type):
        return
    kept = answers.filter(pc.fill_null(pc.greater(pc.utf8_length(answers), 0), False))
    stats.answers += len(kept)
    _add_lengths(stats.answer_chars, pc.utf8_length(kept).cast(pa.int64()))


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


def parquet_stats(
    path: str, limits: FileLimits, max_names: int, progress: Optional[Progress] = None
) -> RolloutStats:
    """What the Parquet rollout file ``path`` holds (``limits.max_rows`` rows at most)."""
    import pyarrow.parquet as pq

    source = path
    size = _regular_size(path)
    try:
        parquet = pq.ParquetFile(path)
    except pa.ArrowInvalid as exc:
        raise RolloutValueError(f"{shown_path(source)}: not a Parquet file ({exc})") from None
    schema = parquet.schema_arrow
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
    columns = ["prompt"] + (["answer"] if "answer" in names else [])
    kind = _fast_prompt(schema.field("prompt").type)
    stats = RolloutStats()
    counter = Counter(stats, max_names)
    bad = BadRows(BAD_ROWS_KEPT)
    rows = 0
    total = parquet.metadata.num_rows
    if total > limits.max_rows:
        raise file_error("file_too_many_rows", source, limits.max_rows)
    for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
        prompts = batch.column(0)
        answers = batch.column(1) if len(columns) > 1 else None
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
