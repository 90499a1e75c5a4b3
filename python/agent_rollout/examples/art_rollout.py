"""Deterministic ART rollout functions for ``rollout_backend: art`` and ``ruler``.

A training config names one of them with ``training.rollout_func``; the backend
calls it as ``fn(model, prompt)`` and expects one ``art.Trajectory`` back.

The "agent" adds up the integers in the question. It makes one ``add`` tool
call, reads the tool's reply and answers, so every trajectory holds what a real
ART rollout holds: plain dicts for the system, user and tool turns and OpenAI
``Choice`` objects for the turns the policy produced. No model is called:

- with ``model=None`` the final answer is the correct sum;
- with a :class:`ScriptedPolicy` as ``model`` the final answer is the policy's
  next scripted reply for that question, so rollouts of one prompt can differ
  (which is what a RULER judge ranks).

``rollout`` is sync and ``arollout`` async; both return the same trajectory.

``policy_rollout`` asks a real OpenAI-compatible policy instead: ``model`` is an
``art.Model`` whose ``openai_client()`` reaches it (``agent-rollout run`` builds
one from ``rollout_policy_model`` and ``rollout_policy_base_url``; the bundled
``scripted_servers`` policy stands in for a model on CPU). It plays the same
episode (question, ``add`` tool call, tool result, answer) and rewards the
trajectory 1.0 when the answer is the right sum, else 0.0.

A seed prompt may be a str, a list of chat messages, or a seed row
``{"prompt": str | messages}`` as in the bundled ``prompts.jsonl``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import Any, Optional

import art
from openai.types.chat import ChatCompletionMessage
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import (
    ChatCompletionMessageFunctionToolCall,
    Function,
)

__all__ = ["ADD_TOOL", "SYSTEM_PROMPT", "ScriptedPolicy", "arollout", "policy_rollout", "rollout"]

SYSTEM_PROMPT = "You add up the integers in the question. Use the add tool, then reply."


class ScriptedPolicy:
    """A stand-in policy: replies to each question from a fixed script, in turn.

    The k-th call for one question gets ``replies[k % len(replies)]``; counts are
    kept per question, so the order in which prompts run does not matter.
    """

    def __init__(self, replies: Sequence[str]) -> None:
        if not replies or not all(isinstance(r, str) for r in replies):
            raise ValueError("ScriptedPolicy needs a non-empty list of str replies")
        self._replies = list(replies)
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def reply(self, question: str) -> str:
        with self._lock:
            count = self._calls.get(question, 0)
            self._calls[question] = count + 1
        return self._replies[count % len(self._replies)]


def _opening(prompt: Any) -> list[dict[str, Any]]:
    """The messages the episode starts from: a str becomes system + user turns."""
    if isinstance(prompt, dict) and set(prompt) <= {"prompt", "answer"} and "prompt" in prompt:
        prompt = prompt["prompt"]  # a seed row, as run --prompts reads it
    if isinstance(prompt, str):
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) for m in prompt):
        return [dict(m) for m in prompt]
    raise ValueError(
        "prompt must be a str, a non-empty list of chat message dicts or a "
        '{"prompt": ...} seed row, '
        f"got {type(prompt).__name__}"
    )


def _question(opening: list[dict[str, Any]]) -> str:
    for message in reversed(opening):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    raise ValueError("prompt has no user message with str content")


def _choice(
    content: Optional[str], tool_call: Optional[ChatCompletionMessageFunctionToolCall]
) -> Choice:
    return Choice(
        index=0,
        finish_reason="tool_calls" if tool_call else "stop",
        message=ChatCompletionMessage(
            role="assistant",
            content=content,
            tool_calls=[tool_call] if tool_call else None,
        ),
    )


def rollout(model: Any, prompt: Any) -> art.Trajectory:
    """One deterministic episode for ``prompt`` (a str or a list of chat messages)."""
    opening = _opening(prompt)
    question = _question(opening)
    numbers = [int(n) for n in re.findall(r"-?\d+", question)]
    call = ChatCompletionMessageFunctionToolCall(
        id="call_add",
        type="function",
        function=Function(name="add", arguments=json.dumps({"numbers": numbers})),
    )
    total = str(sum(numbers))
    answer = model.reply(question) if isinstance(model, ScriptedPolicy) else total
    messages: list[Any] = [
        *opening,
        _choice(None, call),
        {"role": "tool", "tool_call_id": "call_add", "content": total},
        _choice(answer, None),
    ]
    trajectory = art.Trajectory(
        messages_and_choices=messages,
        reward=1.0 if answer == total else 0.0,
        metadata={"question": question},
    )
    return trajectory.finish()


async def arollout(model: Any, prompt: Any) -> art.Trajectory:
    """The async twin of :func:`rollout` (ART rollouts are usually coroutines)."""
    return rollout(model, prompt)


ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add up a list of integers.",
        "parameters": {
            "type": "object",
            "properties": {"numbers": {"type": "array", "items": {"type": "integer"}}},
            "required": ["numbers"],
        },
    },
}


def _tool_result(arguments: str) -> str:
    try:
        numbers = json.loads(arguments).get("numbers", [])
        return str(sum(int(n) for n in numbers))
    except (ValueError, TypeError, AttributeError) as exc:
        return f"error: {exc}"


async def policy_rollout(model: Any, prompt: Any) -> art.Trajectory:
    """One episode played by the policy behind ``model.openai_client()`` (an ``art.Model``)."""
    if not hasattr(model, "openai_client"):
        raise ValueError(
            "policy_rollout needs an art.Model with an inference endpoint as model "
            "(set rollout_policy_model and rollout_policy_base_url), "
            f"got {type(model).__name__}"
        )
    client = model.openai_client()
    name = getattr(model, "inference_model_name", None) or model.name
    opening = _opening(prompt)
    question = _question(opening)
    messages: list[Any] = list(opening)
    chat: list[Any] = list(opening)
    for _ in range(4):  # at most a few tool round trips
        completion = await client.chat.completions.create(
            model=name, messages=chat, tools=[ADD_TOOL]
        )
        choice = completion.choices[0]
        messages.append(choice)
        chat.append(choice.message.model_dump(exclude_none=True))
        calls = choice.message.tool_calls or []
        if not calls:
            break
        for call in calls:
            result = {
                "role": "tool",
                "tool_call_id": call.id,
                "content": _tool_result(call.function.arguments),
            }
            messages.append(result)
            chat.append(result)
    expected = str(sum(int(n) for n in re.findall(r"-?\d+", question)))
    answer = (messages[-1].message.content or "") if isinstance(messages[-1], Choice) else ""
    trajectory = art.Trajectory(
        messages_and_choices=messages,
        reward=1.0 if answer.strip() == expected else 0.0,
        metadata={"question": question},
    )
    return trajectory.finish()
