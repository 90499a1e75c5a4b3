"""``[tool.agent-rollout]`` in the nearest ``pyproject.toml``: how configs are checked.

One settings source for ``agent-rollout check`` (and so the pre-commit hook)
and the language server::

    [tool.agent-rollout]
    section = "trainer.rollout"     # the key holding the rollout keys ("" for the top level;
                                    # unset: "training" if the file has it, else the top level
                                    # when it holds rollout keys)
    strict = true                   # warnings fail too (the server shows them as errors)
    allow-keys = ["rollout_fn"]     # keys of the trainer's own that look like ours
    yaml-version = "1.2"            # how YAML is read: "1.1" (yaml.safe_load) or "1.2"
    skip-unrelated = true           # files that are not training configs are skipped

The file that counts for a config is the nearest ``pyproject.toml`` above it
(its own folder first) that has a ``[tool.agent-rollout]`` table, as ruff
finds its own; a ``pyproject.toml`` without the table is passed over. What a
caller says on top (command-line options, a language client's
``initializationOptions`` or ``workspace/configuration``) overrides it, key
by key (``merged``). Setting names are written in kebab case; a client may
use camel or snake case (``yamlVersion``, ``yaml_version``).

A setting that is unknown or of the wrong type is a ``ConfigError`` whose
issue (kind ``settings``) is placed at the setting in ``pyproject.toml``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Optional

from agent_rollout._errors import ConfigError, ConfigIssue, shown
from agent_rollout._limits import check_section
from agent_rollout._printable import found_path
from agent_rollout.config._document import AUTO_SECTION, Section, read_config_file
from agent_rollout.config._parse import YAML_VERSIONS, ParseProblem, decode, parse

__all__ = ["SETTINGS_TABLE", "CheckSettings", "find_settings", "read_settings", "settings_values"]

SETTINGS_TABLE = ("tool", "agent-rollout")
"""Where the settings are in ``pyproject.toml``."""

_NAMES = {
    "section": "section",
    "strict": "strict",
    "allow-keys": "allow_keys",
    "yaml-version": "yaml_version",
    "skip-unrelated": "skip_unrelated",
}


@dataclass(frozen=True)
class CheckSettings:
    """How configs are checked: ``check_file``/``check_bytes``'s options plus ``strict``.

    ``explicit`` names the settings a source gave (the rest are defaults), so
    a caller with another default (the language server skips unrelated files
    unless told otherwise) can tell them apart. ``origin`` is the
    ``pyproject.toml`` the settings came from, if any.
    """

    section: Section = AUTO_SECTION
    strict: bool = False
    allow_keys: tuple[str, ...] = ()
    yaml_version: str = "1.1"
    skip_unrelated: bool = False
    explicit: frozenset[str] = frozenset()
    origin: Optional[str] = None

    def check_options(self) -> dict[str, Any]:
        """The keyword arguments of ``check_file``/``check_bytes``."""
        return {
            "section": self.section,
            "known_keys": frozenset(self.allow_keys),
            "skip_unrelated": self.skip_unrelated,
            "yaml_version": self.yaml_version,
        }

    def merged(self, values: Mapping[str, Any]) -> CheckSettings:
        """These settings with ``values`` (checked by ``settings_values``) on top."""
        if not values:
            return self
        return replace(self, **values, explicit=self.explicit | frozenset(values))


def _canonical(name: str) -> Optional[str]:
    """The field a setting name means, in kebab, snake or camel case."""
    folded = name.replace("-", "").replace("_", "").lower()
    for written, field in _NAMES.items():
        if written.replace("-", "") == folded:
            return field
    return None


def _value_problem(field: str, value: Any) -> Optional[str]:
    if field in ("strict", "skip_unrelated"):
        return None if isinstance(value, bool) else f"must be true or false, got {shown(value)}"
    if field == "section":
        if not (value is None or isinstance(value, str)):
            return (
                "must be a string (a key or a dotted path; '' for the top level), "
                f"got {shown(value)}"
            )
        try:
            if value:  # '' is the top level
                check_section(value, "")
        except ValueError as exc:
            return str(exc)
        return None
    if field == "yaml_version":
        if value in YAML_VERSIONS:
            return None
        return (
            f"must be {' or '.join(repr(v) for v in YAML_VERSIONS)} (a string), got {shown(value)}"
        )
    if isinstance(value, (list, tuple)) and all(isinstance(key, str) for key in value):
        return None
    return f"must be a list of keys (strings), got {shown(value)}"


def settings_values(values: Mapping[Any, Any]) -> tuple[dict[str, Any], list[tuple[Any, str]]]:
    """``(checked values by field name, problems as (setting, message))`` of a settings table.

    Names may be kebab, snake or camel case; ``section = ""`` is the top level.
    """
    out: dict[str, Any] = {}
    problems: list[tuple[Any, str]] = []
    for name, value in values.items():
        field = _canonical(name) if isinstance(name, str) else None
        if field is None:
            close = difflib.get_close_matches(str(name), list(_NAMES), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(_NAMES)}"
            problems.append((name, f"unknown setting {shown(name)}{hint}"))
            continue
        problem = _value_problem(field, value)
        if problem is not None:
            problems.append((name, problem))
            continue
        if field == "section":
            value = value or None
        elif field == "allow_keys":
            value = tuple(value)
        out[field] = value
    return out, problems


def _issue(path: str, parsed: Any, key: tuple[Any, ...], message: str) -> ConfigIssue:
    line, col = parsed.locate(key)[1] if parsed is not None else (1, 1)
    where = ".".join(str(part) for part in key)
    return ConfigIssue(path, line, col, where, message, "settings")


def read_settings(path: str) -> Optional[CheckSettings]:
    """The settings of one ``pyproject.toml``; ``None`` when it has no ``[tool.agent-rollout]``.

    Raises ``ConfigError`` (kind ``settings``) for a file that cannot be read
    or parsed, a table that is not a table, and any bad setting. The file is
    read as a config file is (``read_config_file``): a regular file of at most
    ``MAX_CONFIG_BYTES``, its size looked at before it is read.
    """
    raw = read_config_file(path)
    # The file was found, not named: its issues name it relative to the current folder
    # when it is under it, as the configs checked are.
    where = found_path(path)
    if isinstance(raw, ConfigIssue):
        raise ConfigError([replace(raw, path=where, kind="settings")])
    try:
        # As a config file is decoded: ``not UTF-8: byte 0xff`` where the byte is.
        text = decode(raw)
        if "agent-rollout" not in text:
            return None  # most pyproject.toml files: not parsed at all
        parsed = parse(text, "toml", depth=3)
    except ParseProblem as problem:
        line, col = problem.pos
        raise ConfigError(
            [ConfigIssue(where, line, col, "", problem.message, "settings")]
        ) from None
    tool = parsed.root.get("tool")
    table = tool.get("agent-rollout") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        message = f"must be a table of settings, got {type(table).__name__}"
        raise ConfigError([_issue(where, parsed, SETTINGS_TABLE, message)])
    values, problems = settings_values(table)
    if problems:
        raise ConfigError(
            [_issue(where, parsed, (*SETTINGS_TABLE, name), message) for name, message in problems]
        )
    return CheckSettings(origin=path).merged(values)


_cache: dict[str, tuple[tuple[int, int], Optional[CheckSettings]]] = {}


def _cached(path: str) -> Optional[CheckSettings]:
    """``read_settings``, read again only when the file's size or mtime changed."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    stamp = (info.st_mtime_ns, info.st_size)
    hit = _cache.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    settings = read_settings(path)
    _cache[path] = (stamp, settings)
    return settings


def find_settings(start: str) -> CheckSettings:
    """The settings for a config at ``start`` (a file or folder): the nearest
    ``pyproject.toml`` with a ``[tool.agent-rollout]`` table, or the defaults.

    Raises ``ConfigError`` when that file's table holds a bad setting.
    """
    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            settings = _cached(candidate)
            if settings is not None:
                return settings
        parent = os.path.dirname(folder)
        if parent == folder:
            return CheckSettings()
        folder = parent
