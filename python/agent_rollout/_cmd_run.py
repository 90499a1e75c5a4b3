"""``agent-rollout run CONFIG --prompts FILE [-o OUT]``: a config's rollout, start to end.

1. Load and validate the rollout settings of ``CONFIG`` (positioned errors).
2. Read the seed prompts: JSONL, one JSON value per non-blank line, handed to
   the backend as they are (``{"prompt": "..."}``, a string, a Gym row, ...).
3. Launch the backend with :func:`agent_rollout.launch_rollout`, which
   normalises what it returns.
4. Write the rows as canonical JSONL to ``OUT`` (standard output by default;
   a file is written aside and renamed into place, so a failure leaves none).

``--prompts`` may be left out when the config reads its data from
``rollout_source`` (``art``, ``nemo_gym``); the backend then takes no seeds.

Exit status: 0 done; 1 invalid input (config, prompt file, a backend that
refuses its input or returns bad rows); 2 usage or I/O error, a missing
backend package, or a backend that failed for another reason; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import IO, Any, Optional

__all__ = ["PromptFileError", "add_arguments", "read_prompts", "run", "write_rows"]

PROG = "agent-rollout run"
DEBUG_ENV = "AGENT_ROLLOUT_DEBUG"


class PromptFileError(ValueError):
    """A seed prompt file cannot be used; the message starts with ``file:line``."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from agent_rollout._backends import MAX_ROLLOUT_ROWS
    from agent_rollout._cmd_normalise import positive_rows

    parser.description = (
        "Load a training config, launch its rollout backend on the seed prompts and write "
        "the normalised rows as canonical JSONL."
    )
    parser.add_argument("config", metavar="CONFIG", help="training config (.yaml, .json, .toml)")
    parser.add_argument(
        "--prompts",
        metavar="FILE",
        help="seed prompts, JSONL: one JSON value per line ('-': standard input); "
        "optional when the config sets rollout_source",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        default="-",
        help="where to write the rows (default '-': standard output)",
    )
    parser.add_argument(
        "--section",
        default="training",
        help="top-level key holding the settings (default: training; '' for the top level)",
    )
    parser.add_argument(
        "--max-rows",
        type=positive_rows,
        default=MAX_ROLLOUT_ROWS,
        metavar="N",
        help=f"refuse a rollout of more than N rows (default {MAX_ROLLOUT_ROWS:,})",
    )


# ---- seed prompts --------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_prompts(path: str) -> list[Any]:
    """Every non-blank line of a JSONL file as a JSON value, in file order.

    ``"-"`` reads standard input. Raises ``PromptFileError`` naming the file
    and line for bad UTF-8, bad JSON, an oversized line, too many prompts or
    no prompts at all, and ``OSError`` when the file cannot be read.
    """
    from agent_rollout._backends import MAX_LINE_BYTES, MAX_ROWS_LIMIT

    source = "<stdin>" if path == "-" else path
    stream: IO[bytes] = sys.stdin.buffer if path == "-" else open(path, "rb")
    prompts: list[Any] = []
    try:
        number = 0
        while line := stream.readline(MAX_LINE_BYTES + 1):
            number += 1
            where = f"{source}:{number}"
            content = line.rstrip(b"\r\n")
            if len(content) > MAX_LINE_BYTES:
                raise PromptFileError(f"{where}: line longer than {MAX_LINE_BYTES} bytes")
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise PromptFileError(
                    f"{where}: invalid UTF-8 at byte {exc.start + 1} of the line"
                ) from None
            if not text.strip():
                continue
            if len(prompts) >= MAX_ROWS_LIMIT:
                raise PromptFileError(f"{where}: more than {MAX_ROWS_LIMIT} seed prompts")
            try:
                prompts.append(json.loads(text, parse_constant=_refuse_constant))
            except json.JSONDecodeError as exc:
                raise PromptFileError(f"{where}:{exc.colno}: invalid JSON: {exc.msg}") from None
            except (ValueError, RecursionError) as exc:
                raise PromptFileError(f"{where}: invalid JSON: {exc}") from None
    finally:
        if path != "-":
            stream.close()
    if not prompts:
        raise PromptFileError(f"{source}: no seed prompts (the file is empty or blank)")
    return prompts


# ---- output ----------------------------------------------------------------------------------


def write_rows(
    rows: Sequence[dict], dest: str, on_row: Optional[Callable[[int], None]] = None
) -> int:
    """Write ``rows`` as canonical JSONL to ``dest`` (``"-"``: standard output).

    The same writer ``normalise`` uses: written aside and renamed, nothing
    left behind on error. Returns the number of bytes written.
    """
    from agent_rollout._jsonl import write_canonical

    return write_canonical(rows, dest, on_row)


# ---- the command -----------------------------------------------------------------------------


class _Stop(Exception):
    """Ends the command: ``message`` goes to standard error, ``code`` is the exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _settings(args: argparse.Namespace) -> Any:
    from agent_rollout._loader import ConfigError, load_config

    try:
        return load_config(args.config, section=args.section or None)
    except ConfigError as exc:
        unreadable = all(issue.message.startswith("cannot read file") for issue in exc.issues)
        raise _Stop(str(exc), 2 if unreadable else 1) from None


def _prompts(args: argparse.Namespace, backend: str, source: Optional[str]) -> list[Any]:
    if args.prompts is None:
        if source is None:
            raise _Stop(
                f"{PROG}: --prompts FILE is required: rollout_backend {backend!r} runs on "
                "seed prompts (or set rollout_source where the backend reads one)",
                2,
            )
        return []
    if source is not None:
        sys.stderr.write(
            f"{PROG}: note: the rows come from rollout_source {source!r}; "
            f"the prompts in {args.prompts} are not used\n"
        )
    try:
        return read_prompts(args.prompts)
    except PromptFileError as exc:
        raise _Stop(str(exc), 1) from None
    except OSError as exc:
        raise _Stop(f"{PROG}: {exc}", 2) from None


def _launch(args: argparse.Namespace, kwargs: dict[str, Any], prompts: list[Any]) -> Any:
    from agent_rollout import launch_rollout

    name = kwargs["name"]
    try:
        return launch_rollout(prompts=prompts, max_rows=args.max_rows, **kwargs)
    except ImportError as exc:
        raise _Stop(f"{PROG}: {exc}", 2) from None
    except ValueError as exc:
        raise _Stop(f"{PROG}: rollout backend {name!r}: {exc}", 1) from None
    except OSError as exc:
        raise _Stop(f"{PROG}: rollout backend {name!r}: {exc}", 2) from None
    except Exception as exc:  # user code behind the backend may raise anything
        if os.environ.get(DEBUG_ENV):
            raise
        raise _Stop(
            f"{PROG}: rollout backend {name!r} failed: {type(exc).__name__}: {exc} "
            f"(set {DEBUG_ENV}=1 for a traceback)",
            2,
        ) from None


def _plural(count: int, noun: str) -> str:
    from agent_rollout._progress import format_count

    return f"{format_count(count)} {noun}{'' if count == 1 else 's'}"


def run(args: argparse.Namespace) -> int:
    from agent_rollout._progress import Progress, Terminated, end_on

    progress = Progress("run")
    try:
        settings = _settings(args)
        try:
            kwargs = settings.to_launch_kwargs()
        except ValueError as exc:  # the config sets no rollout_backend
            raise _Stop(f"{args.config}: {exc}", 1) from None
        backend: str = kwargs["name"]
        source: Optional[str] = kwargs["options"].get("source")
        prompts = _prompts(args, backend, source)
        with progress.ticking(f"{backend} rollout on {_plural(len(prompts), 'seed prompt')}"):
            rows = _launch(args, kwargs, prompts).rows
        progress.total = len(rows)
        progress.update(0, status="writing")
        write_rows(rows, args.output, on_row=progress.update)
    except _Stop as stop:
        progress.finish()
        sys.stderr.write(stop.message + "\n")
        return stop.code
    except (KeyboardInterrupt, Terminated, OSError) as exc:
        return end_on(exc, PROG, args.output, progress)
    progress.finish()
    seeds = _plural(len(prompts), "seed prompt") if source is None else f"rollout_source {source}"
    target = "" if args.output == "-" else f" -> {args.output}"
    sys.stderr.write(
        f"ran {backend} rollout: {seeds}, {_plural(len(rows), 'row')}, "
        f"{progress.elapsed():.2f} s{target}\n"
    )
    return 0
