"""Deterministic ART rollout functions for ``rollout_backend: art`` and ``ruler``.

A training config names one of them with ``training.rollout_func``; the backend
calls it as ``fn(model, prompt)`` and expects one ``art.Trajectory`` back.

The agent answers the bundled questions: the result of the expression in the
question (``12 * 9``), or, without one, how many words the question has. It
makes one tool call (``calculate`` or ``count_words``, :data:`TOOLS`), reads the
tool's reply and answers, so every trajectory holds what a real ART rollout
holds: plain dicts for the system, user and tool turns and OpenAI ``Choice``
objects for the turns the policy produced. The right answer is the drill's
reference (:func:`agent_rollout.examples.openenv_drill.tasks.reference_answer`),
the one the ``openenv`` example and the scripted judge use; each trajectory is
rewarded 1.0 when its final answer is right, else 0.0. No model is called:

- with ``model=None`` the final answer is the right one;
- with a :class:`ScriptedPolicy` as ``model`` the final answer is the policy's
  next scripted reply for that question, so rollouts of one prompt can differ
  (which is what a RULER judge ranks).

``rollout`` is sync and ``arollout`` async; both return the same trajectory.

``policy_rollout`` asks a real OpenAI-compatible policy instead: ``model`` is an
``art.Model`` whose ``openai_client()`` reaches it (``agent-rollout run`` builds
one from ``rollout_policy_model`` and ``rollout_policy_base_url``; the bundled
``scripted_servers`` policy stands in for a model on CPU). It plays the same
episode (question, tool calls and their results, answer) and is rewarded the
same way.

A seed prompt may be a str, a list of chat messages, or a seed row
``{"prompt": str | messages}`` as in the bundled ``prompts.jsonl``.
"""

from __future__ import annotations

import json
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

from agent_rollout.examples.openenv_drill.tasks import calculate, count_words, reference_answer
from agent_rollout.examples.scripted_servers import tool_call_for

__all__ = [
    "SYSTEM_PROMPT",
    "TOOLS",
    "ScriptedPolicy",
    "arollout",
    "policy_rollout",
    "rollout",
    "run_tool",
]

SYSTEM_PROMPT = (
    "Answer with one integer: the result of the expression in the question, or else how "
    "many words the question has. Use the calculate or count_words tool, then reply."
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "calculate",
            "description": "The result of one integer expression 'a + b', 'a - b' or 'a * b'.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "count_words",
            "description": "How many whitespace-separated words a text has.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    },
]
"""The tools the rollouts offer the policy (OpenAI function-tool format)."""


def run_tool(name: str, arguments: str) -> str:
    """The environment's side of a tool call: the result, or ``error: ...`` for the policy."""
    try:
        values = json.loads(arguments)
        if name == "calculate":
            return calculate(str(values["expression"]))
        if name == "count_words":
            return count_words(str(values["text"]))
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        return f"error: {type(exc).__name__}: {exc}"
    return f"error: no tool named {name!r}"


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
    name, arguments = tool_call_for(question)
    call = ChatCompletionMessageFunctionToolCall(
        id="call_0", type="function", function=Function(name=name, arguments=json.dumps(arguments))
    )
    expected = reference_answer(question)
    answer = model.reply(question) if isinstance(model, ScriptedPolicy) else expected
    messages: list[Any] = [
        *opening,
        _choice(None, call),
        {
            "role": "tool",
            "tool_call_id": "call_0",
            "content": run_tool(name, call.function.arguments),
        },
        _choice(answer, None),
    ]
    trajectory = art.Trajectory(
        messages_and_choices=messages,
        reward=1.0 if answer.strip() == expected else 0.0,
        metadata={"question": question},
    )
    return trajectory.finish()


async def arollout(model: Any, prompt: Any) -> art.Trajectory:
    """The async twin of :func:`rollout` (ART rollouts are usually coroutines)."""
    return rollout(model, prompt)


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
        completion = await client.chat.completions.create(model=name, messages=chat, tools=TOOLS)
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
                "content": run_tool(call.function.name, call.function.arguments),
            }
            messages.append(result)
            chat.append(result)
    expected = reference_answer(question)
    answer = (messages[-1].message.content or "") if isinstance(messages[-1], Choice) else ""
    trajectory = art.Trajectory(
        messages_and_choices=messages,
        reward=1.0 if answer.strip() == expected else 0.0,
        metadata={"question": question},
    )
    return trajectory.finish()
