"""``agent-rollout check PATH...``: validate training configs with positioned errors.

A folder stands for the config files under it (``cli._walk``: recursively, what
git ignores left out); of those, the files that are not training configs are
skipped and counted, as ``--skip-unrelated`` does. Exit status: 0 when every
file is valid (warnings alone do not fail, unless ``--strict``), 1 when any is
not, 2 for a usage or internal error (a path that cannot be read at all, a
missing one whatever its suffix, counts as a usage error; the other files are
still checked and reported). The text report is coloured on a terminal
(``cli._color``). The config layer (pydantic, PyYAML) is imported when the
files are checked, not at import: ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Optional, TextIO

from agent_rollout._errors import (
    WALK_MESSAGES,
    ConfigIssue,
    Terminated,
    error_text,
    plural,
    printable,
    printable_json,
)
from agent_rollout._limits import MAX_CONFIG_BYTES, MAX_IGNORE_GLOB_BYTES
from agent_rollout._printable import found_path
from agent_rollout.backends import resolve_rollout_func
from agent_rollout.cli._args import add_section
from agent_rollout.cli._color import BOLD, CYAN, GREEN, RED, YELLOW, add_color, paint, use_color
from agent_rollout.cli._imports import current_folder_first

if TYPE_CHECKING:
    from agent_rollout.cli._fix import Fixed
    from agent_rollout.config import CheckResult, CheckSettings, Fix

__all__ = ["add_arguments", "github_annotation", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check the rollout settings of training config files (.yaml, .yml, .json, "
        ".toml). Errors read path:line:col: location: message."
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="PATH",
        help="config files, or folders (the config files under them, what git ignores "
        "left out, those that are not training configs skipped); '-' reads standard input",
    )
    add_section(parser)
    parser.add_argument(
        "--strict",
        action="store_true",
        default=None,
        help="warnings (a config incomplete for the built-in adapter, a value read otherwise "
        "than written) fail the run too: their lines say 'error (strict):', and the summary "
        "says where strictness came from (this flag, or strict = true in pyproject.toml)",
    )
    parser.add_argument(
        "--allow-key",
        action="append",
        default=[],
        metavar="KEY",
        help="a key of the trainer's own that looks like one of ours; repeatable",
    )
    parser.add_argument(
        "--skip-unrelated",
        action="store_true",
        default=None,
        help="skip files that are not training configs: no mapping holds one of our keys or "
        "a look-alike (read by key, never by word; counted as skipped); the pre-commit hook "
        "runs with it",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="text: one line per error; json: one report; github: workflow annotations",
    )
    parser.add_argument(
        "--yaml-version",
        choices=("1.1", "1.2"),
        default=None,
        help="how YAML is read: 1.1 as yaml.safe_load (PyYAML, what trainers use; the "
        "default) or 1.2 (for a trainer whose loader reads YAML 1.2)",
    )
    parser.add_argument(
        "--stdin-format",
        choices=("yaml", "json", "toml"),
        default="yaml",
        help="format of '-' (standard input); default: yaml",
    )
    parser.add_argument(
        "--resolve",
        action="store_true",
        help="also import rollout_func and check it takes the seed prompts (runs user code)",
    )
    fixing = parser.add_mutually_exclusive_group()
    fixing.add_argument(
        "--fix",
        action="store_true",
        help="apply the safe fixes (look-alike keys, backend spellings, YAML 1.1/1.2-ambiguous "
        "values, quoted numbers) to the files, report each, then what remains",
    )
    fixing.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes --fix would make as a unified diff; change nothing "
        "(exit 1 when there is one)",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix or --diff: the unsafe fixes too, those that may change what a value "
        "means (010 written 8, as the trainer reads it, where 10 may have been meant)",
    )
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="ignore [tool.agent-rollout] in pyproject.toml files",
    )
    add_color(parser)


def _github_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


# GitHub's escapes first (lossless: the annotation shows the text as it is), then
# printable for any other control character and whatever else a log line must not hold.
def _escape_data(text: str) -> str:
    return printable(_github_data(text))


def _escape_property(text: str) -> str:
    return printable(_github_data(text).replace(":", "%3A").replace(",", "%2C"))


def github_annotation(issue: ConfigIssue, strict: bool = False) -> str:
    """One ``::error`` workflow command for an issue that fails the run (an error, or a
    warning under ``strict``, titled ``agent-rollout check (strict)``), else ``::warning``;
    with the span ``--format json`` gives (``endLine``, ``endColumn``), escaped as GitHub
    Actions reads it."""
    where = f"{issue.location}: " if issue.location else ""
    warning = issue.severity == "warning"
    command = "warning" if warning and not strict else "error"
    title = "agent-rollout check (strict)" if warning and strict else "agent-rollout check"
    span = issue.as_dict()
    return (
        f"::{command} file={_escape_property(issue.path)},line={issue.line},"
        f"endLine={span['end_line']},col={issue.col},endColumn={span['end_col']},"
        f"title={_escape_property(title)}::{_escape_data(where + issue.message)}"
    )


# How each backend calls rollout_func: openenv hands it the list of seed
# prompts; art and ruler call it once per prompt with the model first.
_CALL_SHAPES = {"openenv": ("fn(prompts)", 1), "art": ("fn(model, prompt)", 2)}


def _resolve_issue(result: CheckResult) -> Optional[ConfigIssue]:
    """Import ``rollout_func`` (from the current folder first) and check the backend can
    call it with the seed prompts."""
    import inspect

    settings = result.settings
    if settings is None or settings.rollout_func is None or result.section is None:
        return None
    shape = ""
    path = (*result.section, "rollout_func")
    line, col = result.key_positions.get(path, ((1, 1), (1, 1)))[1]
    location = ".".join(path)
    try:
        # What the module prints as it is imported goes to stderr: stdout holds the report
        # (one JSON document with --format json).
        with current_folder_first(), contextlib.redirect_stdout(sys.stderr):
            func = resolve_rollout_func(settings.rollout_func)
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            return None  # no introspectable signature (some builtins): nothing to check
        shape, count = _CALL_SHAPES.get(settings.rollout_backend or "", _CALL_SHAPES["art"])
        signature.bind(*(["seed prompt"] * count))
    except TypeError as exc:
        message = (
            f"rollout_func {settings.rollout_func!r} cannot be called as {shape} "
            f"with the seed prompts: {exc}"
        )
        return ConfigIssue(result.source, line, col, location, message, "resolve")
    except Exception as exc:  # importing user code may raise anything
        message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        return ConfigIssue(result.source, line, col, location, message, "resolve")
    except SystemExit as exc:  # sys.exit() in the module must not end check (status 0, no report)
        message = f"importing it raised SystemExit({exc.code!r})"
        return ConfigIssue(result.source, line, col, location, message, "resolve")
    return None


def _check_stdin(fmt: str, options: dict[str, Any]) -> CheckResult:
    """Standard input, read to one byte past the size limit (EOF may never come)."""
    from agent_rollout.config import CheckResult, check_bytes

    data = sys.stdin.buffer.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        message = f"larger than the {MAX_CONFIG_BYTES:,}-byte limit (stopped reading there)"
        return CheckResult("<stdin>", None, [ConfigIssue("<stdin>", 1, 1, "", message, "file")], {})
    return check_bytes(data, format=fmt, source="<stdin>", **options)


def _settings(name: str, args: argparse.Namespace) -> CheckSettings:
    """The file's ``[tool.agent-rollout]`` settings, the command line's options on top."""
    from agent_rollout.config import CheckSettings, find_settings

    settings = (
        CheckSettings() if args.isolated else find_settings(os.getcwd() if name == "-" else name)
    )
    given = {
        "strict": args.strict,
        "skip_unrelated": args.skip_unrelated,
        "yaml_version": args.yaml_version,
    }
    values = {key: value for key, value in given.items() if value is not None}
    if args.section is not None:
        values["section"] = args.section or None  # '' is the top level
    settings = settings.merged(values)
    if args.allow_key:
        settings = settings.merged({"allow_keys": (*settings.allow_keys, *args.allow_key)})
    return settings


def _paths(names: list[str]) -> Iterator[tuple[str, bool, Optional[ConfigIssue]]]:
    """``(path, found in a folder, issue)`` of each path to check: a folder's config files
    in its place, and each of its subfolders that could not be read (with its issue).

    Each file once, whichever way it is reached (named twice, named and under a folder
    given, through a symbolic link): the first occurrence, as it is spelt there.
    """
    from agent_rollout.cli._walk import config_files

    seen: set[str] = set()

    def first(path: str) -> bool:
        key = path if path == "-" else os.path.normcase(os.path.realpath(path))
        if key in seen:
            return False
        seen.add(key)
        return True

    for name in names:
        if name == "-" or not os.path.isdir(name):
            if first(name):
                yield name, False, None
            continue
        found = config_files(name)
        notes = [
            WALK_MESSAGES["not_applied"].format(
                path=found_path(path), limit=f"{MAX_IGNORE_GLOB_BYTES // 1024} KiB"
            )
            for path in found.not_applied
        ]
        if not found.files and not found.unreadable:
            notes.append(WALK_MESSAGES["empty"].format(folder=name))
        for note in notes:
            sys.stderr.write(printable(f"agent-rollout check: {note}") + "\n")
        for path in found.files:
            if first(path):
                yield path, True, None
        for folder, why in found.unreadable:
            if first(folder):
                yield (
                    folder,
                    True,
                    ConfigIssue(folder, 1, 1, "", f"cannot read folder: {why}", "unreadable"),
                )


def _check_all(args: argparse.Namespace) -> list[CheckResult]:
    from agent_rollout.config import CheckResult, check_file

    results = []
    strict = False
    # Where strictness came from, for the summary: the flag, else the first pyproject.toml
    # whose settings say strict = true (any file's makes the run strict).
    args.strict_source = "--strict" if args.strict else None
    for name, in_folder, problem in _paths(args.files):
        if problem is not None:
            result = CheckResult(name, None, [problem], {})
            if args.fix or args.diff:
                from agent_rollout.cli._fix import Fixed

                args.fixed.append(Fixed(result))
            results.append(result)
            continue
        settings = _settings(name, args)
        if in_folder:  # found, not named: skipped when it is not a training config
            settings = settings.merged({"skip_unrelated": True})
        strict = strict or settings.strict
        if settings.strict and args.strict_source is None and settings.origin is not None:
            args.strict_source = found_path(settings.origin)
        options = settings.check_options()
        if name == "-":
            result = _check_stdin(args.stdin_format, options)
        elif args.fix or args.diff:
            from agent_rollout.cli._fix import fix_file

            fixed = fix_file(name, options, write=args.fix, unsafe=args.unsafe_fixes)
            result = fixed.result
            args.fixed.append(fixed)
        else:
            result = check_file(name, **options)
        if args.resolve:
            found = _resolve_issue(result)
            if found is not None:
                result.issues.append(found)
                result.settings = None
        results.append(result)
    if args.strict is None:
        args.strict = strict  # unset: strict when the settings of any file say so
    return results


def _failed(result: CheckResult, strict: bool) -> bool:
    return bool(result.issues) or (strict and bool(result.warnings))


def _summary(results: list[CheckResult], strict: bool) -> dict[str, int]:
    skipped = sum(1 for result in results if result.skipped)
    invalid = sum(1 for result in results if _failed(result, strict))
    return {
        "files": len(results),
        "valid": len(results) - invalid - skipped,
        "invalid": invalid,
        "skipped": skipped,
        "errors": sum(len(result.issues) for result in results),
        "warnings": sum(len(result.warnings) for result in results),
    }


def _painted(issue: ConfigIssue, strict: bool = False) -> str:
    """``issue.format(strict)`` with colour codes put between its parts: the text is that
    line, escaped as it is, and a part it does not start where expected is left plain."""
    line = issue.format(strict)
    parts: list[tuple[str, tuple[str, ...]]] = [
        (printable(issue.path), (BOLD,)),
        (f":{issue.line}:{issue.col}:", (CYAN,)),
    ]
    level = issue.level(strict)
    if level:
        parts.append((" " + level.rstrip(), (BOLD, YELLOW if level == "warning: " else RED)))
    if issue.location:
        parts.append((" " + printable(issue.location) + ":", (BOLD,)))
    out = []
    at = 0
    for text, styles in parts:
        if not line.startswith(text, at):
            break
        out.append(paint(text, *styles))
        at += len(text)
    return "".join(out) + line[at:]


def _issue_entry(issue: ConfigIssue, strict: bool) -> dict[str, Any]:
    """An issue in the ``json`` report: its facts, and whether it fails the run (an error
    always; a warning under ``strict``). ``severity`` stays the issue's own, the same
    with or without ``--strict``: ``fails`` is the run's rule (docs/messages.md)."""
    return {**issue.as_dict(), "fails": issue.severity != "warning" or strict}


def _strict_note(counts: dict[str, int], strict: bool, source: Optional[str]) -> str:
    """``; --strict: 2 warnings fail the run``, or ``; strict = true in pyproject.toml:
    ...`` where the settings said it; nothing when no warning fails."""
    if not strict or not counts["warnings"]:
        return ""
    where = "--strict" if source in (None, "--strict") else f"strict = true in {source}"
    fail = "fails" if counts["warnings"] == 1 else "fail"
    return f"; {where}: {plural(counts['warnings'], 'warning')} {fail} the run"


def _report(
    results: list[CheckResult],
    style: str,
    strict: bool,
    out: TextIO,
    fixed: Optional[list[Fixed]] = None,
    color: bool = False,
    strict_source: Optional[str] = None,
) -> None:
    counts = _summary(results, strict)
    if style == "json":
        report: dict[str, Any] = {
            "valid": counts["invalid"] == 0,
            "strict": strict,
            "strict_source": strict_source if strict else None,
            "summary": counts,
            "files": [
                {
                    "path": result.source,
                    "valid": not result.skipped and not _failed(result, strict),
                    "skipped": result.skipped,
                    "section": None if result.section is None else ".".join(result.section),
                    "errors": [_issue_entry(issue, strict) for issue in result.issues],
                    "warnings": [_issue_entry(issue, strict) for issue in result.warnings],
                }
                for result in results
            ],
        }
        for entry, done in zip(report["files"], fixed or [], strict=fixed is not None):
            entry["fixed"] = [_fix_entry(fix) for fix in done.fixes]
            entry["held_back"] = [_fix_entry(fix) for fix in done.held_back]
        out.write(printable_json(json.dumps(report, indent=2)) + "\n")
        return
    for result in results:
        for issue in sorted([*result.issues, *result.warnings], key=_position):
            if style == "github":
                text = github_annotation(issue, strict)
            else:
                text = _painted(issue, strict) if color else issue.format(strict)
            out.write(text + "\n")
    line = (  # every count with thousands separators, as ``plural`` writes them
        f"checked {plural(counts['files'], 'file')}: {counts['valid']:,} valid, "
        f"{counts['invalid']:,} invalid, {plural(counts['errors'], 'error')}"
    )
    if counts["warnings"]:
        line += f", {plural(counts['warnings'], 'warning')}"
    if counts["skipped"]:
        line += f", {counts['skipped']:,} skipped (not training configs)"
    line += _strict_note(counts, strict, strict_source)
    if color and style == "text":
        line = paint(line, BOLD, RED if counts["invalid"] else GREEN)
    out.write(line + "\n")


def _position(issue: ConfigIssue) -> tuple[int, int]:
    return (issue.line, issue.col)


def _fix_entry(fix: Fix) -> dict[str, Any]:
    """A fix in the ``json`` report: the issue it answers, what it does, how safe it is."""
    return {**fix.issue.as_dict(), "fix": fix.title, "applicability": fix.applicability}


def _held_back(fixed: list[Fixed], does: str) -> str:
    """``; 2 unsafe fixes held back (...): --unsafe-fixes applies them``, or nothing."""
    count = sum(len(entry.held_back) for entry in fixed)
    if not count:
        return ""
    one = count == 1
    return (
        f"; {count:,} unsafe fix{'' if one else 'es'} held back "
        f"({'it' if one else 'they'} may change what a value means): "
        f"--unsafe-fixes {does} {'it' if one else 'them'}"
    )


def _report_fixes(fixed: list[Fixed], out: TextIO) -> None:
    from agent_rollout.cli._fix import fixed_line

    count = 0
    for entry in fixed:
        for fix in entry.fixes:
            out.write(fixed_line(fix) + "\n")
            count += 1
    files = sum(1 for entry in fixed if entry.fixes)
    summary = f"fixed {plural(count, 'issue')} in {plural(files, 'file')}"
    out.write(summary + _held_back(fixed, "applies") + "\n")


def _commands_stopped(diff: bytes) -> bytes:
    """``diff`` between GitHub Actions' ``::stop-commands::TOKEN`` and ``::TOKEN::`` (a
    fresh random token) when run there (``GITHUB_ACTIONS=true``), else as it is.

    A diff holds the file's lines as they are (escaped, they would no longer apply),
    and GitHub's runner reads a line of a step's output that starts with ``::``
    after white space, or holds ``##[``, as a workflow command: a context line of
    a config a pull request wrote could be one. Between these two lines the runner
    reads none; ``git apply`` and ``patch`` pass over them as they pass over any
    text around a diff."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return diff
    token = os.urandom(16).hex()
    return b"::stop-commands::%s\n%s::%s::\n" % (token.encode(), diff, token.encode())


def _report_diff(fixed: list[Fixed], out: TextIO, err: TextIO) -> int:
    """Each file's diff on ``out`` as bytes, as ``unified_diff`` made it (what ``git
    apply`` and ``patch`` take), and nothing else: the summary goes to ``err``."""
    diff = b"".join(entry.diff for entry in fixed)
    diff = _commands_stopped(diff) if diff else diff
    sink = getattr(out, "buffer", None)
    if sink is None:  # a text stream alone (contextlib.redirect_stdout): the diff is UTF-8
        out.write(diff.decode("utf-8"))
    elif diff:
        out.flush()
        sink.write(diff)
        sink.flush()
    count = sum(len(entry.fixes) for entry in fixed)
    files = sum(1 for entry in fixed if entry.fixes)
    summary = f"would fix {plural(count, 'issue')} in {plural(files, 'file')}"
    err.write(summary + _held_back(fixed, "shows") + "\n")
    return 1 if count else 0


def run(args: argparse.Namespace) -> int:
    from agent_rollout._errors import ConfigError
    from agent_rollout.cli._fix import UNWRITABLE
    from agent_rollout.cli._lines import OutputError

    if (args.fix or args.diff) and "-" in args.files:
        sys.stderr.write("agent-rollout check: --fix and --diff take files, not '-'\n")
        return 2
    if args.unsafe_fixes and not (args.fix or args.diff):
        sys.stderr.write("agent-rollout check: --unsafe-fixes goes with --fix or --diff\n")
        return 2
    args.fixed = []
    try:
        results = _check_all(args)
        if args.diff:
            # What could not be read is named on stderr (stdout holds the diff alone),
            # before the summary: exit 2.
            unreadable = [i for r in results for i in r.issues if i.kind == "unreadable"]
            for issue in unreadable:
                sys.stderr.write(issue.format() + "\n")
            code = _report_diff(args.fixed, sys.stdout, sys.stderr)
            return 2 if unreadable else code
        if args.fix and args.format != "json":
            _report_fixes(args.fixed, sys.stdout)
        fixed = args.fixed if args.fix else None
        color = args.format == "text" and use_color(args.color, sys.stdout)
        _report(results, args.format, args.strict, sys.stdout, fixed, color, args.strict_source)
    except ConfigError as exc:  # a bad [tool.agent-rollout] setting: a usage error
        for issue in exc.issues:
            sys.stderr.write(issue.format() + "\n")
        sys.stderr.write("agent-rollout check: bad settings in pyproject.toml\n")
        return 2
    except (BrokenPipeError, OutputError):
        # The reader went away (`| head`): main() ends quietly, as for every command; or
        # standard output cannot be written: main() says so, as for every command.
        raise
    except Terminated as exc:  # SIGTERM or SIGHUP while --fix wrote a file: left whole
        sys.stderr.write(f"agent-rollout check: terminated by {exc.signal_name()}\n")
        return 128 + exc.signum
    except Exception as exc:  # a bug of ours: say so, exit 2, no traceback
        text = printable(f"internal error: {type(exc).__name__}: {error_text(exc)}")
        sys.stderr.write(f"agent-rollout check: {text}\n")
        return 2
    # A file that cannot be read, or whose fixed text cannot be written, is a usage error,
    # as in `normalise`.
    usage = ("unreadable", UNWRITABLE)
    if any(issue.kind in usage for result in results for issue in result.issues):
        return 2
    return 1 if any(_failed(result, args.strict) for result in results) else 0
