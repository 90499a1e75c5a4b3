"""``agent-rollout normalise IN [-o OUT] [--skip-bad] [--max-rows N] [--max-bytes B]``.

Reads ``IN`` (``-``: standard input; ``.jsonl.gz`` works), checks every row
and writes canonical rows to ``OUT`` (default ``-``: JSONL on standard output)
with :func:`agent_rollout.normalise_rollout_file`, in the format ``OUT``'s
name says: ``.jsonl``, ``.jsonl.gz`` (gzip), ``.parquet``; any other name is
a usage error (a device, a named pipe or ``/dev/stdout`` gets JSONL). A file
``OUT`` is written aside and renamed into place only when every row passed,
so an error, Ctrl-C, SIGTERM or SIGHUP leaves no partial file (a device, a
named pipe or ``/dev/stdout`` is written in place). On a terminal, a progress
line on standard error; always, a one-line summary there at the end.

Bad rows (bad UTF-8, bad JSON, a broken row rule) are all counted: the first
20 are listed with ``file:line``, then ``N bad rows of M``, and nothing is
written (exit 1). ``--skip-bad`` writes the good rows instead, lists the
skipped ones the same way and exits 0: the user asked for it. A fault of the
file as a whole (a line over MAX_LINE_BYTES, ``--max-rows``, ``--max-bytes``,
bad gzip) still stops the read, after the bad rows before it. In Parquet
output a row whose prompt is not of the table's kind (``--prompt-kind``) is a
bad row too. Hints name the command's flags (``--max-rows N``,
``--prompt-kind messages``). ``--max-rows`` defaults to ``FILE_COMMAND_MAX_ROWS``
(10,000,000), as for ``stats``: the file is streamed (why: ``agent_rollout._limits``).

Exit status: 0 done, 1 invalid input (the messages name file:line), 2 usage
or I/O error, 130 interrupted (Ctrl-C), 143 / 129 ended by SIGTERM / SIGHUP.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from agent_rollout._errors import (
    RolloutBadRowsError,
    RolloutFileError,
    RolloutRowError,
    Terminated,
    bad_rows_summary,
    for_command_line,
    plural,
)
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._files import source_name
from agent_rollout._io import normalise_rollout_file
from agent_rollout._limits import BAD_ROWS_KEPT
from agent_rollout.cli._args import (
    add_file_max_rows,
    add_max_bytes,
    add_output,
    add_prompt_kind,
    file_name,
)
from agent_rollout.cli._progress import (
    Progress,
    end_on,
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
        "canonical rows, in the format OUT's name says: .jsonl (one {prompt, answer} row per "
        "line, compact, UTF-8), .jsonl.gz (the same, gzip) or .parquet. A file OUT is "
        "replaced only when every row passed; every bad row is listed (--skip-bad writes "
        "the good ones)."
    )
    parser.add_argument(
        "input", metavar="IN", type=file_name, help="rollout JSONL file; '-' reads standard input"
    )
    add_output(parser)
    add_file_max_rows(parser)
    add_max_bytes(parser)
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help=f"write the good rows and leave the bad ones out (the first {BAD_ROWS_KEPT} "
        "listed on standard error), exit 0; by default every bad row is listed and "
        "nothing is written (exit 1)",
    )
    add_prompt_kind(parser)


def summary_line(report: Any) -> str:
    """The closing line: rows in and out, blank lines, dropped keys, time, speed, engine."""

    rows_in = report.lines - report.blank_lines
    bad = f"{plural(report.bad_rows, 'bad row')} and " if report.bad_rows else ""
    return (
        f"normalised {plural(rows_in, 'row')} in, {plural(report.rows, 'row')} out, "
        f"{bad}{plural(report.blank_lines, 'blank line')} skipped, "
        f"{plural(report.dropped_keys, 'dropped key')}, {report.seconds:.2f} s, "
        f"{format_rate(report.rows, report.seconds)} rows/s, engine {report.engine}"
    )


def _say_error(exc: ValueError, dest: str, skip_bad: bool) -> None:
    """An error of the input, each line as the command line words it."""
    if isinstance(exc, RolloutBadRowsError):
        _say_bad(exc.errors)
        if exc.stopped is not None:
            say(for_command_line(str(exc.stopped)))
        summary = bad_rows_summary(exc.source, exc.bad_rows, exc.rows, exc.errors)
        # Standard output is written as the rows come: the rows before the first bad one
        # may have gone out (as when the first bad row ends the run).
        left = "no row written after the first bad one" if dest == "-" else "nothing written"
        # With --skip-bad given, what stopped it is the error above (or no row was good).
        hint = "" if skip_bad else " (--skip-bad writes the good rows)"
        say(f"{summary}; {left}{hint}")
        return
    say(for_command_line(str(exc)))


def _say_bad(errors: Any) -> None:
    for error in errors:
        say(for_command_line(str(error)))


def run(args: argparse.Namespace) -> int:
    source: str = args.input
    dest: str = args.output
    skip_bad: bool = getattr(args, "skip_bad", False)
    prompt_kind: str = getattr(args, "prompt_kind", "auto")
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
            prompt_kind=prompt_kind,
            on_bad="skip" if skip_bad else "report",
        )
    except (RolloutFileError, RolloutRowError) as exc:
        progress.finish()
        _say_error(exc, dest, skip_bad)
        return 1
    except RolloutValueError as exc:  # --skip-bad into the input: a usage error
        progress.finish()
        say(for_command_line(str(exc)))
        return 2
    except (KeyboardInterrupt, Terminated, OSError) as exc:
        return end_on(exc, PROG, dest, progress, source)
    progress.finish()
    if report.bad_rows:
        _say_bad(report.skipped)
        rows = report.rows + report.bad_rows
        summary = bad_rows_summary(source_name(source), report.bad_rows, rows, report.skipped)
        say(f"{summary}, skipped")
    target = "" if dest == "-" else f" -> {dest}"
    say(summary_line(report) + target)
    return 0
