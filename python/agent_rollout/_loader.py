"""Loading training config files (YAML, JSON, TOML) with positioned errors.

Each parser turns the file into plain Python values plus the line and column
of every key of the top level and of the section, so that every error reads
``path:line:col: location: message`` (1-based). Problems with the file itself
(unreadable, not UTF-8, too big, bad syntax, duplicate keys, a root or section
that is not a mapping) come out the same way, all of them, never a traceback.

Limits (their values live in :mod:`agent_rollout._backends`):
- only regular files are read: a FIFO, socket or device path is refused
  before it is opened (so nothing can block on it), and files over
  ``MAX_CONFIG_BYTES`` are refused unread (their size is checked first);
- mappings and lists nest at most ``MAX_NESTING_DEPTH`` levels in every
  format (YAML aliases count as copies of what they name);
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
import reprlib
import stat
from bisect import bisect_right
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

from agent_rollout._backends import MAX_CONFIG_BYTES, MAX_NESTING_DEPTH, MAX_YAML_EXPANDED_NODES

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
    """``incomplete`` (a warning), ``unreadable`` (the file could not be read at all: missing, no
    permission, a directory or another non-regular file), ``file``,
    ``syntax``, ``duplicate``, ``structure``, ``unknown_key``, ``missing``,
    ``cross_field``, ``value`` or ``resolve``."""
    severity: str = "error"
    """``error`` (the config cannot be right) or ``warning`` (it is incomplete
    for the built-in adapter; a registered runner may complete it)."""

    def format(self) -> str:
        where = f"{self.location}: " if self.location else ""
        level = "warning: " if self.severity == "warning" else ""
        return f"{self.path}:{self.line}:{self.col}: {level}{where}{self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "location": self.location,
            "message": self.message,
            "kind": self.kind,
            "severity": self.severity,
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


class _Shown(reprlib.Repr):
    """``repr`` for messages: short, and safe on any value a parser can build."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = 60
        self.maxother = 60
        self.maxlist = self.maxtuple = 6
        self.maxdict = 4

    def repr_int(self, x: int, level: int) -> str:
        # repr() of an int past the interpreter's digit limit raises, and a
        # hex literal of any length builds one: describe it instead.
        if x.bit_length() > 200:
            return f"<int of {x.bit_length()} bits>"
        return repr(x)


_SHOWN = _Shown()


def shown(value: object) -> str:
    """A bounded ``repr`` of a value read from a file, for error messages."""
    try:
        return _SHOWN.repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"


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
    """Refuse alias bombs and deep nesting before any walk.

    Values are counted as if aliases were copies, and depth likewise (an
    alias of a deep list is as deep where it is used). Shared nodes are
    measured once each, bottom-up with an explicit stack, so this costs one
    visit per node written in the file and no recursion, however the
    aliases stack.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth)
    todo: list[tuple[Any, bool]] = [(root, False)]
    while todo:
        node, children_done = todo.pop()
        if id(node) in measured:
            continue
        if node.id == "sequence":
            children = node.value
        elif node.id == "mapping":
            children = [child for pair in node.value for child in pair]
        else:
            measured[id(node)] = (1, 0)
            continue
        if not children_done:
            todo.append((node, True))
            todo.extend((child, False) for child in children if id(child) not in measured)
            continue
        total, depth = 1, 0
        for child in children:
            child_total, child_depth = measured[id(child)]
            total += child_total
            depth = max(depth, child_depth)
            if total > MAX_YAML_EXPANDED_NODES:
                raise _Problem(
                    _mark(node),
                    f"the document expands to more than {MAX_YAML_EXPANDED_NODES:,} values "
                    "(aliases count as copies of what they name); refusing to expand it",
                )
        if depth + 1 > MAX_NESTING_DEPTH:
            raise _Problem(
                _mark(node),
                f"nested deeper than {MAX_NESTING_DEPTH} levels "
                "(aliases count as copies of what they name)",
            )
        measured[id(node)] = (total, depth + 1)


class _YamlBuilder:
    """Plain Python values from a composed (never constructed) YAML node graph."""

    def __init__(self, depth: int = 2) -> None:
        self.depth = depth  # key paths up to this length get positions
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
            where = ".".join((*(path or ()), key if isinstance(key, str) else shown(key)))
            if identity in first_seen:
                line, col = first_seen[identity]
                self.problems.append(
                    (
                        key_pos,
                        where,
                        f"duplicate key {shown(key)} (first at line {line}, column {col}); "
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

    def child_path(self, path: Optional[KeyPath], key: Any) -> Optional[KeyPath]:
        if path is None or len(path) >= self.depth or not isinstance(key, str):
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


def _parse_yaml(text: str, depth: int = 2) -> _Parsed:
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
    builder = _YamlBuilder(depth)
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


def _parse_json(text: str, depth: int = 2) -> _Parsed:
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
        elif top[0] and top[1] is not None and len(top[1]) < depth:
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
            try:
                parts.append(json.loads(part))
            except ValueError:  # an escape JSON lacks; the TOML parser judges it
                parts.append(part[1:-1])
        elif part.startswith("'"):
            parts.append(part[1:-1])
        else:
            parts.append(part)
    return tuple(parts)


def _toml_scan_value(text: str, start: int, state: dict[str, Any], where: Pos) -> None:
    """Follow brackets and multi-line strings from ``start`` to the end of a line.

    ``where`` is the (line, column) of ``text[0]``. ``state["base"]`` is the
    nesting level of the table that holds the value; an array or inline table
    that would nest past ``MAX_NESTING_DEPTH`` is refused here, before the
    TOML parser (which recurses once per level) sees it.
    """
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
            if state["base"] + state["depth"] > MAX_NESTING_DEPTH:
                raise _Problem(
                    (where[0], where[1] + i), f"nested deeper than {MAX_NESTING_DEPTH} levels"
                )
        elif char in "]}":
            state["depth"] -= 1
        i += 1


def _even_backslashes(text: str, end: int) -> bool:
    count = 0
    while end - count - 1 >= 0 and text[end - count - 1] == "\\":
        count += 1
    return count % 2 == 0


def _toml_module() -> Any:
    import importlib

    try:
        return importlib.import_module("tomllib")
    except ModuleNotFoundError:  # Python 3.10: the same parser, as a package
        return importlib.import_module("tomli")


def _depth(value: Any) -> int:
    """How deeply dicts and lists nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        todo.extend((child, level + 1) for child in children)
    return deepest


def _toml_deep_value(root: dict[str, Any], keys: dict[KeyPath, tuple[Pos, Pos]]) -> None:
    """Refuse nesting the line scanner cannot see (dotted keys, tables in arrays)."""
    if _depth(root) <= MAX_NESTING_DEPTH:
        return
    pos: Pos = (1, 1)
    for key, value in root.items():
        if 1 + _depth(value) > MAX_NESTING_DEPTH:
            pos = keys.get((key,), (pos, pos))[1]
            if isinstance(value, dict):
                for inner, inner_value in value.items():
                    if 2 + _depth(inner_value) > MAX_NESTING_DEPTH:
                        pos = keys.get((key, inner), (pos, pos))[1]
                        break
            break
    raise _Problem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels")


def _toml_scan(text: str, key_depth: int = 2) -> dict[KeyPath, tuple[Pos, Pos]]:
    """Key positions of a TOML text, and its bracket nesting checked."""
    keys: dict[KeyPath, tuple[Pos, Pos]] = {}
    table: Optional[KeyPath] = ()
    state: dict[str, Any] = {"string": None, "depth": 0, "base": 1}
    for number, line in enumerate(text.split("\n"), 1):
        if state["string"] is not None or state["depth"] > 0:
            _toml_scan_value(line, 0, state, (number, 1))
            continue
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped.startswith("["):
            header = stripped.startswith("[[")
            match = _TOML_KEY.match(stripped.lstrip("[").lstrip())
            table = None if header or match is None else _toml_key_parts(match.group(0))
            if table is not None and len(table) <= key_depth:
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
        parts = _toml_key_parts(match.group(0))
        if table is not None:
            path = (*table, *parts)
            for depth in range(len(table) + 1, min(len(path), key_depth) + 1):
                keys.setdefault(
                    path[:depth], ((number, indent + 1), (number, indent + value_at + 1))
                )
        # The value's container: the root, its tables, then the dotted key's parts.
        state["base"] = len(table or ()) + len(parts)
        _toml_scan_value(stripped, value_at, state, (number, indent + 1))
    return keys


def _parse_toml(text: str, depth: int = 2) -> _Parsed:
    tomllib = _toml_module()
    keys = _toml_scan(text, depth)
    try:
        root = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _TOML_AT.search(message)
        pos = (int(at.group(1)), int(at.group(2))) if at else (1, 1)
        if at:
            message = message[: at.start()]
        raise _Problem(pos, f"invalid TOML: {message}") from None
    except RecursionError:  # the scanner missed some nesting: still our limit
        raise _Problem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise _long_number(text, "TOML", exc) from None
    _toml_deep_value(root, keys)
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


def _parse(text: str, fmt: str, depth: int = 2) -> _Parsed:
    """Values and the positions of keys on paths up to ``depth`` long."""
    if fmt == "yaml":
        return _parse_yaml(text, depth)
    if fmt == "json":
        return _parse_json(text, depth)
    return _parse_toml(text, depth)


_LOCATED_AT_KEY = ("rollout_unknown_key", "rollout_cross_field")
_KINDS = {
    "rollout_unknown_key": "unknown_key",
    "rollout_missing": "missing",
    "rollout_cross_field": "cross_field",
}


def _settings_issues(
    source: str,
    parsed: _Parsed,
    prefix: KeyPath,
    section_value: Mapping[Any, Any],
    known_keys: Collection[str],
) -> tuple[Optional[RolloutSettings], list[ConfigIssue], list[ConfigIssue]]:
    """(settings or None, errors, warnings) of one section."""
    from pydantic import ValidationError

    from agent_rollout.config import RolloutSettings, section_warnings

    section_pos = parsed.keys[prefix][0] if prefix in parsed.keys else parsed.root_pos
    warnings = [
        ConfigIssue(
            source,
            section_pos[0],
            section_pos[1],
            ".".join((*prefix, warning.key)),
            warning.message,
            "incomplete",
            "warning",
        )
        for warning in section_warnings(section_value)
    ]
    try:
        settings = RolloutSettings.model_validate(
            section_value, context={"known_keys": frozenset(known_keys)}
        )
        return settings, [], warnings
    except ValidationError as exc:
        errors = exc.errors()
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
    from agent_rollout.config import lookalike_key

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
        text = _decode(raw)
        parsed = _parse(text, format, max(2, len(path) + 1))
    except _Problem as problem:
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


def key_set(keys: Iterable[str]) -> frozenset[str]:
    """``known_keys`` as a set; one string is one key (not its characters)."""
    return frozenset((keys,) if isinstance(keys, str) else keys)


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
