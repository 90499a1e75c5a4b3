"""Config text (YAML, JSON, TOML) as plain values, with the position of every key.

This module knows nothing of rollouts. Each parser turns the text into plain
Python values plus the line and column of every key on the paths asked for
(the top level and the section), so that every error can read
``path:line:col: location: message`` (1-based). A problem it cannot read past
(bad syntax, not UTF-8, too deep, too big once aliases are counted) is a
``ParseProblem`` with its position; problems it can read past (duplicate keys)
are collected on ``Parsed.problems``.

Limits (their values live in :mod:`agent_rollout._limits`):
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
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from agent_rollout._errors import shown
from agent_rollout._limits import MAX_NESTING_DEPTH, MAX_YAML_EXPANDED_NODES

FORMATS = ("yaml", "json", "toml")
_SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml"}

Pos = tuple[int, int]
KeyPath = tuple[str, ...]


class ParseProblem(Exception):
    """A parser stops at a problem it cannot read past: its position, message and kind."""

    def __init__(self, pos: Pos, message: str, kind: str = "syntax") -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.kind = kind


@dataclass
class Parsed:
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
                raise ParseProblem(
                    _mark(node),
                    f"the document expands to more than {MAX_YAML_EXPANDED_NODES:,} values "
                    "(aliases count as copies of what they name); refusing to expand it",
                )
        if depth + 1 > MAX_NESTING_DEPTH:
            raise ParseProblem(
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
                raise ParseProblem(_mark(node), f"{text!r} is not a YAML null", "value")
            return None
        if tag == _TAG + "bool":
            if text not in ("true", "True", "TRUE", "false", "False", "FALSE"):
                raise ParseProblem(_mark(node), f"{text!r} is not a YAML bool", "value")
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
            raise ParseProblem(_mark(node), message, "value") from None
        raise ParseProblem(_mark(node), f"unsupported YAML tag {tag!r}", "value")

    def value(self, node: Any, path: Optional[KeyPath]) -> Any:
        if node.id == "scalar":
            return self.scalar(node)
        # Shared nodes (aliases) become shared values, never copies.
        if id(node) in self._done:
            return self._done[id(node)]
        if node.id == "sequence":
            if node.tag != _TAG + "seq":
                raise ParseProblem(_mark(node), f"unsupported YAML tag {node.tag!r}", "value")
            items: list[Any] = []
            self._done[id(node)] = items
            items.extend(self.value(child, None) for child in node.value)
            return items
        if node.tag != _TAG + "map":
            raise ParseProblem(_mark(node), f"unsupported YAML tag {node.tag!r}", "value")
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
                raise ParseProblem(_mark(key_node), "mapping keys must be scalars", "structure")
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
                raise ParseProblem(_mark(source), "a '<<' merge takes a mapping or a list of them")
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
                    raise ParseProblem(
                        (event.start_mark.line + 1, event.start_mark.column + 1),
                        "expected a single YAML document, found another one here",
                    )
            elif isinstance(event, events.AliasEvent):
                if event.anchor not in anchors:
                    raise ParseProblem(
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
                    raise ParseProblem(
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


def _parse_yaml(text: str, depth: int = 2) -> Parsed:
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
            raise ParseProblem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
        context = f" ({exc.context})" if exc.context else ""
        raise ParseProblem(pos, f"invalid YAML: {problem}{context}") from None
    except yaml.YAMLError as exc:
        raise ParseProblem((1, 1), f"invalid YAML: {exc}") from None
    if root is None:
        return Parsed(None, (1, 1), {}, [])
    _yaml_size(root)
    builder = _YamlBuilder(depth)
    value = builder.value(root, ())
    return Parsed(value, _mark(root), builder.keys, builder.problems)


# ---------------------------------------------------------------- JSON

_JSON_TOKEN = re.compile(
    r'[ \t\r\n]*(?:([{}\[\]:,])|("(?:[^"\\]|\\.)*")|([^ \t\r\n{}\[\]:,"]+))', re.S
)


def _long_number(text: str, language: str, exc: ValueError) -> ParseProblem:
    digits = re.search(r"[0-9]{4000,}", text)
    pos = _Lines(text).pos(digits.start()) if digits else (1, 1)
    return ParseProblem(pos, f"invalid {language}: {str(exc).split(';')[0]}")


class _Lines:
    """Character offset -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, offset: int) -> Pos:
        line = bisect_right(self.starts, offset)
        return (line, offset - self.starts[line - 1] + 1)


def _parse_json(text: str, depth: int = 2) -> Parsed:
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseProblem((exc.lineno, exc.colno), f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ParseProblem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
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
            raise ParseProblem(lines.pos(start), f"nested deeper than {MAX_NESTING_DEPTH} levels")
        if punct == "{":
            stack.append([True, path, {}, True, None])
        elif punct == "[":
            stack.append([False, None, {}, False, None])
    return Parsed(root, root_pos, keys, problems)


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
                raise ParseProblem(
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
    raise ParseProblem(pos, f"nested deeper than {MAX_NESTING_DEPTH} levels")


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


def _parse_toml(text: str, depth: int = 2) -> Parsed:
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
        raise ParseProblem(pos, f"invalid TOML: {message}") from None
    except RecursionError:  # the scanner missed some nesting: still our limit
        raise ParseProblem((1, 1), f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as exc:  # an integer too long to convert
        raise _long_number(text, "TOML", exc) from None
    _toml_deep_value(root, keys)
    return Parsed(root, (1, 1), keys, [])


# ---------------------------------------------------------------- the loader


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


def parse(text: str, fmt: str, depth: int = 2) -> Parsed:
    """Values and the positions of keys on paths up to ``depth`` long."""
    if fmt == "yaml":
        return _parse_yaml(text, depth)
    if fmt == "json":
        return _parse_json(text, depth)
    return _parse_toml(text, depth)


__all__ = [
    "FORMATS",
    "KeyPath",
    "ParseProblem",
    "Parsed",
    "Pos",
    "decode",
    "format_for_suffix",
    "parse",
]
