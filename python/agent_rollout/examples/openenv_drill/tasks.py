"""The drill's rules as plain functions, shared by the server and the offline path.

Nothing here imports ``openenv``: the offline rollout builds the very same
rows without a server, and the environment calls these functions to serve and
grade its episodes, so both paths agree by construction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Optional

MAX_SEED_CHARS = 8_000
"""The longest seed prompt text a drill accepts."""

DRILL_INSTRUCTIONS = (
    "You are taking a drill. Read the task and reply with a single integer, nothing else."
)

# ``\u00d7`` is the multiplication sign. Operands are capped at nine digits, so
# every result fits comfortably in an int that any trainer's JSON reader carries.
_SUM_RE = re.compile(r"(-?\d{1,9})\s*([-+*\u00d7])\s*(-?\d{1,9})")

TaskKind = Literal["arithmetic", "word_count"]


@dataclass(frozen=True)
class DrillTask:
    """One episode: what to ask and the integer the reply must equal."""

    kind: TaskKind
    question: str
    reference: str


def _describe(seed: object) -> str:
    return type(seed).__name__


def seed_text(seed: object, label: str) -> str:
    """The text of one seed prompt, whichever shape it arrives in.

    Accepted: a string; a mapping whose ``prompt`` (or ``question``) is a
    string or a chat message list; a chat message list, whose last ``user``
    message with string content is used. Anything else, or an empty or
    oversized text, raises ``ValueError`` that starts with ``label`` (for
    example ``"seed prompt 3"``).
    """
    where = label
    value: object = seed
    if isinstance(seed, Mapping):
        key = "prompt" if "prompt" in seed else "question"
        if key not in seed:
            raise ValueError(f"{where}: mapping has neither a 'prompt' nor a 'question' key")
        value = seed[key]
        where = f"{where}: {key}"
    if isinstance(value, list):
        value = _last_user_text(value, where)
    if not isinstance(value, str):
        raise ValueError(
            f"{where}: expected a string, a chat message list or a mapping with 'prompt', "
            f"got {_describe(value)}"
        )
    text = value.strip()
    if not text:
        raise ValueError(f"{where}: text is empty")
    if len(text) > MAX_SEED_CHARS:
        raise ValueError(f"{where}: text has {len(text)} characters; the limit is {MAX_SEED_CHARS}")
    return text


def _last_user_text(messages: list[object], where: str) -> str:
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if not isinstance(message, Mapping):
            raise ValueError(
                f"{where}[{position}]: message must be a mapping, got {_describe(message)}"
            )
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    raise ValueError(f"{where}: message list has no 'user' message with string content")


def expression_in(text: str) -> Optional[str]:
    """The first ``a + b``, ``a - b`` or ``a * b`` (or ``a \u00d7 b``) in ``text``, else None."""
    match = _SUM_RE.search(text)
    return None if match is None else match[0]


def calculate(expression: str) -> str:
    """The integer result of one ``a + b``, ``a - b`` or ``a * b`` (``ValueError`` otherwise).

    Leading and trailing whitespace is allowed; anything else around the
    expression is not.
    """
    match = _SUM_RE.fullmatch(expression.strip())
    if match is None:
        raise ValueError(
            f"not an expression of the form 'a + b', 'a - b' or 'a * b': {expression!r}"
        )
    left, operator, right = int(match[1]), match[2], int(match[3])
    if operator == "+":
        return str(left + right)
    if operator == "-":
        return str(left - right)
    return str(left * right)


def count_words(text: str) -> str:
    """How many whitespace-separated words ``text`` has."""
    return str(len(text.split()))


@lru_cache(maxsize=4096)
def build_task(text: str) -> DrillTask:
    """The drill task for one (already checked) seed text. Pure and deterministic."""
    expression = expression_in(text)
    if expression is not None:
        return DrillTask(
            kind="arithmetic",
            question=f"{text}\n\nGive the result of {expression} as an integer.",
            reference=calculate(expression),
        )
    return DrillTask(
        kind="word_count",
        question=(
            f"How many words (separated by whitespace) does the text below contain?\n\n{text}"
        ),
        reference=count_words(text),
    )


def reference_answer(text: str) -> str:
    """The right answer to a seed text: the result of its first expression, else its word count.

    The one definition of "right" every bundled example shares: the drill's
    reference, the scripted policy's answer, the scripted judge's favourite
    and the reward of the ART example rollouts.
    """
    return build_task(text.strip()).reference


def grade_reply(task: DrillTask, reply: str) -> float:
    """1.0 when the reply, stripped, is the reference integer; 0.0 otherwise."""
    candidate = reply.strip()
    try:
        return 1.0 if int(candidate) == int(task.reference) else 0.0
    except ValueError:
        return 0.0


def task_messages(instructions: str, question: str) -> list[dict[str, str]]:
    """The chat prompt a trainer sees for one drill episode."""
    return [
        {"role": "system", "content": instructions},
        {"role": "user", "content": question},
    ]
