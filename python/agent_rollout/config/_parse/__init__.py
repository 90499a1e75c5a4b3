"""Config text (YAML, JSON, TOML) as plain values, with the position of every key.

This package knows nothing of rollouts. ``parse`` is the one entry point: it
hands the text to the reader of its format, one module each (``yaml_text``,
``json_text``, ``toml_text``), and each returns a ``Parsed`` (``positions``:
plain Python values plus the line and column of keys, so that every error can
read ``path:line:col: location: message``, 1-based). The keys on the paths
asked for (the top level and the section) are at once in ``Parsed.keys``, and
any key path or list index, at any depth, through ``Parsed.locate``. A problem
a reader cannot read past (bad syntax, not UTF-8, too deep, too big once
aliases are counted) is a ``ParseProblem`` with its position; problems it can
read past (duplicate keys) are collected on ``Parsed.problems``.

YAML is read as the trainers read it (``yaml.safe_load``'s values by default,
or the YAML 1.2 core schema; by libyaml where it reads a text as PyYAML's
pure-Python parser does, ``yaml_events``); JSON as ``json.loads`` reads it;
TOML as ``tomllib`` reads it. A syntax error is placed at its cause (a key
with no ``:``, a bracket or quote left open, a missing comma), which can be
lines before where the format's parser noticed it. In every format mappings and lists nest at most
``MAX_NESTING_DEPTH`` levels (:mod:`agent_rollout._limits`).
"""

from __future__ import annotations

import os
from typing import Optional

from agent_rollout.config._parse.json_text import parse_json
from agent_rollout.config._parse.positions import (
    KeyPath,
    Parsed,
    ParseProblem,
    Pos,
    location,
)
from agent_rollout.config._parse.toml_text import parse_toml
from agent_rollout.config._parse.yaml_text import (
    DEFAULT_YAML_VERSION,
    YAML_VERSIONS,
    check_yaml_version,
    parse_yaml,
    plain_scalar_value,
)

FORMATS = ("yaml", "json", "toml")
_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}


def format_for_suffix(path: str) -> Optional[str]:
    """``yaml``, ``json`` or ``toml`` for a file name, ``None`` when unknown."""
    return _SUFFIXES.get(os.path.splitext(path)[1].lower())


def decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise ParseProblem(
            (line, col), f"not UTF-8: byte 0x{data[exc.start]:02x}", "file"
        ) from None
    return text.removeprefix("\ufeff")


def parse(text: str, fmt: str, depth: int = 2, yaml_version: str = DEFAULT_YAML_VERSION) -> Parsed:
    """Values and the positions of keys on paths up to ``depth`` long (any path: ``locate``).

    ``yaml_version`` chooses the YAML reading (``YAML_VERSIONS``); JSON and
    TOML have one reading each (``json.loads``'s, ``tomllib``'s).
    """
    if fmt == "yaml":
        return parse_yaml(text, depth, yaml_version)
    check_yaml_version(yaml_version)
    if fmt == "json":
        return parse_json(text, depth)
    return parse_toml(text, depth)


__all__ = [
    "DEFAULT_YAML_VERSION",
    "FORMATS",
    "YAML_VERSIONS",
    "KeyPath",
    "ParseProblem",
    "Parsed",
    "Pos",
    "check_yaml_version",
    "decode",
    "format_for_suffix",
    "location",
    "parse",
    "plain_scalar_value",
]
