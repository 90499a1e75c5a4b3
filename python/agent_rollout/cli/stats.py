"""``agent-rollout stats FILE [--format text|json]``: what a rollout file holds.

Reads ``FILE`` (JSONL, ``.jsonl.gz``, ``-`` for standard input, or Parquet by
its name) once, streaming, and prints: rows, prompt kinds, answer coverage,
messages per prompt, the keys the row rules drop (by name), and the lengths
of prompts and answers in characters as histograms (unicode block bars; plain
ASCII when standard output cannot encode them). ``--format json`` prints one
JSON object instead, whose shape (``STATS_VERSION``) is documented in
docs/rows.md ("Looking at a file: stats").

The file's text (key names, its own name, bad rows' messages) is shown through
``printable``; text standard output cannot encode (``PYTHONIOENCODING=ascii``,
a C locale) is written as backslash escapes, as ``agent_rollout.cli.main``
sets it up for every command, so nothing a file holds can make the output fail.

Bad rows (UTF-8, JSON syntax, a row rule) are counted and the first
``BAD_ROWS_KEPT`` listed with ``file:line``; the other numbers are those of the
good rows. A fault of the input as a whole (a line over ``MAX_LINE_BYTES``, the
row cap, bad gzip) ends the read, as in ``normalise``, whose ``--max-rows`` default
it shares (``FILE_COMMAND_MAX_ROWS``).

Exit status: 0 done, 1 invalid input (bad rows, reported in full; a fault that
ended the read, the message naming file:line; a Parquet file that cannot be read,
whatever is wrong with it: ``FILE: not a readable Parquet file (...)``), 2 usage
or I/O error, 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional

from agent_rollout import _engine
from agent_rollout._engine.stats import is_parquet, rollout_stats
from agent_rollout._errors import (
    Terminated,
    bad_row_kinds,
    for_command_line,
    plural,
    printable,
    printable_json,
)
from agent_rollout._exceptions import MissingPackageError, RolloutValueError
from agent_rollout._extras import missing_text
from agent_rollout._jsonl import FileLimits
from agent_rollout._limits import MAX_STATS_KEY_NAMES
from agent_rollout._stats import Lengths, RolloutStats
from agent_rollout.cli._args import add_file_max_rows, add_max_bytes, file_name
from agent_rollout.cli._progress import Progress, end_on, input_position, input_size, say

__all__ = ["STATS_VERSION", "add_arguments", "render_text", "run", "stats_json"]

PROG = "agent-rollout stats"

STATS_VERSION = 1
"""The version of ``--format json``'s shape; it changes only when a key changes meaning
or goes away (new keys may appear)."""

BAR_WIDTH = 40
"""The longest bar of a histogram, in characters."""

NAMES_SHOWN = 10
"""Dropped key names the text output lists (``--format json`` lists all those kept)."""

_EIGHTHS = " ▏▎▍▌▋▊▉"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Show what a rollout file holds: rows, prompt kinds, answers, messages per prompt, "
        "the keys the row rules drop, and histograms of prompt and answer lengths. "
        "Reads JSONL (.jsonl, .jsonl.gz, '-' for standard input) or Parquet (.parquet), "
        "streaming: memory does not grow with the file."
    )
    parser.add_argument(
        "input",
        metavar="FILE",
        type=file_name,
        help="rollout file: JSONL, gzip JSONL or Parquet; '-' reads JSONL from standard input",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default): a report with histograms; json: one object for scripts",
    )
    add_file_max_rows(parser)
    add_max_bytes(parser, parquet=True)


# ---- the numbers ------------------------------------------------------------------------


def bucket_range(bucket: int) -> tuple[int, int]:
    """The lengths bucket ``bucket`` holds: those of that bit length."""
    if bucket == 0:
        return 0, 0
    return 1 << (bucket - 1), (1 << bucket) - 1


def median(counts: dict[int, int]) -> Optional[int]:
    """The lower median of values given as ``value -> how many``."""
    total = sum(counts.values())
    if total == 0:
        return None
    middle = (total - 1) // 2
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen > middle:
            return value
    return None  # pragma: no cover - the loop always returns


def _lengths_json(lengths: Lengths) -> dict[str, Any]:
    histogram = [
        {"from": bucket_range(b)[0], "to": bucket_range(b)[1], "rows": n}
        for b, n in enumerate(lengths.buckets)
        if n
    ]
    some = lengths.count > 0
    return {
        "count": lengths.count,
        "total": lengths.total,
        "min": lengths.min if some else None,
        "max": lengths.max if some else None,
        "mean": round(lengths.total / lengths.count, 1) if some else None,
        "histogram": histogram,
    }


def _names_by_count(stats: RolloutStats) -> list[tuple[str, int]]:
    return sorted(stats.names.items(), key=lambda item: (-item[1], item[0]))


def stats_json(stats: RolloutStats, source: str, file_format: str, engine: str) -> dict[str, Any]:
    """The ``--format json`` object (its shape is documented in docs/rows.md)."""
    counts = stats.messages
    return {
        "stats_version": STATS_VERSION,
        "file": source,
        "format": file_format,
        "engine": engine,
        "rows": stats.rows,
        "bad_rows": stats.bad_rows,
        "bad": [
            {"line": getattr(error, "line", None), "message": str(error)} for error in stats.bad
        ],
        "lines": stats.lines,
        "blank_lines": stats.blank_lines,
        "bytes": stats.bytes_in,
        "prompt_kinds": {"text": stats.text_prompts, "messages": stats.message_prompts},
        "answers": {"with": stats.answers, "without": stats.rows - stats.answers},
        "messages_per_prompt": {
            "min": min(counts) if counts else None,
            "median": median(counts),
            "max": max(counts) if counts else None,
            "counts": [{"messages": k, "rows": n} for k, n in sorted(counts.items())],
        },
        "dropped_keys": {
            "total": stats.dropped_keys,
            "names": [{"name": name, "rows": n} for name, n in _names_by_count(stats)],
            "other": stats.other_names,
        },
        "prompt_chars": _lengths_json(stats.prompt_chars),
        "answer_chars": _lengths_json(stats.answer_chars),
    }


# ---- the text report -----------------------------------------------------------------------


def can_draw(stream: Any) -> bool:
    """Whether ``stream`` can encode the block characters of the bars."""
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        "█▏".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def bar(count: int, most: int, unicode: bool) -> str:
    """A bar of ``count`` against ``most`` (``BAR_WIDTH`` characters), in eighths."""
    if most <= 0 or count <= 0:
        return ""
    eighths = max(1, round(count * BAR_WIDTH * 8 / most))
    if not unicode:
        return "#" * max(1, round(eighths / 8))
    whole, part = divmod(eighths, 8)
    return "█" * whole + (_EIGHTHS[part] if part else "")


def histogram(rows: list[tuple[str, int]], unicode: bool, indent: str = "  ") -> list[str]:
    """One line per ``(label, count)``: the label right-aligned, a bar, the count."""
    if not rows:
        return []
    most = max(count for _, count in rows)
    width = max(len(label) for label, _ in rows)
    return [
        f"{indent}{label:>{width}} | {bar(count, most, unicode):<{BAR_WIDTH}} {count:,}".rstrip()
        for label, count in rows
    ]


def _share(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.1f}%)" if whole else f"{part:,}"


def _length_rows(lengths: Lengths) -> list[tuple[str, int]]:
    used = [b for b, n in enumerate(lengths.buckets) if n]
    if not used:
        return []
    rows = []
    for b in range(used[0], used[-1] + 1):
        low, high = bucket_range(b)
        label = f"{low:,}" if low == high else f"{low:,}-{high:,}"
        rows.append((label, lengths.buckets[b]))
    return rows


def _message_rows(counts: dict[int, int]) -> list[tuple[str, int]]:
    """Each number of messages when there are few, else log-spaced buckets."""
    if len(counts) <= 12:
        return [(f"{k:,}", n) for k, n in sorted(counts.items())]
    buckets = Lengths()
    for k, n in counts.items():
        buckets.buckets[k.bit_length()] += n
    return _length_rows(buckets)


def _lengths_line(what: str, lengths: Lengths) -> str:
    if lengths.count == 0:
        return f"{what}: none"
    mean = lengths.total / lengths.count
    return f"{what} (characters): min {lengths.min:,}, mean {mean:,.1f}, max {lengths.max:,}"


def _bad_line(stats: RolloutStats) -> str:
    """``bad rows: 3 (invalid JSON: 2, prompt missing: 1); ...``: counted by kind, as
    ``normalise``'s summary counts them (``_errors.bad_row_kinds``)."""
    if not stats.bad_rows:
        return "bad rows: 0"
    listed = len(stats.bad)
    kinds = bad_row_kinds(tuple(stats.bad))
    shown = (
        f" ({kinds})" if listed == stats.bad_rows else f" (the first {listed:,} listed: {kinds})"
    )
    return f"bad rows: {stats.bad_rows:,}{shown}; the counts below are of the good rows"


def render_text(
    stats: RolloutStats, source: str, file_format: str, engine: str, unicode: bool
) -> str:
    """The text report (``source``: the file's name as shown, already ``printable``)."""
    rows = stats.rows
    size = plural(stats.bytes_in, "byte") if file_format != "parquet" else "Parquet"
    blank = f", {plural(stats.blank_lines, 'blank line')}" if stats.blank_lines else ""
    out = [
        f"{source}: {plural(rows, 'row')} ({size}{blank}), engine {engine}",
        _bad_line(stats),
        *(f"  {printable(for_command_line(str(error)))}" for error in stats.bad),
        f"prompts: text {_share(stats.text_prompts, rows)}, "
        f"messages {_share(stats.message_prompts, rows)}",
        f"answers: with {_share(stats.answers, rows)}, "
        f"without {_share(rows - stats.answers, rows)}",
    ]
    counts = stats.messages
    if counts:
        out.append(
            f"messages per prompt: min {min(counts):,}, median {median(counts):,}, "
            f"max {max(counts):,}"
        )
        out += histogram(_message_rows(counts), unicode)
    if stats.dropped_keys:
        named = _names_by_count(stats)
        shown = ", ".join(f"{printable(name)} {n:,}" for name, n in named[:NAMES_SHOWN])
        more = len(named) - NAMES_SHOWN
        rest = []
        if more > 0:
            rest.append(plural(more, "more name"))
        if stats.other_names:
            rest.append(f"{plural(stats.other_names, 'key')} of other names")
        tail = f" (and {', '.join(rest)})" if rest else ""
        out.append(f"dropped keys: {stats.dropped_keys:,}: {shown}{tail}")
    else:
        out.append("dropped keys: none")
    out.append(_lengths_line("prompt length", stats.prompt_chars))
    out += histogram(_length_rows(stats.prompt_chars), unicode)
    out.append(_lengths_line("answer length", stats.answer_chars))
    out += histogram(_length_rows(stats.answer_chars), unicode)
    return "\n".join(out) + "\n"


# ---- the command ---------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    source: str = args.input
    parquet = is_parquet(source)
    progress = Progress("stats", size=input_size(source), position=input_position(source))

    def on_progress(rows: int, lines: int, bytes_in: Optional[int] = None) -> None:
        del lines
        progress.update(rows, read=bytes_in)

    engine = _engine.implementation()
    try:
        limits = FileLimits(args.max_rows, args.max_bytes)
        stats = rollout_stats(source, limits, MAX_STATS_KEY_NAMES, on_progress)
    except MissingPackageError as exc:  # Parquet without pyarrow: what main would say
        progress.finish()
        say(f"{PROG}: {missing_text(exc) or exc}")
        return 2
    except RolloutValueError as exc:  # a bad file: its rows; Parquet: the file, its columns
        progress.finish()
        if getattr(exc, "code", None) == "file_no_rows":  # the library's words are a reader's
            where = getattr(exc, "source", source)
            say(f"{where}: no rows (the file is empty or blank): nothing to show")
            return 1
        for line in str(exc).splitlines():  # a RolloutBadRowsError lists them, one a line
            say(for_command_line(line))
        return 1
    except (KeyboardInterrupt, Terminated, OSError) as exc:
        return end_on(exc, PROG, "-", progress, source)
    progress.finish()
    shown = "<stdin>" if source == "-" else source
    file_format = "parquet" if parquet else "jsonl"
    if args.format == "json":
        text = printable_json(json.dumps(stats_json(stats, shown, file_format, engine))) + "\n"
    else:
        text = render_text(stats, printable(shown), file_format, engine, can_draw(sys.stdout))
    sys.stdout.write(text)
    return 1 if stats.bad_rows else 0
