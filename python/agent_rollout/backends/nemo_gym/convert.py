"""NeMo Gym data as training rows: the ``nemo_gym`` backend's conversion (no Gym needed).

NeMo Gym stores its data as JSONL. Every row carries ``responses_create_params``,
the body of an OpenAI Responses API request; collected rollouts add ``response``
(the Responses API reply) and ``reward``. Task fields such as ``expected_answer``
sit beside them at the top level. This module turns one such row into an
``agent_rollout`` row, ``{"prompt": [chat messages], "answer"?: str}``, without
importing NeMo Gym (which needs Python 3.12 and a large stack).

The mapping mirrors what Gym's own Responses-to-Chat-Completions converter sends
to a chat model, so a prompt trains on the conversation Gym would have shown:

- ``instructions`` (a non-empty string) becomes a leading system message;
- ``input`` as a string becomes one user message;
- message items keep their role, except ``developer``, which becomes ``system``
  (chat templates of open models know no developer role);
- content parts: ``input_text``/``output_text`` give their text, ``refusal`` its
  refusal text. Text-only content is joined into one string ("\\n" between parts
  of user/system messages, as vLLM does; nothing between parts of assistant
  messages, as Gym does). Content with an ``input_image`` part that has an
  ``image_url`` stays a list of OpenAI chat parts (``text`` and ``image_url``);
- consecutive assistant output (message text, ``reasoning`` summaries wrapped in
  ``<think>...</think>``, and ``function_call`` items as ``tool_calls``) folds
  into one assistant message, the way Gym's converter buffers it;
- ``function_call_output`` becomes a ``tool`` message with ``tool_call_id``.

The answer is the first of ``ANSWER_FIELDS`` at the top level of the row that
is neither missing, null nor empty; it must be a string. A rollout's ``response``
does not supply the answer by default: it is the policy's own sample, not a
reference.

Collected rollouts (rows with a ``response``) that repeat one task (the same
prompt and the same ``_ng_task_index``, when Gym wrote one) collapse into
one row (:func:`convert_gym_rows`): its answer is the task's reference when the
repeats carry one (repeats that disagree drop the task as ``answer_conflict``);
without a reference, and only with ``answer_from_response=True``
(``launch_rollout`` option ``answer_from_response``), it is the final text of
the best-rewarded response under the ranking rule shared with ``art`` and
``ruler`` (``_ranking.pick_reference``); otherwise the row has no answer.
Request ``tools`` have no place in a row; they are counted
(``RolloutResult.unused_fields``), not silently lost.

Anything else (an unknown item or part type, an image given only by file id, a
missing ``responses_create_params``) is refused with a ``GymRowError`` that
names the row and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Optional

from agent_rollout._errors import GymRowError
from agent_rollout._exceptions import RolloutTypeError, RolloutValueError
from agent_rollout._files import source_name
from agent_rollout._jsonl import FileLimits, read_values
from agent_rollout._limits import MAX_ROLLOUT_BYTES, MAX_ROLLOUT_ROWS, check_max_rows
from agent_rollout.backends._ranking import (
    BackendRows,
    Candidate,
    RolloutDrop,
    pick_reference,
)

__all__ = [
    "ANSWER_FIELDS",
    "TOOLS_FIELD",
    "GymRowError",
    "convert_gym_rows",
    "gym_row_to_row",
    "gym_rows",
    "read_gym_jsonl",
    "type_name",
]

TOOLS_FIELD = "responses_create_params.tools"
"""The key under which ``unused_fields`` counts rows whose request defines tools."""

ANSWER_FIELDS: tuple[str, ...] = ("expected_answer", "answer", "ground_truth")
"""Top-level task fields that hold the reference answer, in order of precedence."""

_CHAT_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_TEXT_PARTS = ("input_text", "output_text")
_KNOWN_ITEMS = "message, function_call, function_call_output, reasoning"


class _Builder:
    """Collects chat messages, folding consecutive assistant output into one message."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._text = ""
        self._tool_calls: list[dict[str, Any]] = []

    def add(self, message: dict[str, Any]) -> None:
        self.flush()
        self.messages.append(message)

    def add_assistant_text(self, text: str) -> None:
        self._text += text

    def add_tool_call(self, call: dict[str, Any]) -> None:
        self._tool_calls.append(call)

    def flush(self) -> None:
        if not (self._text or self._tool_calls):
            return
        message: dict[str, Any] = {"role": "assistant", "content": self._text}
        if self._tool_calls:
            message["tool_calls"] = self._tool_calls
        self.messages.append(message)
        self._text = ""
        self._tool_calls = []


def type_name(value: object) -> str:
    """A value's type as messages about Gym rows name it (``null`` for None)."""
    return "null" if value is None else type(value).__name__


def _require_str(value: object, where: str, field: str) -> str:
    if not isinstance(value, str):
        raise GymRowError(where, field, f"must be a string, got {type_name(value)}")
    return value


def _image_part(part: Mapping[str, Any], where: str, field: str) -> dict[str, Any]:
    url = part.get("image_url")
    if not isinstance(url, str) or not url:
        file_id = part.get("file_id")
        why = (
            f"image given only by file_id {file_id!r}; a row can carry an image only as a URL"
            if file_id
            else f"input_image needs a non-empty string image_url, got {type_name(url)}"
        )
        raise GymRowError(where, f"{field}.image_url", why)
    detail = part.get("detail")
    if detail is None:
        detail = "auto"
    return {
        "type": "image_url",
        "image_url": {"url": url, "detail": _require_str(detail, where, f"{field}.detail")},
    }


def _content(content: object, role: str, where: str, field: str) -> str | list[dict[str, Any]]:
    """A message's content as a string, or as OpenAI chat parts when it holds an image."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise GymRowError(
            where, field, f"must be a string or a list of content parts, got {type_name(content)}"
        )
    parts: list[dict[str, Any]] = []
    has_image = False
    for index, part in enumerate(content):
        here = f"{field}[{index}]"
        if not isinstance(part, Mapping):
            raise GymRowError(
                where, here, f"a content part must be an object, got {type_name(part)}"
            )
        kind = part.get("type")
        if kind in _TEXT_PARTS:
            parts.append(
                {"type": "text", "text": _require_str(part.get("text"), where, f"{here}.text")}
            )
        elif kind == "refusal":
            refusal = _require_str(part.get("refusal"), where, f"{here}.refusal")
            parts.append({"type": "text", "text": refusal})
        elif kind == "input_image":
            if role == "assistant":
                raise GymRowError(where, here, "an assistant message cannot carry an image")
            parts.append(_image_part(part, where, here))
            has_image = True
        else:
            raise GymRowError(
                where,
                f"{here}.type",
                f"unsupported content part type {kind!r} "
                "(supported: input_text, output_text, refusal, input_image)",
            )
    if has_image:
        return parts
    separator = "" if role == "assistant" else "\n"
    return separator.join(part["text"] for part in parts)


def _message(item: Mapping[str, Any], out: _Builder, where: str, field: str) -> None:
    role = item.get("role")
    chat_role = _CHAT_ROLES.get(role) if isinstance(role, str) else None
    if chat_role is None:
        raise GymRowError(
            where,
            f"{field}.role",
            f"unsupported role {role!r} (supported: {', '.join(_CHAT_ROLES)})",
        )
    if "content" not in item:
        raise GymRowError(where, f"{field}.content", "missing")
    content = _content(item["content"], chat_role, where, f"{field}.content")
    if chat_role == "assistant":
        assert isinstance(content, str)  # _content refuses images for the assistant
        out.add_assistant_text(content)
    else:
        out.add({"role": chat_role, "content": content})


def _function_call(item: Mapping[str, Any], out: _Builder, where: str, field: str) -> None:
    call_id = _require_str(item.get("call_id"), where, f"{field}.call_id")
    name = _require_str(item.get("name"), where, f"{field}.name")
    arguments = _require_str(item.get("arguments"), where, f"{field}.arguments")
    out.add_tool_call(
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    )


def _function_call_output(item: Mapping[str, Any], out: _Builder, where: str, field: str) -> None:
    call_id = _require_str(item.get("call_id"), where, f"{field}.call_id")
    output = _require_str(item.get("output"), where, f"{field}.output")
    out.add({"role": "tool", "tool_call_id": call_id, "content": output})


def _reasoning(item: Mapping[str, Any], out: _Builder, where: str, field: str) -> None:
    # Only the readable summary is kept; ``encrypted_content`` is an opaque
    # provider blob with no text in it (Gym's own converter drops it as well).
    summary = item.get("summary")
    if summary is None:
        summary = []
    if not isinstance(summary, list):
        raise GymRowError(where, f"{field}.summary", f"must be a list, got {type_name(summary)}")
    for index, entry in enumerate(summary):
        here = f"{field}.summary[{index}]"
        if not isinstance(entry, Mapping):
            raise GymRowError(where, here, f"must be an object, got {type_name(entry)}")
        text = _require_str(entry.get("text"), where, f"{here}.text")
        if text:
            out.add_assistant_text(f"<think>{text}</think>")


_ITEM_HANDLERS = {
    "message": _message,
    "function_call": _function_call,
    "function_call_output": _function_call_output,
    "reasoning": _reasoning,
}


def _prompt(params: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    out = _Builder()
    field = "responses_create_params"
    instructions = params.get("instructions")
    if instructions is not None:
        if _require_str(instructions, where, f"{field}.instructions"):
            out.add({"role": "system", "content": instructions})
    if "input" not in params:
        raise GymRowError(where, f"{field}.input", "missing")
    items = params["input"]
    field = f"{field}.input"
    if isinstance(items, str):
        if not items:
            raise GymRowError(where, field, "is an empty string")
        out.add({"role": "user", "content": items})
        return out.messages
    if not isinstance(items, list):
        raise GymRowError(
            where, field, f"must be a string or a list of items, got {type_name(items)}"
        )
    if not items:
        raise GymRowError(where, field, "is an empty list")
    for index, item in enumerate(items):
        here = f"{field}[{index}]"
        if not isinstance(item, Mapping):
            raise GymRowError(
                where, here, f"an input item must be an object, got {type_name(item)}"
            )
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"  # an "easy input message" may leave its type out
        handler = _ITEM_HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise GymRowError(
                where,
                f"{here}.type",
                f"unsupported input item type {kind!r} (supported: {_KNOWN_ITEMS})",
            )
        handler(item, out, where, here)
    out.flush()
    if not out.messages:
        raise GymRowError(where, field, "holds no text to train on (only empty reasoning items)")
    return out.messages


def gym_row_to_row(
    obj: object, *, where: str = "", answer_fields: Sequence[str] = ANSWER_FIELDS
) -> dict[str, Any]:
    """Map one NeMo Gym task or rollout row to ``{"prompt": [messages], "answer"?: str}``.

    ``where`` prefixes every error message (for example ``"data.jsonl:12: row 11"``
    or ``"row 3"``). ``answer_fields`` lists the top-level fields that may
    hold the reference answer: the first that is not missing, null or ``""``
    wins; pass ``()`` to take none.
    Raises ``GymRowError`` (a ``ValueError``) naming the field that cannot be
    mapped. The input is not modified and shares no containers with the result.
    """
    if isinstance(answer_fields, str):
        raise RolloutTypeError(
            f"answer_fields must be a sequence of field names, not a str: {answer_fields!r}"
        )
    if not isinstance(obj, Mapping):
        raise GymRowError(where, "row", f"a Gym row must be an object, got {type_name(obj)}")
    params = obj.get("responses_create_params")
    if params is None:
        raise GymRowError(
            where,
            "responses_create_params",
            "missing (a Gym row needs the Responses API request; a raw row for a prompt "
            "template must be materialized with ng_materialize_prompts first)",
        )
    if not isinstance(params, Mapping):
        raise GymRowError(
            where, "responses_create_params", f"must be an object, got {type_name(params)}"
        )
    row: dict[str, Any] = {"prompt": _prompt(params, where)}
    for name in answer_fields:
        value = obj.get(name)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise GymRowError(
                where,
                name,
                f"the reference answer must be a string, got {type_name(value)} "
                "(convert it yourself, or choose other answer_fields)",
            )
        row["answer"] = value
        break
    return row


def gym_rows(
    path: str | os.PathLike[str], max_rows: int = MAX_ROLLOUT_ROWS
) -> Iterator[tuple[str, Any]]:
    """``(where, parsed object)`` for every non-blank line of a Gym JSONL file.

    Read by the package's one JSONL reader (``agent_rollout._jsonl``): gzip
    allowed, strict JSON, and the line, byte and row limits and messages of
    ``read_rollout_jsonl``; ``where`` is ``path:line: row N``.
    """
    max_rows = check_max_rows(max_rows)
    name = os.fspath(path)
    shown = source_name(name)  # as the reader names it: "-" is <stdin>
    count = 0
    for line_no, obj in read_values(name, FileLimits(max_rows, MAX_ROLLOUT_BYTES)):
        yield f"{shown}:{line_no}: row {count}", obj
        count += 1
    if count == 0:
        raise RolloutValueError(f"{shown}: no Gym rows (the file is empty or blank)")


def read_gym_jsonl(
    path: str | os.PathLike[str], *, max_rows: int = MAX_ROLLOUT_ROWS
) -> list[dict[str, Any]]:
    """Read a NeMo Gym JSONL file and convert every row with ``gym_row_to_row``.

    One row per line (repeats of a task are not collapsed here; see
    :func:`convert_gym_rows`). Blank lines are skipped. Every error starts
    with ``path:line:``. More than ``max_rows`` rows is an error, not a silent cut.
    """
    return [gym_row_to_row(obj, where=where) for where, obj in gym_rows(path, max_rows)]


def _response_text(obj: Mapping[str, Any], where: str) -> str:
    """The final text of a rollout's ``response.output``: its last assistant message,
    unless a ``function_call`` follows it (then ``""``)."""
    response = obj.get("response")
    output = response.get("output") if isinstance(response, Mapping) else None
    if not isinstance(output, list):
        raise GymRowError(where, "response.output", f"must be a list, got {type_name(output)}")
    text = ""
    for index, item in enumerate(output):
        kind = item.get("type", "message") if isinstance(item, Mapping) else None
        if kind == "function_call":
            text = ""  # the turn ends on a tool call: no final text (as for art)
        elif kind == "message" and item.get("role") == "assistant" and "content" in item:
            content = _content(
                item["content"], "assistant", where, f"response.output[{index}].content"
            )
            text = content if isinstance(content, str) else ""
    return text


def _task_key(obj: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[Optional[int], str]:
    # The index alone does not identify a task: rollouts of two datasets written to
    # one file both count from 0. Repeats of one task share their prompt as well.
    index = obj.get("_ng_task_index")
    prompt = json.dumps(row["prompt"], sort_keys=True, ensure_ascii=False)
    if isinstance(index, int) and not isinstance(index, bool):
        return (index, prompt)
    return (None, prompt)


class _Task:
    def __init__(self, position: int, label: int, row: dict[str, Any]) -> None:
        self.position = position
        self.label = label
        self.prompt = row["prompt"]
        self.answers: dict[str, str] = {}  # answer -> where first seen
        self.candidates: list[Candidate] = []
        self.wheres: list[str] = []


def convert_gym_rows(
    items: Iterable[tuple[str, Any]], *, answer_from_response: bool = False
) -> BackendRows:
    """Convert ``(where, Gym row)`` pairs; repeats of one collected task become one row.

    Task rows (no ``response``) give one row each, in order. Collected rollouts
    are grouped by prompt and ``_ng_task_index`` (when present); each
    group gives one row at the place of its first repeat, answered by the
    task's reference, or, with ``answer_from_response``, by the best-rewarded
    response (see the module docstring). Rows whose request defines ``tools``
    are counted under :data:`TOOLS_FIELD` in ``unused_fields``.
    """
    slots: list[Any] = []  # a row dict, or a _Task filled in below
    tasks: dict[tuple[Optional[int], str], _Task] = {}
    tools = 0
    for where, obj in items:
        row = gym_row_to_row(obj, where=where)
        params = obj["responses_create_params"]
        if params.get("tools"):
            tools += 1
        if "response" not in obj:
            slots.append(row)
            continue
        key = _task_key(obj, row)
        task = tasks.get(key)
        if task is None:
            label = key[0] if key[0] is not None else len(tasks)
            task = tasks[key] = _Task(len(slots), label, row)
            slots.append(task)
        task.wheres.append(where)
        if "answer" in row:
            task.answers.setdefault(row["answer"], where)
        if answer_from_response:
            reward = obj.get("reward")
            if reward is None:
                raise GymRowError(where, "reward", "missing (answer_from_response ranks rewards)")
            answer = _response_text(obj, where)
            reply = {"prompt": row["prompt"], **({"answer": answer} if answer else {})}
            task.candidates.append(Candidate(len(task.candidates), reward, reply))
    rows: list[dict[str, Any]] = []
    drops: list[RolloutDrop] = []
    for slot in slots:
        if isinstance(slot, dict):
            rows.append(slot)
            continue
        kept, drop = _task_row(slot, answer_from_response)
        if drop is not None:
            drops.append(drop)
        elif kept is not None:
            rows.append(kept)
    return BackendRows(rows, drops, {TOOLS_FIELD: tools} if tools else None)


def _task_row(
    task: _Task, answer_from_response: bool
) -> tuple[Optional[dict[str, Any]], Optional[RolloutDrop]]:
    if len(task.answers) > 1:
        seen = "; ".join(f"{where}: {answer!r}" for answer, where in task.answers.items())
        return None, RolloutDrop(
            task.label, "answer_conflict", f"repeats carry different reference answers ({seen})"
        )
    if task.answers:
        return {"prompt": task.prompt, "answer": next(iter(task.answers))}, None
    if answer_from_response:
        return pick_reference(
            task.candidates, prompt_index=task.label, where=f"task {task.label} ({task.wheres[0]})"
        )
    return {"prompt": task.prompt}, None
