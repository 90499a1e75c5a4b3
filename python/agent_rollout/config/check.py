"""Checking config files and sections: ``check_file``, ``check_bytes``, ``load_config``.

Reads a config file (only a regular file, at most ``MAX_CONFIG_BYTES``,
looked at before it is opened so that a FIFO or device never blocks), parses
it with positions (``agent_rollout.config._parse``), finds the section,
validates it with ``RolloutSettings`` and places every error and warning at
its ``path:line:col``. Problems with the file itself (unreadable, not UTF-8,
too big, bad syntax, duplicate keys, a root or section that is not a mapping)
come out the same way, all of them, never a traceback.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from pydantic import ValidationError

from agent_rollout._errors import ConfigError, ConfigIssue, shown
from agent_rollout._limits import MAX_CONFIG_BYTES
from agent_rollout.config._lookalike import key_set, lookalike_key, nearest_key
from agent_rollout.config._models import RolloutSettings
from agent_rollout.config._parse import (
    FORMATS,
    KeyPath,
    Parsed,
    ParseProblem,
    Pos,
    decode,
    format_for_suffix,
    parse,
)
from agent_rollout.config._rules import section_warnings

__all__ = [
    "CheckResult",
    "ConfigError",
    "ConfigIssue",
    "check_bytes",
    "check_file",
    "load_config",
    "load_config_bytes",
    "section_path",
]


_LOCATED_AT_KEY = ("rollout_unknown_key", "rollout_cross_field")
_KINDS = {
    "rollout_unknown_key": "unknown_key",
    "rollout_missing": "missing",
    "rollout_cross_field": "cross_field",
}


def _settings_issues(
    source: str,
    parsed: Parsed,
    prefix: KeyPath,
    section_value: Mapping[Any, Any],
    known_keys: Collection[str],
) -> tuple[Optional[RolloutSettings], list[ConfigIssue], list[ConfigIssue]]:
    """(settings or None, errors, warnings) of one section."""
    section_pos = parsed.keys[prefix][0] if prefix in parsed.keys else parsed.root_pos

    def warnings_of(section: Mapping[Any, Any]) -> list[ConfigIssue]:
        return [
            ConfigIssue(
                source,
                section_pos[0],
                section_pos[1],
                ".".join((*prefix, warning.key)),
                warning.message,
                "incomplete",
                "warning",
            )
            for warning in section_warnings(section)
        ]

    try:
        settings = RolloutSettings.model_validate(
            section_value, context={"known_keys": frozenset(known_keys)}
        )
        return settings, [], warnings_of(section_value)
    except ValidationError as exc:
        errors = exc.errors()
    # A look-alike key is reported as the key it looks like: no second report
    # that this key is not set (``rollout_fucn`` is not also "rollout_func is not set").
    meant = {
        nearest_key(str(error["loc"][0])): error["input"]
        for error in errors
        if error["type"] == "rollout_unknown_key" and error["loc"]
    }
    warnings = warnings_of({**section_value, **meant} if meant else section_value)
    issues = []
    for error in errors:
        key = str(error["loc"][0]) if error["loc"] else ""
        kind = error["type"]
        located = parsed.keys.get((*prefix, key))
        if kind == "rollout_missing" or located is None:
            pos = section_pos
        elif kind in _LOCATED_AT_KEY:
            pos = located[0]
        else:
            pos = located[1]
        message = error["msg"]
        if not kind.startswith("rollout_"):
            message = f"{message} (got {shown(error['input'])})"
        issues.append(
            ConfigIssue(
                source,
                pos[0],
                pos[1],
                ".".join((*prefix, key)) if key else ".".join(prefix),
                message,
                _KINDS.get(kind, "value"),
            )
        )
    return None, issues, warnings


@dataclass
class CheckResult:
    """What checking one file found: the settings (when valid) and every issue."""

    source: str
    settings: Optional[RolloutSettings]
    issues: list[ConfigIssue]
    """The errors (``severity == "error"``); any of them leaves ``settings`` None."""
    key_positions: dict[KeyPath, tuple[Pos, Pos]]
    """``(key, value)`` positions of the top-level and section keys."""
    warnings: list[ConfigIssue] = field(default_factory=list)
    """Incomplete-config warnings (``severity == "warning"``); settings stay valid."""
    skipped: bool = False
    """True when ``skip_unrelated`` found no section and no rollout key: not a config."""


def section_path(section: Optional[str], root: Any = None) -> KeyPath:
    """The key path a ``section`` names: ``None`` is the top level, ``a.b`` is nested.

    A top-level key that itself holds a dot wins over the dotted reading.
    """
    if section is None or section == "":
        return ()
    if isinstance(root, dict) and section in root:
        return (section,)
    return tuple(section.split("."))


_ROLLOUT_WORD = re.compile(r"(?i)rol+out")


def _mentions_rollout(key: object) -> bool:
    """A ``rollout_*`` key (any case, ``-`` read as ``_``) or a look-alike of ours.

    A key that merely holds the word (verl's ``actor_rollout_ref``) is not one.
    """
    if not isinstance(key, str):
        return False
    return key.lower().replace("-", "_").startswith("rollout_") or lookalike_key(key)


def _unrelated(root: Any, path: KeyPath) -> bool:
    """No section and no ``rollout_*`` or look-alike key in the top two levels: not a config."""
    if not isinstance(root, dict):
        return True
    if path and path[0] in root:
        return False
    for key, value in root.items():
        if _mentions_rollout(key):
            return False
        if isinstance(value, dict) and any(_mentions_rollout(inner) for inner in value):
            return False
    return True


def _unrelated_text(text: str, path: KeyPath) -> bool:
    """The same question for a file that does not parse: neither word appears in it."""
    if _ROLLOUT_WORD.search(text):
        return False
    return not (path and path[0] in text)


def _load(
    source: str, data: bytes, fmt: str, section: Optional[str], known_keys: Iterable[str]
) -> RolloutSettings:
    result = check_bytes(data, format=fmt, source=source, section=section, known_keys=known_keys)
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings


def check_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Optional[str] = "training",
    known_keys: Iterable[str] = (),
    skip_unrelated: bool = False,
) -> CheckResult:
    """Check a config held in memory; never raises for bad input.

    ``known_keys`` are the host trainer's own keys in the section (never
    flagged as look-alikes). With ``skip_unrelated``, a file with neither the
    section nor any rollout-like key in its top two levels is not a training
    config: the result is ``skipped`` and has no issues.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    known = key_set(known_keys)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_CONFIG_BYTES:
        message = _too_big(len(raw))
        return CheckResult(source, None, [ConfigIssue(source, 1, 1, "", message, "file")], {})
    issues: list[ConfigIssue] = []

    def add(pos: Pos, location: str, message: str, kind: str) -> None:
        issues.append(ConfigIssue(source, pos[0], pos[1], location, message, kind))

    path = section_path(section)
    try:
        text = decode(raw)
        parsed = parse(text, format, max(2, len(path) + 1))
    except ParseProblem as problem:
        if skip_unrelated and _unrelated_text(raw.decode("utf-8", "replace"), path):
            return CheckResult(source, None, [], {}, skipped=True)
        add(problem.pos, "", problem.message, problem.kind)
        return CheckResult(source, None, issues, {})
    root = parsed.root
    path = section_path(section, root)
    if skip_unrelated and _unrelated(root, path):
        return CheckResult(source, None, [], parsed.keys, skipped=True)
    for pos, location, message, kind in parsed.problems:
        add(pos, location, message, kind)
    section_value: Any = root
    if not isinstance(root, dict):
        got = "an empty file" if root is None else type(root).__name__
        message = f"the file must hold a mapping of settings, got {got}"
        add(parsed.root_pos, "", message, "structure")
        section_value = None
    for depth, part in enumerate(path, 1):
        if not isinstance(section_value, dict):
            break
        name = ".".join(path[:depth])
        if part not in section_value:
            at = parsed.keys.get(path[: depth - 1], (parsed.root_pos,))[0]
            add(
                at,
                name,
                f"section {name!r} is missing (expected a mapping of training settings)",
                "missing",
            )
            section_value = None
            break
        section_value = section_value[part]
        if not isinstance(section_value, dict):
            pos = parsed.keys.get(path[:depth], (parsed.root_pos, parsed.root_pos))[1]
            got = "null" if section_value is None else type(section_value).__name__
            add(pos, name, f"section must be a mapping, got {got}", "structure")
    settings = None
    warnings: list[ConfigIssue] = []
    if isinstance(section_value, dict):
        settings, found, warnings = _settings_issues(source, parsed, path, section_value, known)
        issues.extend(found)
    if issues:
        settings = None
    return CheckResult(
        source, settings, sorted(issues, key=_order), parsed.keys, sorted(warnings, key=_order)
    )


def _order(issue: ConfigIssue) -> tuple[int, int]:
    return (issue.line, issue.col)


def load_config_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Optional[str] = "training",
    known_keys: Iterable[str] = (),
) -> RolloutSettings:
    """Like :func:`load_config`, for text already in memory (``source`` names it)."""
    raw = data if isinstance(data, bytes) else data.encode()
    return _load(source, raw, format, section, known_keys)


_FILE_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(mode: int) -> Optional[str]:
    if stat.S_ISREG(mode):
        return None
    for test, name in _FILE_TYPES:
        if test(mode):
            return f"cannot read file: it is {name}, not a regular file"
    return "cannot read file: not a regular file"


def _read_config(name: str) -> Union[bytes, ConfigIssue]:
    """The bytes of a regular file of at most ``MAX_CONFIG_BYTES``, or the issue.

    The path is looked at with ``stat`` before it is opened, and opened
    non-blocking, so a FIFO or device never blocks the caller; the open file
    is checked again (it may have been swapped in between).
    """

    def unreadable(message: str) -> ConfigIssue:
        return ConfigIssue(name, 1, 1, "", message, "unreadable")

    try:
        info = os.stat(name)
        problem = _not_regular(info.st_mode)
        if problem is not None:
            return unreadable(problem)
        if info.st_size > MAX_CONFIG_BYTES:
            return ConfigIssue(name, 1, 1, "", _too_big(info.st_size), "file")
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        fd = os.open(name, flags)
        with os.fdopen(fd, "rb") as handle:
            problem = _not_regular(os.fstat(handle.fileno()).st_mode)
            if problem is not None:
                return unreadable(problem)
            return handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        return unreadable(f"cannot read file: {exc.strerror or exc}")


def _too_big(size: int) -> str:
    return f"larger than the {MAX_CONFIG_BYTES:,}-byte limit ({size:,} bytes)"


_SCAN_LIMIT = 256 * 1024 * 1024
_ROLLOUT_BYTES = re.compile(rb"(?i)rol+out")


def _big_and_unrelated(name: str, section: Optional[str]) -> bool:
    """Whether a file over the size limit names neither the section nor a rollout.

    Such files (``package-lock.json``, data files) are not training configs,
    so ``skip_unrelated`` skips them instead of reporting their size. The
    bytes are searched in chunks, never parsed, up to ``_SCAN_LIMIT``.
    """
    words = [_ROLLOUT_BYTES]
    path = section_path(section)
    if path:
        words.append(re.compile(re.escape(path[0].encode("utf-8"))))
    seen = 0
    tail = b""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        with os.fdopen(os.open(name, flags), "rb") as handle:
            if _not_regular(os.fstat(handle.fileno()).st_mode) is not None:
                return False
            while True:
                chunk = handle.read(1024 * 1024)
                if not chunk:
                    return True
                seen += len(chunk)
                window = tail + chunk
                if any(word.search(window) for word in words) or seen > _SCAN_LIMIT:
                    return False
                tail = window[-64:]
    except OSError:
        return False


def _source_beside(result: CheckResult, name: str) -> None:
    """Read a relative ``rollout_source`` from the config file's directory."""
    settings = result.settings
    if settings is None or settings.rollout_source is None:
        return
    if os.path.isabs(settings.rollout_source):
        return
    base = os.path.dirname(os.path.abspath(name))
    joined = os.path.normpath(os.path.join(base, settings.rollout_source))
    result.settings = settings.model_copy(update={"rollout_source": joined})


def check_file(
    path: Union[str, os.PathLike[str]],
    *,
    section: Optional[str] = "training",
    known_keys: Iterable[str] = (),
    skip_unrelated: bool = False,
) -> CheckResult:
    """Check one config file; never raises for bad input.

    A relative ``rollout_source`` in the file is taken relative to the
    file's own directory (the settings hold the joined path). ``known_keys``
    and ``skip_unrelated``: see :func:`check_bytes`.
    """
    name = os.fspath(path)
    fmt = format_for_suffix(name)
    if fmt is None:
        try:
            not_regular = _not_regular(os.stat(name).st_mode)
        except OSError:
            not_regular = None  # missing: its type is the first problem to name
        if not_regular is not None:  # a folder: a usage error, as for any unreadable path
            return CheckResult(
                name, None, [ConfigIssue(name, 1, 1, "", not_regular, "unreadable")], {}
            )
        suffix = os.path.splitext(name)[1] or "(none)"
        message = f"unsupported file type {suffix} (expected .yaml, .yml, .json or .toml)"
        return CheckResult(name, None, [ConfigIssue(name, 1, 1, "", message, "file")], {})
    data = _read_config(name)
    if isinstance(data, ConfigIssue):
        if skip_unrelated and data.kind == "file" and _big_and_unrelated(name, section):
            return CheckResult(name, None, [], {}, skipped=True)  # a lock file, a dataset
        return CheckResult(name, None, [data], {})
    result = check_bytes(
        data,
        format=fmt,
        source=name,
        section=section,
        known_keys=known_keys,
        skip_unrelated=skip_unrelated,
    )
    _source_beside(result, name)
    return result


def load_config(
    path: Union[str, os.PathLike[str]],
    *,
    section: Optional[str] = "training",
    known_keys: Iterable[str] = (),
) -> RolloutSettings:
    """Load and validate the rollout settings of a ``.yaml``/``.yml``/``.json``/``.toml`` file.

    ``section`` names the key that holds the settings: a top-level key, a
    dotted path such as ``"trainer.rollout"``, or ``None`` for the top level.
    ``known_keys`` are the trainer's own keys, never taken for typos of ours.
    Raises :class:`ConfigError` listing every error. Warnings (the config is
    incomplete for the built-in adapter) do not raise: they are on the
    returned settings' ``rollout_warnings``, and positioned in
    :func:`check_file`'s ``CheckResult.warnings``.
    """
    result = check_file(path, section=section, known_keys=known_keys)
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings
