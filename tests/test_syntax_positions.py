"""A syntax error is placed at its cause, where the user is typing, in every format.

Each parser reports where it noticed the error, which can be lines after the
cause: a key with no ``:`` is noticed at the next token (a comment two lines
down), a bracket or quote left open at the end of the text or at the next
statement, a missing ``,`` at the next value. The position is the cause's.
"""

from __future__ import annotations

import pytest

from agent_rollout.config import check_bytes
from agent_rollout.config._parse import ParseProblem, parse


def position(text: str, fmt: str) -> tuple[int, int]:
    with pytest.raises(ParseProblem) as caught:
        parse(text, fmt)
    return caught.value.pos


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a key being typed: the key, not the comment where PyYAML gives up
        ("rollout_backend: art\nrollout_\n\n# note\nx: 1\n", (2, 1)),
        ("training:\n  rollout_backend: art\n  rollout_\n  x: 1\n", (3, 3)),
        # a quote left open: at the quote (not at the end of the text, or at a '---')
        ("a: 'abc\nb: 2\n", (1, 4)),
        ('a: 1\nb: "abc\n\nc: 2\n', (2, 4)),
        ("a: 'x\n---\n", (1, 4)),
        # a flow collection left open at the end of the text: at its bracket
        ("training: [1\n", (1, 11)),
        ("a: [1,\n\n", (1, 4)),
        ("a: {b: [1, 2], c: {d: 1,\n", (1, 19)),
        # where PyYAML's own mark is the cause, it stays
        ("a: b: c\n", (1, 5)),
        ("a: 1\n- b\n", (2, 1)),
        ('a: ["x" "y"]\n', (1, 9)),
        ("a: {b: 1]\n", (1, 9)),
        ("a:\n  b: 1\n c: 2\n", (3, 2)),
        ("a: |x\n", (1, 5)),
        ('a: "\\q"\n', (1, 6)),
    ],
)
def test_yaml_syntax_errors_are_placed_at_their_cause(text: str, expected: tuple[int, int]) -> None:
    assert position(text, "yaml") == expected


def test_the_language_server_shows_the_key_being_typed() -> None:
    issue = check_bytes("rollout_backend: art\nrollout_\n\n# note\nx: 1\n").issues[0]
    assert (issue.kind, issue.line, issue.col, issue.end_line, issue.end_col) == (
        "syntax",
        2,
        1,
        2,
        9,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a missing ',' or ':' belongs right after the previous token
        ('{"a": 1\n "b": 2}', (1, 8)),
        ('{"a": 1\n\n', (1, 8)),
        ('{"a"\n: 1, "b"\n 2}', (2, 9)),
        # a value missing after ':' at the end of the text: after the ':'
        ('{"a": \n', (1, 6)),
        # a trailing comma: the comma
        ('{"a": 1,\n}', (1, 8)),
        ("[1,\n]", (1, 3)),
        ("[1,]", (1, 3)),
        # on the same line, json's position is the cause
        ("[1 2]", (1, 4)),
        ('{"a" 1}', (1, 6)),
        ('{"a": tru}', (1, 7)),
        ('{"a": 1}\n{', (2, 1)),
    ],
)
def test_json_syntax_errors_are_placed_at_their_cause(text: str, expected: tuple[int, int]) -> None:
    assert position(text, "json") == expected


@pytest.mark.parametrize(
    ("text", "expected", "message"),
    [
        # an array left open: its bracket, not the next statement
        ("a = [1, 2\nb = 3\n", (1, 5), "Unclosed array"),
        ("x = 1\n  a = [\n  1,\n  [2, 3],\n  4\nb = 1\n", (2, 7), "Unclosed array"),
        ("a = [1\nb = [2\n", (1, 5), "Unclosed array"),
        ("a = {x = 1\nb = 2\n", (1, 5), "Unclosed inline table"),
        # at the end of the text: the string or bracket left open, else the end
        ('a = 1\nb = """abc\n\nc = 1\n', (2, 5), "Unterminated string"),
        ("a = [1,\n\n", (1, 5), "Invalid value"),
        ("a = 1\nb = ", (2, 5), "Invalid value"),
        # where tomllib's position is the cause, it stays
        ("a = 1\nrollout_\n\n# note\nx = 1\n", (2, 9), "Expected '=' after a key"),
        ("a = 1 2\n", (1, 7), "Expected newline or end of document"),
    ],
)
def test_toml_syntax_errors_are_placed_at_their_cause(
    text: str, expected: tuple[int, int], message: str
) -> None:
    with pytest.raises(ParseProblem) as caught:
        parse(text, "toml")
    assert caught.value.pos == expected
    assert caught.value.message.startswith(f"invalid TOML: {message}")
    assert "(at " not in caught.value.message
