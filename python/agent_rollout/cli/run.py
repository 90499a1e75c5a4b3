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
A relative ``rollout_source`` is relative to the config file's folder; so is a
relative ``rollout_gym_config`` file found there (else NeMo Gym looks for it in
its own install, where its environments live).

``--example NAME`` (in place of ``CONFIG``) runs the bundled
``agent_rollout/examples/NAME.yaml``, on the bundled ``prompts.jsonl`` unless
``--prompts`` is given; both are found in the installed package.

Before any server starts, every package the run needs is looked for (without
importing it): the backend's (openpipe-art for ``art`` and ``ruler``, nemo-gym
for a live NeMo Gym run) and openenv-core for the bundled OpenEnv rollout; a
missing one ends the run (exit 2, naming what to install) with nothing started.
``--serve`` then starts, for the run only, the bundled loopback servers the
config names (the scripted policy and judge, the OpenEnv drill server).
Without ``--serve``, nothing answering at the address a bundled config gives
one of them ends the run at once (exit 2, naming ``--serve``), before the
backend is imported. Both, and finding a bundled example, are
``agent_rollout.examples.serving``'s: this module calls it and says what it
started.

On a terminal, the progress line says what the run waits for before each wait:
each server starting (``starting the OpenEnv drill server on 127.0.0.1``: its
import alone takes seconds), then the rollouts done. The summary line counts the
rows without an answer and the prompts a backend dropped (by reason), gives the
time the servers took to start apart, then lists the drops, the input fields
rows could not carry and what the backend reported (NeMo Gym servers it reused).
The packages behind a backend (LiteLLM, transformers) print nothing unless
``AGENT_ROLLOUT_DEBUG=1``, which also turns an unexpected failure into a
traceback.

Exit status: 0 done; 1 invalid input (config, prompt file, a backend that
refuses its input or returns bad rows); 2 usage or I/O error, a missing
backend package, or a backend that failed for another reason; 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, Optional

from agent_rollout._errors import (
    ConfigError,
    PromptFileError,
    RolloutFileError,
    Terminated,
    error_text,
    for_command_line,
    plural,
    printable,
    printable_lines,
)
from agent_rollout._files import source_name
from agent_rollout._io import write_rollout_rows
from agent_rollout._jsonl import FileLimits, read_values
from agent_rollout._launch import launch_rollout, runner_registered
from agent_rollout._limits import MAX_ROLLOUT_BYTES, MAX_ROLLOUT_ROWS, MAX_ROWS_LIMIT
from agent_rollout.backends import (
    LIVE_KEYS,
    get_rollout_backend_spec,
    require_backend_package,
)
from agent_rollout.backends._report import DEBUG_ENV, debug_enabled, reporting
from agent_rollout.cli._args import (
    add_max_bytes,
    add_output,
    add_prompt_kind,
    add_section,
    file_name,
    positive_rows,
)
from agent_rollout.cli._imports import current_folder_first
from agent_rollout.cli._lines import file_problem
from agent_rollout.cli._progress import Progress, end_on, format_count, say
from agent_rollout.examples.serving import (
    EXAMPLES,
    Served,
    ServeError,
    bundled_example,
    serve_example,
)

__all__ = ["PromptFileError", "add_arguments", "read_prompts", "run", "write_rows"]

PROG = "agent-rollout run"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run a training config's rollout backend: load and check the config, launch the "
        "backend on the seed prompts and write the normalised rows in the format OUT's name "
        "says: .jsonl (canonical JSONL), .jsonl.gz or .parquet."
    )
    parser.set_defaults(usage_error=parser.error)  # CONFIG or --example: checked in run
    parser.add_argument(
        "config",
        metavar="CONFIG",
        nargs="?",
        type=file_name,
        help="training config (.yaml, .json, .toml); leave out with --example",
    )
    parser.add_argument(
        "--example",
        metavar="NAME",
        choices=EXAMPLES,
        help="run the bundled config NAME.yaml shipped in agent_rollout/examples (one of "
        f"{', '.join(EXAMPLES)}) instead of CONFIG; without --prompts it runs on the bundled "
        "prompts.jsonl (works from a clone and from an installed package)",
    )
    parser.add_argument(
        "--prompts",
        metavar="FILE",
        type=file_name,
        help="seed prompts, JSONL: one JSON value per line ('-': standard input); "
        "optional when the config sets rollout_source",
    )
    add_output(parser)
    add_prompt_kind(parser)
    add_section(parser)
    parser.add_argument(
        "--serve",
        action="store_true",
        help="start the bundled servers the config needs, on loopback, for this run only: "
        "the scripted policy at rollout_policy_base_url and the scripted judge at "
        "rollout_judge_base_url (each must be http://127.0.0.1:PORT/...), and the OpenEnv "
        "drill server when rollout_func is one of agent_rollout.examples.openenv_rollout",
    )
    parser.add_argument(
        "--max-rows",
        type=positive_rows,
        default=MAX_ROLLOUT_ROWS,
        metavar="N",
        help=f"refuse a rollout of more than N rows (default {MAX_ROLLOUT_ROWS:,})",
    )
    add_max_bytes(parser, "a --prompts file")


# ---- seed prompts --------------------------------------------------------------------------


def read_prompts(path: str, max_bytes: int = MAX_ROLLOUT_BYTES) -> list[Any]:
    """Every non-blank line of a JSONL file (gzip or not) as a JSON value, in file order.

    Read by the package's one JSONL reader (``agent_rollout._jsonl``), with the
    rules and messages of ``normalise`` (line length, blank lines, at most
    ``MAX_ROWS_LIMIT`` prompts and ``max_bytes`` bytes after gzip, UTF-8,
    strict JSON with the column), except that a line may hold any JSON value:
    the backend decides what a seed prompt is. ``"-"`` reads standard input.
    Raises ``PromptFileError`` (the reader's message, with ``file:line[:column]``
    in front) and ``OSError`` when the file cannot be read.
    """
    try:
        prompts = [value for _, value in read_values(path, FileLimits(MAX_ROWS_LIMIT, max_bytes))]
    except RolloutFileError as exc:
        raise PromptFileError(str(exc)) from None
    if not prompts:
        raise PromptFileError(f"{source_name(path)}: no seed prompts (the file is empty or blank)")
    return prompts


# ---- output ----------------------------------------------------------------------------------


def write_rows(
    rows: Sequence[dict],
    dest: str,
    on_row: Optional[Callable[[int], None]] = None,
    prompt_kind: str = "auto",
) -> int:
    """Write ``rows`` to ``dest`` in the format its name says: ``.jsonl``, ``.jsonl.gz``,
    ``.parquet`` (``"-"``: JSONL on standard output).

    The same writers ``normalise`` uses: written aside and renamed, nothing
    left behind on error. Returns the number of bytes written.
    """
    return write_rollout_rows(rows, dest, on_row, prompt_kind)


# ---- the command -----------------------------------------------------------------------------


class _Stop(Exception):
    """Ends the command: ``message`` goes to standard error, ``code`` is the exit status.

    Each line of the message is printed ``printable``; a file name or key in it is made
    ``printable`` where the message is built, so that its line breaks make no line.
    """

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """A usage error as argparse's own: the usage, then ``agent-rollout run: MESSAGE``
    (exit 2; the parser's ``error``, kept by ``add_arguments``)."""
    error = getattr(args, "usage_error", None)
    if error is not None:
        error(message)
    raise _Stop(f"{PROG}: {message}", 2)


def _pick_config(args: argparse.Namespace) -> Optional[str]:
    """Point ``args.config`` at the bundled example; return its prompt file (or ``None``)."""
    example = getattr(args, "example", None)
    if example is None:
        if args.config is None:
            _usage_error(args, "give a CONFIG file, or --example NAME for a bundled one")
        return None
    if args.config is not None:
        _usage_error(args, f"give a CONFIG file or --example {example}, not both")
    args.config, prompts = bundled_example(example)
    return prompts


def _settings(args: argparse.Namespace) -> Any:
    # pydantic: only for the command that needs it
    from agent_rollout.config import AUTO_SECTION, load_config

    section = AUTO_SECTION if args.section is None else (args.section or None)  # '': top level
    try:
        return load_config(args.config, section=section)
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
        say(
            f"{PROG}: note: the rows come from rollout_source {source!r}; "
            f"the prompts in {args.prompts} are not used"
        )
    try:
        return read_prompts(args.prompts, getattr(args, "max_bytes", MAX_ROLLOUT_BYTES))
    except PromptFileError as exc:
        raise _Stop(printable(for_command_line(str(exc))), 1) from None
    except OSError as exc:
        text = file_problem(exc, "read")
        raise _Stop(printable(text or f"{PROG}: {error_text(exc)}"), 2) from None


def _launch(
    args: argparse.Namespace, kwargs: dict[str, Any], prompts: list[Any], served: Served
) -> Any:
    name = kwargs["name"]

    def names_backend(text: str) -> bool:
        # Backends' own messages often start with ``rollout_backend 'art': ...``.
        return f"{name!r}" in text

    def prefixed(exc: BaseException) -> str:
        # Name the backend once; a file by its path, the reason in words.
        text = (file_problem(exc) if isinstance(exc, OSError) else None) or error_text(exc)
        return text if names_backend(text) else f"rollout backend {name!r}: {text}"

    try:
        with current_folder_first():  # rollout_func is imported from here, as python -m does
            return launch_rollout(prompts=prompts, max_rows=args.max_rows, **kwargs)
    except ImportError as exc:
        raise _Stop(f"{PROG}: {exc}", 2) from None
    except ValueError as exc:  # hints as this command's flags (--max-rows N)
        raise _Stop(f"{PROG}: {for_command_line(prefixed(exc))}", 1) from None
    except OSError as exc:
        raise _Stop(f"{PROG}: {prefixed(exc)}{served.hint(exc)}", 2) from None
    except Exception as exc:  # user code behind the backend may raise anything
        if debug_enabled():
            raise
        text = error_text(exc)
        what = (
            text
            if names_backend(text)
            else f"rollout backend {name!r} failed: {type(exc).__name__}: {text}"
        )
        raise _Stop(
            f"{PROG}: {what}{served.hint(exc)} (set {DEBUG_ENV}=1 for a traceback)",
            2,
        ) from None


def _require_backend_package(backend: str, settings: Any) -> None:
    """The backend's package for the mode the config turns on (openpipe-art for ``art``
    and ``ruler``, nemo-gym for a live NeMo Gym run), before any server starts: a
    missing one is a usage error naming what to install (``require_backend_package``'s
    message). Only its top-level module is looked for, which imports nothing (finding
    ruler's ``art.rewards`` imports ART, seconds); the launch checks the rest. A runner
    registered in this process (``register_rollout_runner``) needs none."""
    if runner_registered(backend):
        return
    live_keys = LIVE_KEYS.get(backend)
    live = live_keys is not None and getattr(settings, live_keys[0], None) is not None
    spec = get_rollout_backend_spec(backend)
    name = spec.live_import_name if live and spec.live_package else spec.import_name
    if name is None:
        return
    try:
        if importlib.util.find_spec(name.partition(".")[0]) is not None:
            return
    except (ImportError, ValueError):
        pass
    try:
        require_backend_package(backend, live=live)
    except ImportError as exc:
        raise _Stop(f"{PROG}: {exc}", 2) from None


def _say_served(served: Served, progress: Progress) -> None:
    """With ``--serve``: which servers run for the run (or that the config needs none)."""
    if served.start and not served.started:
        progress.say(f"{PROG}: note: --serve: this config needs no bundled server")
    for what in served.started:
        progress.say(f"{PROG}: serving {what}")


class _Reporter:
    """What the backend reports: rollouts done on the progress line, notes for the summary."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.notes: list[str] = []

    def rollouts(self, done: int, total: int) -> None:
        self.progress.unit = "rollouts"
        self.progress.of_total = True
        self.progress.total = total
        self.progress.update(done)

    def note(self, text: str) -> None:
        self.notes.append(text)


def _beside_config(config: str, value: Any) -> Any:
    """``rollout_gym_config`` with each relative file that exists beside ``config`` made
    absolute (a list); the other paths as given, for NeMo Gym to find in its install."""
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, (list, tuple)) or not all(isinstance(p, str) for p in parts):
        return value  # the backend says what is wrong with it
    folder = os.path.dirname(os.path.abspath(config))
    found = []
    for part in (p.strip() for p in parts):
        beside = os.path.join(folder, part)
        found.append(
            beside if part and not os.path.isabs(part) and os.path.isfile(beside) else part
        )
    return found if found != [p.strip() for p in parts] else value


def run(args: argparse.Namespace) -> int:
    progress = Progress("run")
    reporter = _Reporter(progress)
    try:
        bundled_prompts = _pick_config(args)
        settings = _settings(args)
        try:
            kwargs = settings.to_launch_kwargs()
        except ValueError as exc:  # the config sets no rollout_backend
            raise _Stop(printable(f"{args.config}: {exc}"), 1) from None
        backend: str = kwargs["name"]
        source: Optional[str] = kwargs["options"].get("source")
        if source is not None and not os.path.isabs(source):
            # Relative to the config file, so a config and its data travel together
            # (launch_rollout itself opens the path as given).
            source = os.path.join(os.path.dirname(args.config), source)
            kwargs["options"]["source"] = source
        if kwargs["options"].get("gym_config") is not None:
            kwargs["options"]["gym_config"] = _beside_config(
                args.config, kwargs["options"]["gym_config"]
            )
        if bundled_prompts is not None and args.prompts is None and source is None:
            args.prompts = bundled_prompts
        prompts = _prompts(args, backend, source)
        _require_backend_package(backend, settings)
        rollout = f"{backend} rollout on {plural(len(prompts), 'seed prompt')}"
        serving = 0.0
        try:
            # The clock moves from here; each server's start is said before it (`starting`).
            with progress.ticking(None if args.serve else rollout), reporting(reporter):
                started = time.perf_counter()
                with serve_example(kwargs, start=args.serve, starting=progress.show) as served:
                    if served.started:
                        serving = time.perf_counter() - started
                    _say_served(served, progress)
                    progress.show(rollout)
                    result = _launch(args, kwargs, prompts, served)
        except ServeError as exc:
            raise _Stop(f"{PROG}: {exc}", 2) from None
        rows = result.rows
        progress.unit = "rows"
        progress.total = len(rows)
        progress.update(0, status="writing")
        try:
            write_rows(rows, args.output, progress.update, args.prompt_kind)
        except ValueError as exc:  # a row the output cannot hold (Parquet: mixed prompt kinds)
            raise _Stop(f"{PROG}: {for_command_line(error_text(exc))}", 1) from None
    except _Stop as stop:
        progress.finish()
        sys.stderr.write(printable_lines(stop.message) + "\n")
        return stop.code
    except (KeyboardInterrupt, Terminated, OSError) as exc:
        return end_on(exc, PROG, args.output, progress, args.prompts)
    progress.finish()
    seeds = plural(len(prompts), "seed prompt") if source is None else f"rollout_source {source}"
    target = "" if args.output == "-" else f" -> {args.output}"
    servers = ""
    if served.started:
        which = "server" if len(served.started) == 1 else "servers"
        servers = f" ({which} started in {serving:.2f} s)"
    lines = [
        f"ran {backend} rollout: {seeds}, {plural(len(rows), 'row')}{_unanswered(rows)}"
        f"{_dropped(result)}, "
        f"{progress.elapsed():.2f} s{servers}{target}",
        *(f"  dropped {drop}" for drop in result.drops[:_SHOWN_DROPS]),
    ]
    if len(result.drops) > _SHOWN_DROPS:
        lines.append(f"  ... and {len(result.drops) - _SHOWN_DROPS} more dropped")
    for field, count in sorted(result.unused_fields.items()):
        lines.append(f"  not carried into rows: {field} of {plural(count, 'row')}")
    lines.extend(f"  {note}" for note in reporter.notes)
    for line in lines:  # sources, fields, reasons, notes: the input's and the backend's text
        say(line)
    return 0


_SHOWN_DROPS = 5


def _unanswered(rows: Sequence[dict]) -> str:
    """`` (1 without an answer)`` when rows have no answer (a task with no reference), so
    that the summary does not pass them off as answered; else ``""``."""
    count = sum(1 for row in rows if row.get("answer") is None)
    return f" ({format_count(count)} without an answer)" if count else ""


def _dropped(result: Any) -> str:
    if not result.drops:
        return ""
    counts = ", ".join(f"{reason}: {n}" for reason, n in sorted(result.drop_counts().items()))
    return f", {plural(len(result.drops), 'prompt')} dropped ({counts})"
