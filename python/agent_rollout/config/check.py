"""Checking config files and sections: ``check_file``, ``check_bytes``, ``load_config``.

Reads a config file (``agent_rollout.config._document``: only a regular
file, at most ``MAX_CONFIG_BYTES``, looked at before it is opened so that a
FIFO or device never blocks), parses it with positions as the trainer reads
it (``agent_rollout.config._parse``), finds the section, validates it with
``RolloutSettings`` and places every error and warning at its
``path:line:col``. Problems with the file itself (unreadable, not UTF-8, too
big, bad syntax, duplicate keys, a root or section that is not a mapping)
come out the same way, all of them, never a traceback. A plain YAML scalar
on a ``rollout_*`` key that YAML 1.1 and YAML 1.2 read differently (``010``,
``yes``, ``1e3``) is a warning (kind ``yaml_version``) at the value.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from pydantic import ValidationError

from agent_rollout._errors import ConfigError, ConfigIssue, shown
from agent_rollout._limits import MAX_CONFIG_BYTES
from agent_rollout.config._document import (
    error_issues,
    not_regular,
    parse_config_bytes,
    read_config_file,
    section_path,
    too_big,
    unsupported_suffix,
    warning_issues,
)
from agent_rollout.config._lookalike import key_set, lookalike_key, nearest_key
from agent_rollout.config._models import RolloutSettings
from agent_rollout.config._parse import (
    DEFAULT_YAML_VERSION,
    FORMATS,
    YAML_VERSIONS,
    KeyPath,
    Parsed,
    Pos,
    check_yaml_version,
    format_for_suffix,
    location,
    plain_scalar_value,
)
from agent_rollout.config._rules import section_warnings

__all__ = [
    "YAML_VERSIONS",
    "CheckResult",
    "ConfigError",
    "ConfigIssue",
    "check_bytes",
    "check_file",
    "load_config",
    "load_config_bytes",
    "section_path",
    "version_warnings",
]


_STANDS_FOR_A_TYPO = object()
"""The value a key gets, for the warnings only, when the section holds a look-alike of it."""


def _settings_issues(
    source: str,
    parsed: Parsed,
    prefix: KeyPath,
    section_value: Mapping[Any, Any],
    known_keys: Collection[str],
) -> tuple[Optional[RolloutSettings], list[ConfigIssue], list[ConfigIssue]]:
    """(settings or None, errors, warnings) of one section."""
    section_pos = parsed.locate(prefix)[1]

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
        return settings, [], warning_issues(source, parsed, settings, under=prefix)
    except ValidationError as exc:
        errors = exc.errors()
    # A look-alike key is reported as the key it looks like: no second report
    # that this key is not set (``rollout_fucn`` is not also "rollout_func is not
    # set"). The key it looks like counts as set, by a value no rule reads (a
    # backend it stands for is no backend at all); a key the section does hold
    # keeps its own value, so every other warning stays as it was.
    meant = {
        nearest_key(str(error["loc"][0]))
        for error in errors
        if error["type"] == "rollout_unknown_key" and error["loc"]
    }
    stand_ins = {key: _STANDS_FOR_A_TYPO for key in meant if section_value.get(key) is None}
    warnings = warnings_of({**section_value, **stand_ins} if stand_ins else section_value)
    issues = error_issues(source, parsed, errors, under=prefix, data=section_value)
    return None, issues, warnings


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _reading(readable: bool, value: Any) -> str:
    return f"{type(value).__name__} {shown(value)}" if readable else "an error"


def version_warnings(
    source: str, parsed: Parsed, prefix: KeyPath, section_value: Mapping[Any, Any]
) -> list[ConfigIssue]:
    """Plain scalars on ``rollout_*`` keys that YAML 1.1 and YAML 1.2 read differently.

    ``rollout_max_steps: 010`` is 8 to ``yaml.safe_load`` (the trainers'
    reading) and 10 to a YAML 1.2 loader or editor: the value works in one
    place and not the other. Quoted or tagged values are read alike.
    """
    found = []
    for key in section_value:
        if not (isinstance(key, str) and key.startswith("rollout_")):
            continue
        plain = parsed.plain_scalar((*prefix, key))
        if plain is None:
            continue
        pos, text = plain
        old = plain_scalar_value(text, "1.1")
        new = plain_scalar_value(text, "1.2")
        if old[0] and new[0] and _same(old[1], new[1]):
            continue
        message = (
            f"{text!r} reads as {_reading(*old)} under YAML 1.1 (yaml.safe_load, as trainers "
            f"read it) and as {_reading(*new)} under YAML 1.2 (YAML editors and 1.2 loaders); "
            "quote it, or write it so that both read it alike"
        )
        found.append(
            ConfigIssue(
                source, pos[0], pos[1], location((*prefix, key)), message, "yaml_version", "warning"
            )
        )
    return found


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


def check_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Optional[str] = "training",
    known_keys: Iterable[str] = (),
    skip_unrelated: bool = False,
    yaml_version: str = DEFAULT_YAML_VERSION,
) -> CheckResult:
    """Check a config held in memory; never raises for bad input.

    ``known_keys`` are the host trainer's own keys in the section (never
    flagged as look-alikes). With ``skip_unrelated``, a file with neither the
    section nor any rollout-like key in its top two levels is not a training
    config: the result is ``skipped`` and has no issues. ``yaml_version``:
    how YAML is read, ``"1.1"`` (``yaml.safe_load``'s reading, what trainers
    use; the default) or ``"1.2"`` (for a host whose loader reads YAML 1.2).
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    check_yaml_version(yaml_version)
    known = key_set(known_keys)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_CONFIG_BYTES:
        message = too_big(len(raw))
        return CheckResult(source, None, [ConfigIssue(source, 1, 1, "", message, "file")], {})
    issues: list[ConfigIssue] = []

    def add(pos: Pos, where: str, message: str, kind: str) -> None:
        issues.append(ConfigIssue(source, pos[0], pos[1], where, message, kind))

    path = section_path(section)
    parsed = parse_config_bytes(raw, format, source, yaml_version, max(2, len(path) + 1))
    if isinstance(parsed, ConfigIssue):
        if skip_unrelated and _unrelated_text(raw.decode("utf-8", "replace"), path):
            return CheckResult(source, None, [], {}, skipped=True)
        return CheckResult(source, None, [parsed], {})
    root = parsed.root
    path = section_path(section, root)
    if skip_unrelated and _unrelated(root, path):
        return CheckResult(source, None, [], parsed.keys, skipped=True)
    for pos, where, message, kind in parsed.problems:
        add(pos, where, message, kind)
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
        if format == "yaml":
            warnings.extend(version_warnings(source, parsed, path, section_value))
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
    yaml_version: str = DEFAULT_YAML_VERSION,
) -> RolloutSettings:
    """Like :func:`load_config`, for text already in memory (``source`` names it)."""
    result = check_bytes(
        data,
        format=format,
        source=source,
        section=section,
        known_keys=known_keys,
        yaml_version=yaml_version,
    )
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings


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
            if not_regular(os.fstat(handle.fileno()).st_mode) is not None:
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
    yaml_version: str = DEFAULT_YAML_VERSION,
) -> CheckResult:
    """Check one config file; never raises for bad input.

    A relative ``rollout_source`` in the file is taken relative to the
    file's own directory (the settings hold the joined path). ``known_keys``,
    ``skip_unrelated`` and ``yaml_version``: see :func:`check_bytes`.
    """
    check_yaml_version(yaml_version)
    name = os.fspath(path)
    fmt = format_for_suffix(name)
    if fmt is None:
        if not os.path.exists(name):
            # Missing (or out of reach): that comes first, whatever the suffix, so a missing
            # .txt is "unreadable" (the command line's usage error) as a missing .yaml is.
            missing = read_config_file(name)
            if isinstance(missing, ConfigIssue):
                return CheckResult(name, None, [missing], {})
        return CheckResult(name, None, [unsupported_suffix(name)], {})
    data = read_config_file(name)
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
        yaml_version=yaml_version,
    )
    _source_beside(result, name)
    return result


def load_config(
    path: Union[str, os.PathLike[str]],
    *,
    section: Optional[str] = "training",
    known_keys: Iterable[str] = (),
    yaml_version: str = DEFAULT_YAML_VERSION,
) -> RolloutSettings:
    """Load and validate the rollout settings of a ``.yaml``/``.yml``/``.json``/``.toml`` file.

    ``section`` names the key that holds the settings: a top-level key, a
    dotted path such as ``"trainer.rollout"``, or ``None`` for the top level.
    ``known_keys`` are the trainer's own keys, never taken for typos of ours.
    YAML is read as ``yaml.safe_load`` reads it (YAML 1.1, what trainers
    use); ``yaml_version="1.2"`` reads it as a YAML 1.2 loader does.
    Raises :class:`ConfigError` listing every error. Warnings (the config is
    incomplete for the built-in adapter) do not raise: they are on the
    returned settings' ``rollout_warnings``, and positioned in
    :func:`check_file`'s ``CheckResult.warnings``.
    """
    result = check_file(path, section=section, known_keys=known_keys, yaml_version=yaml_version)
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings
