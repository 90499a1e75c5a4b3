"""YAML text to PyYAML's node graph: which parser reads it, and our composer of its events.

PyYAML has two event parsers: the pure-Python one that ``yaml.safe_load``
runs, and a C one (libyaml, in PyYAML's wheels), several times faster. Our
readings are the pure parser's (``yaml_text``), so the C parser reads only
texts it cannot read otherwise: ``may_differ`` sends to the pure parser a
text holding what the two read apart, and the composer raises ``MayDiffer``
on the shapes libyaml reads apart inside a flow collection; libyaml's marks
at the end of a text with no final line break are made the pure parser's.
Whatever libyaml refuses is read again by the pure parser, so that refusals
are worded and placed as ``yaml.safe_load`` words and places them.
``tests/test_yaml_parsers.py`` holds the two readings side by side.

The composer (events to nodes) is ours, without recursion, for the limits:
nesting deeper than ``MAX_NESTING_DEPTH``, an alias to an incomplete node,
a second document. ``syntax_error_pos`` places a PyYAML syntax error at its
cause.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from agent_rollout._errors import shown
from agent_rollout._limits import MAX_NESTING_DEPTH, MAX_YAML_EXPANDED_NODES
from agent_rollout.config._parse.positions import ParseProblem, Pos

PURE_YAML_ENV = "AGENT_ROLLOUT_PURE_YAML"
"""Set to ``1`` to read every YAML text with PyYAML's pure-Python parser, even
where libyaml is present (read at each call; ``0`` or empty: the choice is ours)."""

LIBYAML_VERSIONS = ((0, 2, 5), (0, 2, 6))
"""The libyaml releases compared with the pure parser (``tests/test_yaml_parsers.py``
and a differential fuzz of a few hundred thousand texts each): 0.2.6, in PyYAML
6.0.4's wheels, and 0.2.5, in older wheels and Linux distributions. With another
release the pure parser reads every text, until it is compared too."""

_UNSHARED = ("\t", "\x85", "\ufeff", "\u2028", "\u2029", "\n%")


def may_differ(text: str) -> bool:
    """The text holds something the C parser may read otherwise than the pure one.

    A tab (libyaml takes it for a space in more places: ``a: b<tab>c``,
    ``[1,<tab>2]``); a BOM (libyaml skips one at the start of any line, the
    pure parser only at the start of the text); the line breaks the two count
    apart (NEL, LS, PS, a CR alone); a directive (``%YAML 1.1#``: libyaml reads
    it, the pure parser refuses), or any ``%`` starting a line; a block
    scalar's header with a comment straight after it (``|#``, ``>-#``: likewise).
    Plain string searches: a regular expression of the same costs 60 times more.
    """
    if text.startswith("%") or any(part in text for part in _UNSHARED):
        return True
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return True
    for indicator in "|>":
        at = text.find(indicator)
        while at >= 0:
            after = at + 1
            while after < len(text) and text[after] in "-+0123456789":
                after += 1
            if text.startswith("#", after):
                return True
            at = text.find(indicator, after)
    return False


class MayDiffer(Exception):
    """The C parser met a shape the pure one may read otherwise: read the text again with it."""


def pure_yaml_forced() -> bool:
    """``AGENT_ROLLOUT_PURE_YAML`` is set (and not ``0``): every text takes the pure parser."""
    return os.environ.get(PURE_YAML_ENV, "").strip() not in ("", "0")


def event_readers(resolver: Any) -> tuple[Any, Any]:
    """PyYAML's pure-Python event parser and its C one (or ``None``), each with ``resolver``.

    The pure one (reader, scanner, parser) is the one ``yaml.safe_load`` runs.
    """
    import yaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class PureEvents(Reader, Scanner, Parser, resolver):  # type: ignore[misc,valid-type]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            resolver.__init__(self)

    if not getattr(yaml, "__with_libyaml__", False):
        return PureEvents, None
    from yaml import _yaml

    if _yaml.get_version() not in LIBYAML_VERSIONS:
        return PureEvents, None

    class LibyamlEvents(_yaml.CParser, resolver):  # type: ignore[misc,valid-type]
        def __init__(self, stream: str) -> None:
            _yaml.CParser.__init__(self, stream)
            resolver.__init__(self)

    return PureEvents, LibyamlEvents


def compose(
    text: str,
    reader: Any,
    fast: bool,
    unique_anchors: bool,
    plain: set[int],
    stack: list[list[Any]],
    aliases: dict[tuple[int, int], Pos],
) -> tuple[Any, bool]:
    """The node graph of a single-document YAML text, composed without recursion.

    PyYAML's own composer recurses once per nesting level (the C one can crash
    the interpreter on very deep input), so the events are put together here,
    with the depth checked as they arrive. An anchor is usable only once its
    node is complete, so no node can contain itself. Under YAML 1.1 an anchor
    name may be given once, as PyYAML's composer requires. The ids of plain
    scalars whose tag was resolved (not written) go to ``plain``; ``stack``
    holds the collections still open (``[node, anchor, pending mapping key,
    is a sequence]``), so that a syntax error can be placed at the one it
    leaves unclosed. ``aliases`` gets where each alias used as a value is
    written (an alias's node is the anchored one, placed where the anchor is):
    a list item's under ``(id(list node), index)``, a mapping value's under
    ``(id((key node, value node)), -1)``, the pair PyYAML's constructor keeps
    (a ``<<`` merge moves pairs, never rebuilds them).

    Returns the root (``None``: no document) and whether ``yaml_text``'s size
    check has anything to check: an alias, or more nodes than ``MAX_YAML_EXPANDED_NODES``
    (with neither, the values are the nodes written, and their depth was
    checked here).

    ``reader`` is one of ``event_readers``'s two; ``fast``: it is the C parser,
    whose events raise ``MayDiffer`` where the pure parser could read the text
    otherwise, and whose marks are made the pure parser's (see
    ``_compose_events``). ``unique_anchors``: an anchor name may be given once.
    """
    loader = reader(text)
    try:
        # The loop is in a function of its own: see "Cleanup around loops" in
        # docs/architecture.md.
        return _compose_events(
            loader, unique_anchors, plain, stack, aliases, text if fast else None
        )
    finally:
        loader.dispose()


def _eof_mark(text: str) -> Any:
    """The pure parser's mark at the end of ``text``."""
    from yaml.error import Mark

    line_start = text.rfind("\n") + 1
    return Mark("<unicode string>", len(text), text.count("\n"), len(text) - line_start, None, None)


def _compose_events(
    loader: Any,
    unique_anchors: bool,
    plain: set[int],
    stack: list[list[Any]],
    aliases: dict[tuple[int, int], Pos],
    fast: Optional[str],
) -> tuple[Any, bool]:
    """``compose``'s work, on a loader its caller disposes of.

    ``fast`` is the text when the events are the C parser's. Where both parsers
    accept a text they give the same events but in these, handled here:

    - a scalar's style is ``''`` for plain (the pure parser's ``None``), an
      indentless block sequence's ``flow_style`` ``False`` (``None``): the
      nodes take ``None`` and ``bool(flow_style)`` from either;
    - with no line break at the end of the text, marks at its end (of the
      collections it closes, of an empty scalar there) are at column 0 of a
      line after the last: they are moved to the end of the last line;
    - in a flow collection, an empty scalar (``{a: , b}``, ``[? ]``) is placed
      at the next token where the pure parser places it after the ``:`` or
      ``?``; a tag ends at a ``,`` (``[!!str,b]``), where the pure parser reads
      on; a ``?`` may be part of a plain scalar (``[a?b]``) or of a ``? ]``: all
      ``MayDiffer``;
    - the non-specific tag ``!`` leaves a scalar's tag to the schema in the
      pure parser only: ``MayDiffer``.
    """
    from yaml import events, nodes

    scalar_event, alias_event = events.ScalarEvent, events.AliasEvent
    mapping_start, sequence_start = events.MappingStartEvent, events.SequenceStartEvent
    mapping_end, sequence_end = events.MappingEndEvent, events.SequenceEndEvent
    scalar_node, sequence_node, mapping_node = (
        nodes.ScalarNode,
        nodes.SequenceNode,
        nodes.MappingNode,
    )
    resolve = loader.resolve
    resolved: dict[tuple[str, Any], str] = {}  # (value, implicit) -> tag, for repeated scalars
    anchors: dict[str, Any] = {}
    named: dict[str, Pos] = {}
    root: Any = None
    documents = 0
    written = 0  # nodes
    aliased = False
    flow = 0  # flow collections open
    flow_from = 0  # where the outermost of them starts (a character offset)
    eof_line = -1  # the C parser's line past the last, where it marks the end of a text
    eof: Any = None  # with no line break at its end; the pure parser's mark there
    question = False
    if fast is not None:
        question = "?" in fast
        if not fast.endswith("\n"):
            eof_line = fast.count("\n") + 1
            eof = _eof_mark(fast)

    def attach(node: Any) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        frame = stack[-1]
        if frame[3]:
            frame[0].value.append(node)
        elif frame[2] is None:
            frame[2] = node
        else:
            frame[0].value.append((frame[2], node))
            frame[2] = None

    def name_anchor(event: Any) -> None:
        at = (event.start_mark.line + 1, event.start_mark.column + 1)
        if unique_anchors and event.anchor in named:
            line, col = named[event.anchor]
            raise ParseProblem(
                at,
                f"invalid YAML: found duplicate anchor {shown(event.anchor)} "
                f"(first at line {line}, column {col})",
            )
        named[event.anchor] = at

    while True:
        event = loader.get_event()
        if event is None:
            break
        kind = event.__class__
        if kind is scalar_event:
            tag, value, style = event.tag, event.value, event.style
            if fast is not None and (
                tag == "!" or (flow and (tag is not None or not (value or style)))
            ):
                raise MayDiffer
            if event.anchor is not None:
                name_anchor(event)
            if tag is None or tag == "!":
                implicit = event.implicit
                tag = resolved.get((value, implicit))
                if tag is None:
                    tag = resolved[value, implicit] = resolve(scalar_node, value, implicit)
            start, end = event.start_mark, event.end_mark
            if end.line == eof_line:
                end = eof
                if start.line == eof_line:
                    start = eof
            node = scalar_node(tag, value, start, end, style or None)
            written += 1
            if event.tag is None and not style:
                plain.add(id(node))
            if event.anchor is not None:
                anchors[event.anchor] = node
            if stack:  # attach(node), inline: the commonest event
                frame = stack[-1]
                if frame[3]:
                    frame[0].value.append(node)
                elif frame[2] is None:
                    frame[2] = node
                else:
                    frame[0].value.append((frame[2], node))
                    frame[2] = None
            else:
                root = node
        elif kind is mapping_start or kind is sequence_start:
            if len(stack) >= MAX_NESTING_DEPTH:
                raise ParseProblem(
                    (event.start_mark.line + 1, event.start_mark.column + 1),
                    f"nested deeper than {MAX_NESTING_DEPTH} levels",
                )
            tag = event.tag
            if event.flow_style:
                if fast is not None and (tag == "!" or (flow and tag is not None)):
                    raise MayDiffer
                if not flow:
                    flow_from = event.start_mark.index
                flow += 1
            elif fast is not None and tag == "!":
                raise MayDiffer
            if event.anchor is not None:
                name_anchor(event)
            is_sequence = kind is sequence_start
            node_kind = sequence_node if is_sequence else mapping_node
            if tag is None or tag == "!":
                tag = resolve(node_kind, None, event.implicit)
            node = node_kind(tag, [], event.start_mark, None, bool(event.flow_style))
            written += 1
            stack.append([node, event.anchor, None, is_sequence])
        elif kind is mapping_end or kind is sequence_end:
            node, anchor, _, _ = stack.pop()
            end = event.end_mark
            if end.line == eof_line:
                end = eof
            node.end_mark = end
            if node.flow_style:
                flow -= 1
                if question and not flow and "?" in fast[flow_from : end.index]:  # type: ignore[index]
                    raise MayDiffer
            if anchor is not None:
                anchors[anchor] = node
            attach(node)
        elif kind is alias_event:
            if event.anchor not in anchors:
                raise ParseProblem(
                    (event.start_mark.line + 1, event.start_mark.column + 1),
                    f"alias *{event.anchor} names no complete anchor "
                    "(undefined, or a node that would contain itself)",
                )
            aliased = True
            attach(anchors[event.anchor])
            if stack and (stack[-1][3] or stack[-1][2] is None):  # a list item, a value
                held = stack[-1][0].value
                at = (event.start_mark.line + 1, event.start_mark.column + 1)
                if stack[-1][3]:
                    aliases[id(stack[-1][0]), len(held) - 1] = at
                else:
                    aliases[id(held[-1]), -1] = at
        elif kind is events.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise ParseProblem(
                    (event.start_mark.line + 1, event.start_mark.column + 1),
                    "expected a single YAML document, found another one here",
                )
    return root, aliased or written > MAX_YAML_EXPANDED_NODES


# A syntax error found where the cause is not: a key with no ':' (the error is
# found at the next token, lines later), a quoted scalar left open (found at
# the end of the text or at the next '---').
_CAUSE_AT_CONTEXT = frozenset(
    (
        "could not find expected ':'",
        "found unexpected end of stream",
        "found unexpected document separator",
    )
)


def syntax_error_pos(exc: Any, stack: list[list[Any]], length: int) -> Pos:
    """Where the cause of a syntax error is: where PyYAML found it, or where it began.

    PyYAML gives a problem mark (where it found the error) and often a
    context mark (where the thing it was reading began). The problem mark is
    the cause, except when the text ran out or another line came before the
    thing was complete: then the context mark is (``rollout_\\n\\n# note\\n``:
    the key with no ``:`` on line 1, not the comment; ``[1,`` at the end of the
    text: the ``[``). An end of text with no context before it is placed at the
    innermost flow collection left open (``stack``).
    """
    problem, context = exc.problem_mark, exc.context_mark
    if problem is None:
        mark = context
    elif (
        context is not None
        and context.index < problem.index
        and (exc.problem in _CAUSE_AT_CONTEXT or problem.index >= length)
    ):
        mark = context
    elif problem.index >= length and any(frame[0].flow_style for frame in stack):
        mark = [frame[0] for frame in stack if frame[0].flow_style][-1].start_mark
    else:
        mark = problem
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
