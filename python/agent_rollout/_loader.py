"""Loading training config files (YAML, JSON, TOML) with positioned errors.

Each parser turns the file into plain Python values plus the line and column
of every key of the top level and of the section, so that every error reads
``path:line:col: location: message`` (1-based). Problems with the file itself
(unreadable, not UTF-8, too big, bad syntax, duplicate keys, a root or section
that is not a mapping) come out the same way, all of them, never a traceback.

Limits:
- files over ``MAX_CONFIG_BYTES`` are refused unread;
- YAML is read as YAML 1.2 (core schema: ``yes``/``on`` are strings,
  ``1e3`` is a number), as the YAML editor extensions read it; only the core
  tags (str, int, float, bool, null, map, seq, merge ``<<``) are accepted, so
  no YAML tag can build a Python object;
- YAML aliases are never expanded: a document whose values, each alias
  counted as a full copy of what it names, add up to more than
  ``MAX_YAML_EXPANDED_NODES`` is refused ("billion laughs": nine levels of
  nine-way fan-out would be 387 million values). Recursive aliases and
  nesting deeper than ``MAX_NESTING_DEPTH`` are refused too;
- TOML positions come from a small line scanner: keys written inside an
  inline table (``training = {rollout_backend = "art"}``) are reported at the
  line of the table's own key.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

if TYPE_CHECKING:
    from agent_rollout.config import RolloutSettings

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_NESTING_DEPTH",
    "MAX_YAML_EXPANDED_NODES",
    "CheckResult",
    "ConfigError",
    "ConfigIssue",
    "check_bytes",
    "check_file",
    "format_for_suffix",
    "load_config",
    "load_config_bytes",
]

MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_YAML_EXPANDED_NODES = 1_000_000
MAX_NESTING_DEPTH = 200
FORMATS = ("yaml", "json", "toml")
_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}

Pos = tuple[int, int]
KeyPath = tuple[str, ...]


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in one config file, with its 1-based position."""

    path: str
    line: int
    col: int
    location: str
    """Dotted key path such as ``training.rollout_backend``; ``""`` for the file."""
    message: str
    kind: str
    """``file``, ``syntax``, ``duplicate``, ``structure``, ``unknown_key``,
    ``missing``, ``cross_field``, ``value`` or ``resolve``."""

    def format(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{self.path}:{self.line}:{self.col}: {where}{self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "location": self.location,
            "message": self.message,
            "kind": self.kind,
        }


class ConfigError(ValueError):
    """A config file is invalid; ``issues`` lists every problem found, in order."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = sorted(issues, key=lambda issue: (issue.path, issue.line, issue.col))
        super().__init__("\n".join(issue.format() for issue in self.issues))


class _Problem(Exception):
    """Internal: a parser stops at a problem it cannot read past."""

    def __init__(self, pos: Pos, message: str, kind: str = "syntax") -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.kind = kind


@dataclass
class _Parsed:
    """What every parser returns: values, key positions, and problems found."""

    root: Any
    root_pos: Pos
    keys: dict[KeyPath, tuple[Pos, Pos]]  # key path (depth 1 and 2) -> (key, value)
    problems: list[tuple[Pos, str, str, str]]  # (pos, location, message, kind)


# ---------------------------------------------------------------- YAML


def _yaml_loader_class() -> Any:
    import yaml
    from yaml.resolver import BaseResolver

    class CoreResolver(BaseResolver):
        """YAML 1.2 core schema: the implicit types editors resolve."""

        yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}

    core = [
        ("bool", r"(?:true|True|TRUE|false|False|FALSE)\Z", "tTfF"),
        ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z", "-+0123456789"),
        (
            "float",
            r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z",
            "-+0123456789.",
        ),
        ("null", r"(?:~|null|Null|NULL|)\Z", ["~", "n", "N", ""]),
        ("merge", r"<<\Z", "<"),
    ]
    for tag, pattern, first in core:
        CoreResolver.add_implicit_resolver(
            f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first)
        )

    if getattr(yaml, "__with_libyaml__", False):
        from yaml.cyaml import CParser

        class CLoader(CParser, CoreResolver):  # type: ignore[misc]
            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                CoreResolver.__init__(self)

        return CLoader
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class PyLoader(Reader, Scanner, Parser, Composer, CoreResolver):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)
            CoreResolver.__init__(self)

    return PyLoader


_TAG = "tag:yaml.org,2002:"


def _mark(node: Any) -> Pos:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _yaml_size(root: Any) -> None:
    """Refuse alias bombs before any walk: count values as if aliases were copies.

    Shared nodes are counted once each (memoised), so this costs one visit per
    node written in the file, however far the aliases would expand.
    """
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if node.id == "sequence":
            children = node.value
        elif node.id == "mapping":
            children = [child for pair in node.value for child in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_YAML_EXPANDED_NODES:
                raise _Problem(
                    _mark(node),
                    f"the document expands to more than {MAX_YAML_EXPANDED_NODES:,} values "
                    "(aliases count as copies of what they name); refusing to expand it",
                )
        sizes[id(node)] = total
        return total

    size(root)


class _YamlBuilder:
    """Plain Python values from a composed (never constructed) YAML node graph."""

    def __init__(self) -> None:
        self.keys: dict[KeyPath, tuple[Pos, Pos]] = {}
        self.problems: list[tuple[Pos, str, str, str]] = []
        self._done: dict[int, Any] = {}

    def scalar(self, node: Any) -> Any:
        tag, text = node.tag, node.value
        if tag == _TAG + "str":
            return text
        if tag == _TAG + "null":
            if text not in ("", "~", "null", "Null", "NULL"):
                raise _Problem(_mark(node), f"{text!r} is not a YAML null", "value")
            return None
        if tag == _TAG + "bool":
            if text not in ("true", "True", "TRUE", "false", "False", "FALSE"):
                raise _Problem(_mark(node), f"{text!r} is not a YAML bool", "value")
            return text.lower() == "true"
        try:
            if tag == _TAG + "int":
                if text[:2] in ("0o", "0x"):
                    return int(text[2:], 8 if text[1] == "o" else 16)
                return int(text)
            if tag == _TAG + "float":
                lowered = text.lower()
                if lowered.endswith(".inf"):
                    return -math.inf if lowered.startswith("-") else math.inf
                if lowered == ".nan":
                    return math.nan
                return float(text)
        except ValueError as exc:
            shown = text if len(text) <= 40 else text[:40] + "..."
            message = f"bad {tag[len(_TAG) :]} {shown!r}: {str(exc).split(';')[0]}"
            raise _Problem(_mark(node), message, "value") from None
        raise _Problem(_mark(node), f"unsupported YAML tag {tag!r}", "value")

    def value(self, node: Any, path: Optional[KeyPath]) -> Any:
        if node.id == "scalar":
            return self.scalar(node)
        # Shared nodes (aliases) become shared values, never copies.
        if id(node) in self._done:
            return self._done[id(node)]
        if node.id == "sequence":
            if node.tag != _TAG + "seq":
                raise _Problem(_mark(node), f"unsupported YAML tag {node.tag!r}", "value")
            items: list[Any] = []
            self._done[id(node)] = items
            items.extend(self.value(child, None) for child in node.value)
            return items
        if node.tag != _TAG + "map":
            raise _Problem(_mark(node), f"unsupported YAML tag {node.tag!r}", "value")
        result: dict[Any, Any] = {}
        self._done[id(node)] = result
        self.fill_mapping(node, result, path)
        return result

    def fill_mapping(self, node: Any, result: dict[Any, Any], path: Optional[KeyPath]) -> None:
        merged: dict[Any, Any] = {}
        first_seen: dict[tuple[type, Any], Pos] = {}
        for key_node, value_node in node.value:
            if key_node.id == "scalar" and key_node.tag == _TAG + "merge":
                self.merge_into(merged, value_node, path)
                continue
            if key_node.id != "scalar":
                raise _Problem(_mark(key_node), "mapping keys must be scalars", "structure")
            key = self.scalar(key_node)
            key_pos = _mark(key_node)
            identity = (type(key), key)
            where = ".".join((*(path or ()), str(key)))
            if identity in first_seen:
                line, col = first_seen[identity]
                self.problems.append(
                    (
                        key_pos,
                        where,
                        f"duplicate key {key!r} (first at line {line}, column {col}); "
                        "YAML would silently keep this one",
                        "duplicate",
                    )
                )
            first_seen[identity] = key_pos
            child_path = self.child_path(path, key)
            if child_path is not None:
                self.keys[child_path] = (key_pos, _mark(value_node))
            result[key] = self.value(value_node, child_path)
        for key, value in merged.items():
            result.setdefault(key, value)

    def merge_into(self, merged: dict[Any, Any], node: Any, path: Optional[KeyPath]) -> None:
        sources = node.value if node.id == "sequence" else [node]
        for source in sources:
            if source.id != "mapping":
                raise _Problem(_mark(source), "a '<<' merge takes a mapping or a list of them")
            values = self.value(source, None)
            for key_node, value_node in source.value:
                if key_node.id == "scalar" and key_node.tag != _TAG + "merge":
                    child = self.child_path(path, self.scalar(key_node))
                    if child is not None and child not in self.keys:
                        self.keys[child] = (_mark(key_node), _mark(value_node))
            for key, value in values.items():
                merged.setdefault(key, value)

    @staticmethod
    def child_path(path: Optional[KeyPath], key: Any) -> Optional[KeyPath]:
        if path is None or len(path) >= 2 or not isinstance(key, str):
            return None
        return (*path, key)


def _compose_yaml(text: str) -> Any:
    """The node graph of a single-document YAML text, composed without recursion.

    PyYAML's own composer recurses once per nesting level (the C one can crash
    the interpreter on very deep input), so the events are put together here,
    with the depth checked as they arrive. An anchor is usable only once its
    node is complete, so no node can contain itself.
    """
    from yaml import events, nodes

    loader = _yaml_loader_class()(text)
    anchors: dict[str, Any] = {}
    stack: list[list[Any]] = []  # [node, anchor, pending mapping key]
    root: Any = None
    documents = 0

    def attach(node: Any) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        frame = stack[-1]
        if isinstance(frame[0], nodes.SequenceNode):
            frame[0].value.append(node)
        elif frame[2] is None:
            frame[2] = node
        else:
            frame[0].value.append((frame[2], node))
            frame[2] = None

    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, events.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _Problem(
                        (event.start_mark.line + 1, event.start_mark.column + 1),
                        "expected a single YAML document, found another one here",
                    )
            elif isinstance(event, events.AliasEvent):
                if event.anchor not in anchors:
                    raise _Problem(
                        (event.start_mark.line + 1, event.start_mark.column + 1),
                        f"alias *{event.anchor} names no complete anchor "
                        "(undefined, or a node that would contain itself)",
                    )
                attach(anchors[event.anchor])
            elif isinstance(event, events.ScalarEvent):
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(nodes.ScalarNode, event.value, event.implicit)
                node = nodes.ScalarNode(
                    tag, event.value, event.start_mark, event.end_mark, event.style
                )
                if event.anchor is not None:
                    anchors[event.anchor] = node
                attach(node)
            elif isinstance(event, events.CollectionStartEvent):
                if len(stack) >= MAX_NESTING_DEPTH:
                    raise _Problem(
                        (event.start_mark.line + 1, event.start_mark.column + 1),
                        f"nested deeper than {MAX_NESTING_DEPTH} levels",
                    )
                is_map = isinstance(event, events.MappingStartEvent)
                kind = nodes.MappingNode if is_map else nodes.SequenceNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = loader.resolve(kind, None, event.implicit)
                stack.append(
                    [kind(tag, [], event.start_mark, None, event.flow_style), event.anchor, None]
                )
            elif isinstance(event, events.CollectionEndEvent):
                node, anchor, _ = stack.pop()
                node.end_mark = event.end_mark
                if anchor is not None:
                    anchors[anchor] = node
                attach(node)
    finally:
        loader.dispose()
    return root


def _parse_yaml(text: str) -> _Parsed:
    import yaml

    try:
        root = _compose_yaml(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = exc.problem or "invalid YAML"
        if "maximum nesting depth" in problem:
            # PyYAML >= 6.0.4 has a nesting limit of its own, and its scanner
            # (which reads ahead) can reach it before our composer sees the
            # level past MAX_NESTING_DEPTH: report it as our limit.
            raise _Problem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
        context = f" ({exc.context})" if exc.context else ""
        raise _Problem(pos, f"invalid YAML: {problem}{context}") from None
    except yaml.YAMLError as exc:
        raise _Problem((1, 1), f"invalid YAML: {exc}") from None
    if root is None:
        return _Parsed(None, (1, 1), {}, [])
    _yaml_size(root)
    builder = _YamlBuilder()
    value = builder.value(root, ())
    return _Parsed(value, _mark(root), builder.keys, builder.problems)


# ---------------------------------------------------------------- JSON

_JSON_TOKEN = re.compile(
    r'[ \t\r\n]*(?:([{}\[\]:,])|("(?:[^"\\]|\\.)*")|([^ \t\r\n{}\[\]:,"]+))', re.S
)


def _long_number(text: str, language: str, exc: ValueError) -> _Problem:
    digits = re.search(r"[0-9]{4000,}", text)
    pos = _Lines(text).pos(digits.start()) if digits else (1, 1)
    return _Problem(pos, f"invalid {language}: {str(exc).split(';')[0]}")


class _Lines:
    """Character offset -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, offset: int) -> Pos:
        line = bisect_right(self.starts, offset)
        return (line, offset - self.starts[line - 1] + 1)


def _parse_json(text: str) -> _Parsed:
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Problem((exc.lineno, exc.colno), f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise _Problem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise _long_number(text, "JSON", exc) from None
    lines = _Lines(text)
    keys: dict[KeyPath, tuple[Pos, Pos]] = {}
    problems: list[tuple[Pos, str, str, str]] = []
    # The text is valid JSON now, so a flat token walk is enough to place keys.
    # A frame: [is_object, path (None below depth 2), keys seen, expecting a key, key].
    stack: list[list[Any]] = []
    root_pos = (1, 1)
    for match in _JSON_TOKEN.finditer(text):
        punct, string, _scalar = match.groups()
        start = match.start(1 if punct else 2 if string else 3)
        top = stack[-1] if stack else None
        if top is not None and top[0] and top[3] and string is not None:
            key = json.loads(string)
            top[3], top[4] = False, (key, start)
            if key in top[2]:
                line, col = lines.pos(top[2][key])
                where = ".".join((*(top[1] or ()), key))
                problems.append(
                    (
                        lines.pos(start),
                        where,
                        f"duplicate key {key!r} (first at line {line}, column {col}); "
                        "JSON readers silently keep this one",
                        "duplicate",
                    )
                )
            top[2][key] = start
            continue
        if punct == ":":
            continue
        if punct == ",":
            if top is not None and top[0]:
                top[3] = True
            continue
        if punct in ("}", "]"):
            stack.pop()
            continue
        path: Optional[KeyPath] = None
        if top is None:
            path, root_pos = (), lines.pos(start)
        elif top[0] and top[1] is not None and len(top[1]) < 2:
            key, key_start = top[4]
            path = (*top[1], key)
            keys[path] = (lines.pos(key_start), lines.pos(start))
        if punct in ("{", "[") and len(stack) >= MAX_NESTING_DEPTH:
            raise _Problem(lines.pos(start), f"nested deeper than {MAX_NESTING_DEPTH} levels")
        if punct == "{":
            stack.append([True, path, {}, True, None])
        elif punct == "[":
            stack.append([False, None, {}, False, None])
    return _Parsed(root, root_pos, keys, problems)


# ---------------------------------------------------------------- TOML

_TOML_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_TOML_KEY = re.compile(rf"{_TOML_KEY_PART}(?:[ \t]*\.[ \t]*{_TOML_KEY_PART})*")
_TOML_PART = re.compile(_TOML_KEY_PART)
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _toml_key_parts(text: str) -> KeyPath:
    parts = []
    for match in _TOML_PART.finditer(text):
        part = match.group(0)
        if part.startswith('"'):
            parts.append(json.loads(part))
        elif part.startswith("'"):
            parts.append(part[1:-1])
        else:
            parts.append(part)
    return tuple(parts)


def _toml_scan_value(text: str, start: int, state: dict[str, Any]) -> None:
    """Follow brackets and multi-line strings from ``start`` to the end of a line."""
    i = start
    while i < len(text):
        quote = state["string"]
        if quote is not None:
            end = text.find(quote, i)
            if quote == '"""':
                while end > 0 and text[end - 1] == "\\" and not _even_backslashes(text, end):
                    end = text.find(quote, end + 1)
            if end < 0:
                return
            i = end + len(quote)
            state["string"] = None
            continue
        char = text[i]
        if char == "#":
            return
        if text.startswith(('"""', "'''"), i):
            state["string"] = text[i : i + 3]
            i += 3
            continue
        if char in "\"'":
            end = i + 1
            while end < len(text) and text[end] != char:
                end += 2 if char == '"' and text[end] == "\\" else 1
            i = end + 1
            continue
        if char in "[{":
            state["depth"] += 1
        elif char in "]}":
            state["depth"] -= 1
        i += 1


def _even_backslashes(text: str, end: int) -> bool:
    count = 0
    while end - count - 1 >= 0 and text[end - count - 1] == "\\":
        count += 1
    return count % 2 == 0


def _parse_toml(text: str) -> _Parsed:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the same parser, published as tomli (a dependency on 3.10)
        import tomli as tomllib

    try:
        root = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _TOML_AT.search(message)
        pos = (int(at.group(1)), int(at.group(2))) if at else (1, 1)
        if at:
            message = message[: at.start()]
        raise _Problem(pos, f"invalid TOML: {message}") from None
    except ValueError as exc:  # an integer too long to convert
        raise _long_number(text, "TOML", exc) from None
    keys: dict[KeyPath, tuple[Pos, Pos]] = {}
    table: Optional[KeyPath] = ()
    state: dict[str, Any] = {"string": None, "depth": 0}
    for number, line in enumerate(text.split("\n"), 1):
        if state["string"] is not None or state["depth"] > 0:
            _toml_scan_value(line, 0, state)
            continue
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped.startswith("["):
            header = stripped.startswith("[[")
            match = _TOML_KEY.match(stripped.lstrip("[").lstrip())
            table = None if header or match is None else _toml_key_parts(match.group(0))
            if table is not None and len(table) <= 2:
                offset = indent + stripped.index(match.group(0)) if match else indent
                keys.setdefault(table, ((number, offset + 1), (number, offset + 1)))
            continue
        match = _TOML_KEY.match(stripped)
        if match is None or not stripped or stripped.startswith("#"):
            continue
        rest = stripped[match.end() :]
        eq = len(rest) - len(rest.lstrip(" \t"))
        if not rest[eq:].startswith("="):
            continue
        value_at = match.end() + eq + 1
        value_at += len(stripped[value_at:]) - len(stripped[value_at:].lstrip(" \t"))
        if table is not None:
            path = (*table, *_toml_key_parts(match.group(0)))
            for depth in range(len(table) + 1, min(len(path), 2) + 1):
                keys.setdefault(
                    path[:depth], ((number, indent + 1), (number, indent + value_at + 1))
                )
        _toml_scan_value(stripped, value_at, state)
    return _Parsed(root, (1, 1), keys, [])


# ---------------------------------------------------------------- the loader


def format_for_suffix(path: str) -> Optional[str]:
    """``yaml``, ``json`` or ``toml`` for a file name, ``None`` when unknown."""
    return _SUFFIXES.get(os.path.splitext(path)[1].lower())


def _decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise _Problem((line, col), f"not UTF-8: byte 0x{data[exc.start]:02x}", "file") from None
    return text.removeprefix("\ufeff")


def _parse(text: str, fmt: str) -> _Parsed:
    if fmt == "yaml":
        return _parse_yaml(text)
    if fmt == "json":
        return _parse_json(text)
    return _parse_toml(text)


_LOCATED_AT_KEY = ("rollout_unknown_key", "rollout_cross_field")
_KINDS = {
    "rollout_unknown_key": "unknown_key",
    "rollout_missing": "missing",
    "rollout_cross_field": "cross_field",
}


def _settings_issues(
    source: str, parsed: _Parsed, section: Optional[str], section_value: Mapping[Any, Any]
) -> tuple[Optional[RolloutSettings], list[ConfigIssue]]:
    from pydantic import ValidationError

    from agent_rollout.config import RolloutSettings

    try:
        return RolloutSettings.model_validate(section_value), []
    except ValidationError as exc:
        errors = exc.errors()
    prefix: KeyPath = (section,) if section is not None else ()
    section_pos = parsed.keys[prefix][0] if prefix in parsed.keys else parsed.root_pos
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
            message = f"{message} (got {error['input']!r})"
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
    return None, issues


@dataclass
class CheckResult:
    """What checking one file found: the settings (when valid) and every issue."""

    source: str
    settings: Optional[RolloutSettings]
    issues: list[ConfigIssue]
    key_positions: dict[KeyPath, tuple[Pos, Pos]]
    """``(key, value)`` positions of the top-level and section keys."""


def _load(source: str, data: bytes, fmt: str, section: Optional[str]) -> RolloutSettings:
    result = check_bytes(data, format=fmt, source=source, section=section)
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings


def check_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Optional[str] = "training",
) -> CheckResult:
    """Check a config held in memory; never raises for bad input."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_CONFIG_BYTES:
        message = f"larger than the {MAX_CONFIG_BYTES:,}-byte limit"
        return CheckResult(source, None, [ConfigIssue(source, 1, 1, "", message, "file")], {})
    issues: list[ConfigIssue] = []

    def add(pos: Pos, location: str, message: str, kind: str) -> None:
        issues.append(ConfigIssue(source, pos[0], pos[1], location, message, kind))

    try:
        parsed = _parse(_decode(raw), format)
    except _Problem as problem:
        add(problem.pos, "", problem.message, problem.kind)
        return CheckResult(source, None, issues, {})
    for pos, location, message, kind in parsed.problems:
        add(pos, location, message, kind)
    root = parsed.root
    section_value: Any = root
    if not isinstance(root, dict):
        got = "an empty file" if root is None else type(root).__name__
        message = f"the file must hold a mapping of settings, got {got}"
        add(parsed.root_pos, "", message, "structure")
    elif section is not None:
        if section not in root:
            add(
                parsed.root_pos,
                section,
                f"section {section!r} is missing (expected a mapping of training settings)",
                "missing",
            )
            section_value = None
        else:
            section_value = root[section]
            if not isinstance(section_value, dict):
                pos = parsed.keys.get((section,), (parsed.root_pos, parsed.root_pos))[1]
                got = "null" if section_value is None else type(section_value).__name__
                add(pos, section, f"section must be a mapping, got {got}", "structure")
    settings = None
    if isinstance(section_value, dict):
        settings, found = _settings_issues(source, parsed, section, section_value)
        issues.extend(found)
    if issues:
        settings = None
    return CheckResult(source, settings, sorted(issues, key=_order), parsed.keys)


def _order(issue: ConfigIssue) -> tuple[int, int]:
    return (issue.line, issue.col)


def load_config_bytes(
    data: Union[bytes, str],
    *,
    format: str = "yaml",
    source: str = "<stdin>",
    section: Optional[str] = "training",
) -> RolloutSettings:
    """Like :func:`load_config`, for text already in memory (``source`` names it)."""
    return _load(source, data if isinstance(data, bytes) else data.encode(), format, section)


def check_file(
    path: Union[str, os.PathLike[str]], *, section: Optional[str] = "training"
) -> CheckResult:
    """Check one config file; never raises for bad input."""
    name = os.fspath(path)
    fmt = format_for_suffix(name)
    if fmt is None:
        suffix = os.path.splitext(name)[1] or "(none)"
        message = f"unsupported file type {suffix} (expected .yaml, .yml, .json or .toml)"
        return CheckResult(name, None, [ConfigIssue(name, 1, 1, "", message, "file")], {})
    try:
        with open(name, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        issue = ConfigIssue(name, 1, 1, "", f"cannot read file: {reason}", "file")
        return CheckResult(name, None, [issue], {})
    return check_bytes(data, format=fmt, source=name, section=section)


def load_config(
    path: Union[str, os.PathLike[str]], *, section: Optional[str] = "training"
) -> RolloutSettings:
    """Load and validate the rollout settings of a ``.yaml``/``.yml``/``.json``/``.toml`` file.

    ``section`` names the top-level key that holds the settings (``None``: the
    top level itself). Raises :class:`ConfigError` listing every problem.
    """
    result = check_file(path, section=section)
    if result.settings is None:
        raise ConfigError(result.issues)
    return result.settings
