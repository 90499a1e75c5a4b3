"""``agent-rollout normalise IN [-o OUT] [--max-rows N] [--max-bytes B]``: canonical rows.

Reads ``IN`` (``-``: standard input; ``.jsonl.gz`` works), checks every row
and writes canonical JSONL to ``OUT`` (default ``-``: standard output) with
:func:`agent_rollout.normalise_rollout_file`. A file ``OUT`` is written aside
and renamed into place only when every row passed, so an error, Ctrl-C,
SIGTERM or SIGHUP leaves no partial file (a device, a named pipe or
``/dev/stdout`` is written in place). On a terminal, a progress line on
standard error; always, a one-line summary there at the end.

Exit status: 0 done, 1 invalid input (the message names file:line), 2 usage
or I/O error, 130 interrupted (Ctrl-C), 143 / 129 ended by SIGTERM / SIGHUP.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from agent_rollout._errors import RolloutFileError, RolloutRowError, Terminated
from agent_rollout._io import normalise_rollout_file
from agent_rollout._limits import MAX_ROLLOUT_ROWS
from agent_rollout.cli._args import add_max_bytes, add_output, file_name, positive_rows
from agent_rollout.cli._progress import (
    Progress,
    end_on,
    format_count,
    format_rate,
    input_position,
    input_size,
    say,
)

__all__ = ["add_arguments", "run", "summary_line"]

PROG = "agent-rollout normalise"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check every row of a rollout JSONL file (.jsonl or .jsonl.gz) and write it as "
        "canonical JSONL: one {prompt, answer} row per line, compact, UTF-8. A file OUT is "
        "replaced only when every row passed."
    )
    parser.add_argument(
        "input", metavar="IN", type=file_name, help="rollout JSONL file; '-' reads standard input"
    )
    add_output(parser)
    parser.add_argument(
        "--max-rows",
        type=positive_rows,
        default=MAX_ROLLOUT_ROWS,
        metavar="N",
        help=f"refuse files with more than N rows (default {MAX_ROLLOUT_ROWS:,})",
    )
    add_max_bytes(parser)
    parser.add_argument(
        "--prompt-kind",
        choices=("auto", "text", "messages"),
        default="auto",
        help="Parquet output (OUT ends in .parquet): the prompt column's kind; 'auto' lets "
        "the first row decide, 'messages' wraps str prompts as one user message "
        "(see docs/arrow.md)",
    )


def summary_line(report: Any) -> str:
    """The closing line: rows in and out, blank lines, dropped keys, time, speed, engine."""

    def count(number: int, noun: str) -> str:
        return f"{format_count(number)} {noun}{'' if number == 1 else 's'}"

    rows_in = report.lines - report.blank_lines
    return (
        f"normalised {count(rows_in, 'row')} in, {count(report.rows, 'row')} out, "
        f"{count(report.blank_lines, 'blank line')} skipped, "
        f"{count(report.dropped_keys, 'dropped key')}, {report.seconds:.2f} s, "
        f"{format_rate(report.rows, report.seconds)} rows/s, engine {report.engine}"
    )


def run(args: argparse.Namespace) -> int:
    source: str = args.input
    dest: str = args.output
    progress = Progress("normalise", size=input_size(source), position=input_position(source))

    def on_progress(rows: int, lines: int, bytes_in: Optional[int] = None) -> None:
        # The library reports (rows, lines, bytes read); the bytes drive the percentage.
        del lines
        progress.update(rows, read=bytes_in)

    try:
        report = normalise_rollout_file(
            source,
            dest,
            max_rows=args.max_rows,
            max_bytes=args.max_bytes,
            progress=on_progress,
            prompt_kind=getattr(args, "prompt_kind", "auto"),
        )
    except (RolloutFileError, RolloutRowError) as exc:
        progress.finish()
        say(str(exc))
        return 1
    except (KeyboardInterrupt, Terminated, OSError) as exc:
        return end_on(exc, PROG, dest, progress)
    progress.finish()
    target = "" if dest == "-" else f" -> {dest}"
    say(summary_line(report) + target)
    return 0
