"""What a rollout file holds, on either engine: ``rollout_stats``.

A JSONL file (``.jsonl``, gzip, ``-``) is counted by the engine in use: the Rust
engine's ``_native.read_jsonl_stats`` (rust/stats.rs) or the twin's
``_stats.file_stats``, with one result (``_stats.RolloutStats``) and one set of
exceptions. A Parquet file (its name ends in ``.parquet``) is counted by
``arrow.stats`` (pyarrow), whichever engine is in use.
"""

from __future__ import annotations

from typing import Any, Optional

from agent_rollout import _engine, _stats
from agent_rollout._engine.jsonl import file_limits, native_bad_rows, native_run_error
from agent_rollout._files import source_name
from agent_rollout._jsonl import FileLimits, Progress
from agent_rollout._limits import BAD_ROWS_KEPT, MAX_STATS_KEY_NAMES
from agent_rollout._stats import Lengths, RolloutStats


def _lengths(native: tuple[list[int], int, int, int]) -> Lengths:
    buckets, total, least, most = native
    return Lengths(list(buckets), sum(buckets), total, least, most)


def _from_native(native: Any, bad: tuple[ValueError, ...]) -> RolloutStats:
    file = native.file
    return RolloutStats(
        rows=file.rows,
        lines=file.lines,
        blank_lines=file.blank_lines,
        dropped_keys=file.dropped_keys,
        bytes_in=file.bytes_in,
        text_prompts=native.text_prompts,
        message_prompts=native.message_prompts,
        answers=native.answers,
        messages=dict(native.messages),
        prompt_chars=_lengths(native.prompt_chars),
        answer_chars=_lengths(native.answer_chars),
        names=dict(native.names),
        other_names=native.other_names,
        bad_rows=file.bad_rows,
        bad=bad,
    )


def jsonl_stats(
    path: str,
    limits: FileLimits,
    max_names: int = MAX_STATS_KEY_NAMES,
    progress: Optional[Progress] = None,
) -> RolloutStats:
    """What the rollout JSONL file ``path`` (``-``: standard input) holds, going on
    past bad rows (``RolloutStats.bad_rows``, ``.bad``).

    A fault of the input as a whole raises what ``_engine.jsonl.read_rows`` raises,
    at the same line (a ``RolloutBadRowsError`` carrying the bad rows before it,
    when there were any)."""
    if _engine.implementation() == "python":
        return _stats.file_stats(path, limits, max_names, progress, BAD_ROWS_KEPT)
    native = _engine.native
    source = source_name(path)
    try:
        result = native.read_jsonl_stats(
            path, file_limits(limits), max_names, BAD_ROWS_KEPT, progress
        )
    except native.NativeRowError as exc:
        raise native_run_error(exc, source, None, limits) from None
    return _from_native(result, native_bad_rows(result.file.bad, source, None, limits))


def is_parquet(path: str) -> bool:
    """Whether ``rollout_stats`` reads ``path`` as Parquet (by its name)."""
    return path.lower().endswith(".parquet")


def rollout_stats(
    path: str,
    limits: FileLimits,
    max_names: int = MAX_STATS_KEY_NAMES,
    progress: Optional[Progress] = None,
) -> RolloutStats:
    """What the rollout file ``path`` holds: Parquet by its name, else JSONL."""
    if is_parquet(path):
        from agent_rollout.arrow.stats import parquet_stats

        return parquet_stats(path, limits, max_names, progress)
    return jsonl_stats(path, limits, max_names, progress)


__all__ = ["is_parquet", "jsonl_stats", "rollout_stats"]
