"""The ``agent-rollout`` command line (also ``python -m agent_rollout``).

Each command lives in its own module of this package (``check``, ``schema``,
``normalise``, ``run``, ``demo``, ``lsp``) with ``add_arguments(parser)`` and
``run(args) -> int``; argument types shared by several commands are in
``_args``, the progress line and exit codes in ``_progress``. Only the module
of the command being run is imported, so ``check`` in a pre-commit hook does
not pay for what ``demo`` or ``run`` need.

Exit codes: 0 success, 1 invalid input (a bad config or rollout file),
2 usage or internal error (a missing optional package is a usage error: one
line naming what to install), 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn, Optional, TextIO, Union, cast

if TYPE_CHECKING:
    import argparse

# Nothing but what the package's import loaded already is imported here: argparse and
# the command's module are imported inside ``main``, whose handler turns a Ctrl-C at
# any point of the start into exit 130 and one line (the package's own import does the
# same for a Ctrl-C while it runs, see agent_rollout/__init__.py).

COMMANDS: dict[str, str] = {
    "check": "check the rollout settings of training config files",
    "schema": "print the JSON Schema of a training config file",
    "normalise": "check every row of a rollout file and write it as canonical rows",
    "stats": "show what a rollout file holds: rows, answers, messages, dropped keys, lengths",
    "run": "run a training config's rollout backend and write its rows",
    "demo": "run the bundled example: check its config, run its rollout, time both engines",
    "lsp": "run the language server: check's diagnostics, fixes and hover in an editor",
}
"""Each command and its summary; its module is ``agent_rollout.cli.<name>``. Each summary
is a verb phrase, and the command's ``--help`` description starts with the same verb,
capitalised (``tests/test_message_style.py``)."""

DEBUG_ENV = "AGENT_ROLLOUT_DEBUG"


def _command_of(argv: list[str]) -> Optional[str]:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def version_text() -> str:
    """What ``--version`` prints: the version, the engine in use and, for Rust, its build.

    ``agent-rollout 0.1.0 (engine: rust, release build)``; a ``debug`` build (a
    development install, ``make build``) is several times slower.
    """
    from agent_rollout import __version__, _engine

    return f"agent-rollout {__version__} (engine: {_engine.description()})"


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    import argparse
    from importlib import import_module

    from agent_rollout._errors import printable

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            # The usage, then the command's line as every other (``MESSAGE_SHAPES``: no
            # ``error:`` word); argparse quotes most values it names, but not the
            # unrecognised arguments: printable.
            self.print_usage(sys.stderr)
            self.exit(2, printable(f"{self.prog}: {message}") + "\n")

    parser = Parser(
        prog="agent-rollout",
        description="Check training configs' rollout settings, and check, convert and "
        "inspect rollout rows.",
    )
    parser.add_argument("-V", "--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = _command_of(argv)
    for name, summary in COMMANDS.items():
        command = sub.add_parser(
            name, help=summary, description=f"{summary[:1].upper()}{summary[1:]}."
        )
        if name == chosen:
            module = import_module(f"{__name__}.{name}")
            module.add_arguments(command)
            command.set_defaults(_run=module.run)
            parser.set_defaults(_command_parser=command)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; an argument nobody takes is a usage error of the command it
    follows (its usage, then ``agent-rollout demo: unrecognized arguments: --bogus``),
    not of ``agent-rollout`` as a whole, as argparse alone would say it."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        owner = getattr(args, "_command_parser", parser)
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _escaping_output(stream: Any) -> Optional[str]:
    """Make ``stream`` write what its encoding cannot hold as backslash escapes (as
    Python's standard error does) instead of failing; return the old setting to put back,
    or None where nothing was changed. A value, a key or a file name in a report is the
    user's text: ``é`` under ``PYTHONIOENCODING=ascii`` must not end a command."""
    errors = getattr(stream, "errors", None)
    reconfigure = getattr(stream, "reconfigure", None)
    if errors != "strict" or reconfigure is None:
        return None
    try:
        reconfigure(errors="backslashreplace")
    except (ValueError, OSError):
        return None
    return str(errors)


def main(argv: Optional[list[str]] = None) -> int:
    """Run ``agent-rollout ARGV...``: the exit code (argparse's ``SystemExit`` for
    ``--help``, ``--version`` and a usage error goes through).

    Standard output is guarded (``cli._lines.GuardedOutput``) and flushed here, before the
    interpreter's own flush at exit could fail unseen: when it cannot be written (full,
    an I/O error, closed), every command says so in one line, ``agent-rollout COMMAND:
    cannot write to standard output: REASON``, and exits 2; a broken pipe (``| head``)
    ends quietly, as ever."""
    from agent_rollout._errors import printable_lines
    from agent_rollout.cli._lines import GuardedOutput, OutputError, output_problem

    args_in = sys.argv[1:] if argv is None else argv
    stdout: Any = sys.stdout
    previous = _escaping_output(stdout)
    guard = GuardedOutput(stdout)
    sys.stdout = cast("TextIO", guard)
    try:
        try:
            code: Union[int, SystemExit] = _main(args_in)
        except SystemExit as exc:  # argparse: --help, --version, a usage error
            code = exc
        except OutputError as exc:  # named by the command, not by the guard (normalise -o -)
            guard.errors.append(exc)
            code = 2
        try:
            guard.flush()
        except BrokenPipeError:
            _drop_output(stdout)
        except OutputError:
            pass  # in guard.error
        if guard.error is not None:
            _drop_output(stdout)
            command = _command_of(args_in)
            prog = "agent-rollout" if command is None else f"agent-rollout {command}"
            print(printable_lines(output_problem(prog, guard.error)), file=sys.stderr)
            code = SystemExit(2) if isinstance(code, SystemExit) else 2
        if isinstance(code, SystemExit):
            raise code
        return code
    finally:
        sys.stdout = stdout
        if previous is not None:
            try:
                stdout.reconfigure(errors=previous)
            except (ValueError, OSError):
                pass


def _drop_output(stream: Any) -> None:
    """Point standard output's descriptor at the null device, so that what is still
    buffered for it goes nowhere at exit instead of failing again."""
    if stream is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _main(args_in: list[str]) -> int:
    command = _command_of(args_in)
    prog = "agent-rollout" if command is None else f"agent-rollout {command}"
    try:
        parser = build_parser(args_in)
        args = parse(parser, args_in)
        code: int = args._run(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:
        from agent_rollout._errors import error_text, printable_lines
        from agent_rollout.cli._lines import OutputError

        if isinstance(exc, OutputError):
            raise  # standard output cannot be written: main says it

        missing = _missing_package(exc)
        if missing is not None:  # a usage error: one line, what to install
            print(printable_lines(f"{prog}: {missing}"), file=sys.stderr)
            return 2
        if os.environ.get(DEBUG_ENV):
            raise
        text = f"internal error: {type(exc).__name__}: {error_text(exc)}"
        print(
            printable_lines(f"{prog}: {text} (set {DEBUG_ENV}=1 for a traceback)"),
            file=sys.stderr,
        )
        return 2
    return code


def _missing_package(exc: Exception) -> Optional[str]:
    """What to say of a missing optional package: ``pyarrow is not installed: pip install
    'pyarrow>=19'`` (``_extras.missing_text``) when the import that failed names a module
    an extra installs, else a ``MissingPackageError``'s own message; ``None`` for any
    other exception."""
    from agent_rollout._errors import error_text
    from agent_rollout._exceptions import MissingPackageError
    from agent_rollout._extras import missing_text

    text = missing_text(exc)
    if text is None and isinstance(exc, MissingPackageError):
        text = error_text(exc)
    return text


if __name__ == "__main__":
    raise SystemExit(main())
