"""The ``art`` backend: ART trajectories and groups as training rows (the ranking rule's input).

The rules are in :mod:`agent_rollout.backends.art`'s docstring: a row's
prompt is every message before the winning trajectory's first assistant
turn, its answer the text of the last one; the winner is picked by
:func:`~agent_rollout.backends._ranking.pick_reference`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from pydantic import BaseModel

from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import MAX_MESSAGE_DEPTH, MAX_ROLLOUT_ROWS
from agent_rollout.backends._ranking import BackendRows, Candidate, RolloutDrop, pick_reference

if TYPE_CHECKING:
    from art import Trajectory

__all__ = [
    "PROMPT_INDEX_KEY",
    "choice_message",
    "to_message",
    "trajectory_groups_to_rows",
    "trajectory_to_row",
    "type_name",
]

PROMPT_INDEX_KEY = "agent_rollout_prompt_index"
"""``TrajectoryGroup.metadata`` key that records which seed prompt a group ran."""


def type_name(value: object) -> str:
    return type(value).__name__


def _plain(value: Any, where: str, depth: int = 1) -> Any:
    """A JSON-like copy of one message value; pydantic objects are dumped."""
    if depth > MAX_MESSAGE_DEPTH:
        raise RolloutValueError(f"{where}: nested deeper than {MAX_MESSAGE_DEPTH} levels")
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RolloutValueError(f"{where}: non-finite float {value!r}")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise RolloutValueError(
                    f"{where}: keys must be str, got a key of type {type_name(key)!r}"
                )
            out[key] = _plain(item, f"{where}.{key}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise RolloutValueError(
        f"{where}: unsupported value of type {type_name(value)!r} "
        "(message values must be JSON-like)"
    )


def choice_message(item: Any) -> Optional[Any]:
    """The inner message of a ``Choice`` (live object or ART's dumped dict), else None."""
    if isinstance(item, Mapping):
        inner = item.get("message")
        if "role" not in item and isinstance(inner, Mapping):
            return inner  # a Choice serialised by ART (legacy JSONL, for_logging)
        return None
    return getattr(item, "message", None)


def _assistant_from_choice(message: Any, where: str) -> dict[str, Any]:
    if isinstance(message, Mapping):
        content, tool_calls = message.get("content"), message.get("tool_calls")
    else:
        content = getattr(message, "content", None)
        tool_calls = getattr(message, "tool_calls", None)
    out: dict[str, Any] = {"role": "assistant", "content": _plain(content, f"{where}.content")}
    if tool_calls:
        out["tool_calls"] = _plain(list(tool_calls), f"{where}.tool_calls")
    return out


def to_message(item: Any, where: str) -> dict[str, Any]:
    """One entry of ``messages_and_choices`` as a plain chat dict."""
    inner = choice_message(item)
    if inner is not None:
        return _assistant_from_choice(inner, where)
    if isinstance(item, Mapping):
        message: dict[str, Any] = _plain(item, where)
        if not isinstance(message.get("role"), str) or not message["role"]:
            raise RolloutValueError(f"{where}: a chat message needs a non-empty str 'role'")
        return message
    raise RolloutValueError(
        f"{where}: expected a chat message dict or an OpenAI Choice, got {type_name(item)!r}"
    )


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        )
    return ""


def _messages_of(trajectory: Any, where: str) -> list[dict[str, Any]]:
    items = getattr(trajectory, "messages_and_choices", None)
    if items is None or isinstance(items, (str, bytes, Mapping)):
        raise RolloutValueError(
            f"{where}: expected an art.Trajectory with messages_and_choices, "
            f"got {type_name(trajectory)!r}"
        )
    return [to_message(item, f"{where}: messages_and_choices[{i}]") for i, item in enumerate(items)]


def trajectory_to_row(trajectory: Trajectory, *, where: str = "trajectory") -> dict[str, Any]:
    """Turn one ``art.Trajectory`` into ``{"prompt": [messages], "answer"?: str}``.

    ``where`` prefixes every error message (``"group 2 trajectory 1"``, say).
    Raises ``ValueError`` when the trajectory has no message before its first
    assistant turn, or holds something that is not a chat message.
    """
    messages = _messages_of(trajectory, where)
    first = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), len(messages))
    if first == 0:
        what = "has no messages" if not messages else "opens with an assistant turn"
        raise RolloutValueError(
            f"{where}: {what}; a row needs at least one message (system or user) "
            "before the first assistant turn to use as its prompt"
        )
    row: dict[str, Any] = {"prompt": messages[:first]}
    replies = [m for m in messages[first:] if m["role"] == "assistant"]
    answer = _text_of(replies[-1]) if replies else ""
    if answer:
        row["answer"] = answer
    return row


def _iter_groups(groups: Any) -> Iterable[tuple[int, Any, Sequence[Any]]]:
    """Yield ``(position, group or None, trajectories)``; a bare Trajectory is a group of one."""
    from art import Trajectory, TrajectoryGroup

    if isinstance(groups, (Trajectory, TrajectoryGroup)):
        groups = [groups]
    elif isinstance(groups, (str, bytes, Mapping)) or not isinstance(groups, Iterable):
        raise RolloutValueError(
            "expected an art.Trajectory, an art.TrajectoryGroup or a list of them, "
            f"got {type_name(groups)!r}"
        )
    for index, item in enumerate(groups):
        if isinstance(item, Trajectory):
            yield index, None, [item]
        elif isinstance(item, TrajectoryGroup):
            if item.exceptions:
                first = item.exceptions[0]
                raise RolloutValueError(
                    f"group {index}: {len(item.exceptions)} rollout(s) raised instead of "
                    f"returning a trajectory (first: {first.type}: {first.message}); "
                    "refusing to drop them silently"
                )
            yield index, item, item.trajectories
        else:
            raise RolloutValueError(
                f"item {index}: expected an art.Trajectory or art.TrajectoryGroup, "
                f"got {type_name(item)!r}"
            )


def trajectory_groups_to_rows(groups: Any, *, backend: Optional[str] = None) -> BackendRows:
    """One row per group: the best-rewarded trajectory's prompt and answer.

    Accepts one object or an iterable of them (a bare Trajectory counts as a
    group of one). Rows come in group order; a group's prompt index is the
    ``PROMPT_INDEX_KEY`` its metadata records, else its position. A group with
    no winner (see :func:`~agent_rollout.backends._ranking.pick_reference`) is
    left out and listed in ``drops``. A group that recorded exceptions is
    refused rather than silently shrunk; a non-finite reward is an error.
    With ``backend``, error messages start with ``rollout_backend '<backend>': ``.
    """
    rows: list[dict[str, Any]] = []
    drops: list[RolloutDrop] = []
    seen = 0
    named = f"rollout_backend {backend!r}: " if backend else ""
    for g, group, trajectories in _iter_groups(groups):
        index = _prompt_index(group, g)
        where = f"{named}prompt {index}"
        candidates = []
        for t, trajectory in enumerate(trajectories):
            seen += 1
            if seen > MAX_ROLLOUT_ROWS:
                raise RolloutValueError(
                    f"more than {MAX_ROLLOUT_ROWS} trajectories (MAX_ROLLOUT_ROWS)"
                )
            row = trajectory_to_row(trajectory, where=f"{where} rollout {t}")
            candidates.append(Candidate(t, getattr(trajectory, "reward", None), row))
        if not candidates:
            raise RolloutValueError(f"{where}: the group holds no trajectories")
        winner, drop = pick_reference(candidates, prompt_index=index, where=where)
        if drop is not None:
            drops.append(drop)
        elif winner is not None:
            rows.append(winner)
    return BackendRows(rows, drops)


def _prompt_index(group: Any, position: int) -> int:
    metadata = getattr(group, "metadata", None)
    recorded = metadata.get(PROMPT_INDEX_KEY) if isinstance(metadata, Mapping) else None
    return recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else position
