"""The ``art`` backend: OpenPipe ART trajectories as training rows.

ART (PyPI ``openpipe-art``, imported as ``art``) records one agent episode as an
``art.Trajectory``. Its ``messages_and_choices`` list mixes plain chat message
dicts (system, user and tool turns the rollout wrote itself) with OpenAI
``Choice`` objects (the turns the policy generated). Rollouts of one task are
collected into an ``art.TrajectoryGroup``; ART's ``gather_trajectory_groups``
awaits many groups together (``gather_groups`` here does the same, reporting
its progress to ``agent-rollout run`` instead of drawing a tqdm bar).

Each prompt (one ``TrajectoryGroup``) gives at most one row, by the rule shared
with ``ruler`` (``agent_rollout.backends._ranking``):

- ``prompt`` is every message before the first assistant turn of the winning
  trajectory, as plain chat dicts. A trajectory that opens with an assistant
  turn (or has no messages) has no prompt and is refused with a ``ValueError``.
- ``answer`` is the text of the winning trajectory's last assistant turn (its
  string content, or the ``text`` parts of a content list joined together).
  The winner is the trajectory with the highest ``reward`` (set by your rollout
  function), when that reward is strictly higher than the reward of every
  trajectory with a different answer. Otherwise the prompt is dropped and
  counted on the ``RolloutResult`` (``tie``: different answers share the best
  reward; ``no_answer``: the winner ends without text). A reward that is not a
  number (``None``, a str) is refused as the rollout returns, one that is NaN
  or infinite when the group is ranked: both errors name the backend, the
  prompt and the rollout. So ``answer`` is
  always the best-rewarded output, never one unranked sample; with a group of
  one (or identical answers) it is that answer whatever its reward, so give
  your rollouts a reward that means something, or use ``rollout_group_size`` > 1.
- ``tools``, ``metrics``, ``metadata`` and ``logs`` do not enter the row.

Assistant turns are converted the way ART's own ``Trajectory.messages()`` does
(``{"role": "assistant", "content": ..., "tool_calls": [...]}`` with tool calls
dumped to JSON-like dicts); pydantic objects anywhere in a message are dumped
the same way.

``launch`` runs a user rollout function: ``rollout_func`` names ``fn(model,
prompt)`` (ART's own ``rollout(model, scenario)`` shape), sync or async, which
returns one ``art.Trajectory``. ``model`` is whatever the trainer passed to
``launch_rollout`` (an ``art.Model``, a client, or ``None``); ``prompt`` is a
private deep copy of one seed prompt. Alternatively ``rollout_source`` names a
file ART wrote (see :func:`read_trajectory_groups`) and no function runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json
import logging
import math
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from pydantic import BaseModel

from agent_rollout._jsonl import FileLimits, read_values
from agent_rollout._limits import (
    DEFAULT_GROUP_SIZE,
    MAX_GROUP_SIZE,
    MAX_MESSAGE_DEPTH,
    MAX_ROLLOUT_BYTES,
    MAX_ROLLOUT_ROWS,
    check_int,
)
from agent_rollout.backends import require_backend_package, resolve_rollout_func
from agent_rollout.backends._ranking import (
    BackendRows,
    Candidate,
    NonFiniteReward,
    RolloutDrop,
    pick_reference,
    refuse_all_dropped,
)
from agent_rollout.backends._report import debug_enabled, quiet_imports, report_progress

if TYPE_CHECKING:
    from art import Trajectory, TrajectoryGroup

__all__ = [
    "DEFAULT_GROUP_SIZE",
    "MAX_GROUP_SIZE",
    "PROMPT_INDEX_KEY",
    "connection_failure",
    "gather_groups",
    "import_art",
    "launch",
    "plan",
    "policy_model",
    "policy_servers",
    "quiet_litellm",
    "read_trajectory_groups",
    "resolve_rollout",
    "run_sync",
    "to_message",
    "trajectory_groups_to_rows",
    "trajectory_to_row",
]

PROMPT_INDEX_KEY = "agent_rollout_prompt_index"
"""``TrajectoryGroup.metadata`` key that records which seed prompt a group ran."""

_T = TypeVar("_T")
RolloutFn = Callable[[Any, Any], Any]


# ----------------------------------------------------------- importing ART quietly

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


def import_art() -> ModuleType:
    """Import ``art`` (and ``art.rewards``) with no network call and no notices; the module.

    The import runs inside :func:`~agent_rollout.backends._report.quiet_imports`
    (LiteLLM's bundled price table instead of a download; transformers'
    notice off unless ``AGENT_ROLLOUT_DEBUG``). Raises the install hint's
    ``ImportError`` when openpipe-art is missing.
    """
    require_backend_package("art")
    with quiet_imports():
        import art
        import art.rewards
    return art


@contextmanager
def quiet_litellm() -> Iterator[None]:
    """While the block runs, LiteLLM neither logs nor prints (unless ``AGENT_ROLLOUT_DEBUG``).

    LiteLLM prints a "Give Feedback / Get Help" banner to standard output on
    every failed call (which would land in the rows written to ``-o -``) and
    logs through handlers of its own. Its loggers are disabled and
    ``litellm.suppress_debug_info`` set for the block, then put back.
    """
    if debug_enabled():
        yield
        return
    import litellm

    loggers = [logging.getLogger(name) for name in _LITELLM_LOGGERS]
    disabled = [logger.disabled for logger in loggers]
    suppress = litellm.suppress_debug_info
    litellm.suppress_debug_info = True
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        litellm.suppress_debug_info = suppress
        for logger, was in zip(loggers, disabled, strict=True):
            logger.disabled = was


# --------------------------------------------------------------------------- rows


def _type_name(value: object) -> str:
    return type(value).__name__


def _plain(value: Any, where: str, depth: int = 1) -> Any:
    """A JSON-like copy of one message value; pydantic objects are dumped."""
    if depth > MAX_MESSAGE_DEPTH:
        raise ValueError(f"{where}: nested deeper than {MAX_MESSAGE_DEPTH} levels")
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: non-finite float {value!r}")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(
                    f"{where}: keys must be str, got a key of type {_type_name(key)!r}"
                )
            out[key] = _plain(item, f"{where}.{key}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise ValueError(
        f"{where}: unsupported value of type {_type_name(value)!r} "
        "(message values must be JSON-like)"
    )


def _choice_message(item: Any) -> Optional[Any]:
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
    inner = _choice_message(item)
    if inner is not None:
        return _assistant_from_choice(inner, where)
    if isinstance(item, Mapping):
        message: dict[str, Any] = _plain(item, where)
        if not isinstance(message.get("role"), str) or not message["role"]:
            raise ValueError(f"{where}: a chat message needs a non-empty str 'role'")
        return message
    raise ValueError(
        f"{where}: expected a chat message dict or an OpenAI Choice, got {_type_name(item)!r}"
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
        raise ValueError(
            f"{where}: expected an art.Trajectory with messages_and_choices, "
            f"got {_type_name(trajectory)!r}"
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
        raise ValueError(
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
        raise ValueError(
            "expected an art.Trajectory, an art.TrajectoryGroup or a list of them, "
            f"got {_type_name(groups)!r}"
        )
    for index, item in enumerate(groups):
        if isinstance(item, Trajectory):
            yield index, None, [item]
        elif isinstance(item, TrajectoryGroup):
            if item.exceptions:
                first = item.exceptions[0]
                raise ValueError(
                    f"group {index}: {len(item.exceptions)} rollout(s) raised instead of "
                    f"returning a trajectory (first: {first.type}: {first.message}); "
                    "refusing to drop them silently"
                )
            yield index, item, item.trajectories
        else:
            raise ValueError(
                f"item {index}: expected an art.Trajectory or art.TrajectoryGroup, "
                f"got {_type_name(item)!r}"
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
                raise ValueError(f"more than {MAX_ROLLOUT_ROWS} trajectories (MAX_ROLLOUT_ROWS)")
            row = trajectory_to_row(trajectory, where=f"{where} rollout {t}")
            candidates.append(Candidate(t, getattr(trajectory, "reward", None), row))
        if not candidates:
            raise ValueError(f"{where}: the group holds no trajectories")
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


# ------------------------------------------------------------------ ART's files


def read_trajectory_groups(path: str | os.PathLike[str]) -> list[TrajectoryGroup]:
    """Read trajectory groups from a file ART wrote.

    - ``.parquet``: what ``model.log()`` writes to
      ``<project>/models/<model>/trajectories/<split>/<step>.parquet`` (one
      table row per trajectory, ``group_index`` tying them into groups). Read
      with polars, a base dependency of ``openpipe-art``.
    - ``.jsonl``: ART's older log format (one ``{"trajectories": [...]}`` group
      per line, ``messages_and_choices`` holding dicts and dumped Choices), or
      its SFT format (one ``{"messages": [...], "tools"?: [...]}`` trajectory
      per line, read as a group of one). It is read by the package's one JSONL
      reader (``agent_rollout._jsonl``): strict JSON, gzip allowed, and the
      line, byte and row limits of ``read_rollout_jsonl``.

    Errors name the file and the line (JSONL) or table row (Parquet).
    """
    import_art()
    name = os.fspath(path)
    if name.endswith(".parquet"):
        return _read_parquet(name)
    if name.endswith(".jsonl"):
        return _read_jsonl(name)
    raise ValueError(f"{name}: unsupported ART trajectory file; expected .parquet or .jsonl")


def _trajectory_from(data: Any, where: str) -> Trajectory:
    from art import Trajectory

    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: a trajectory must be a JSON object, got {_type_name(data)}")
    key = "messages_and_choices" if "messages_and_choices" in data else "messages"
    items = data.get(key)
    if not isinstance(items, list):
        raise ValueError(f"{where}: '{key}' must be a list of messages")
    reward = data.get("reward", 0.0)
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        raise ValueError(f"{where}: 'reward' must be a number, got {_type_name(reward)}")
    return Trajectory(messages_and_choices=items, reward=float(reward))


def _read_jsonl(name: str) -> list[TrajectoryGroup]:
    from art import TrajectoryGroup

    groups: list[TrajectoryGroup] = []
    total = 0
    # The package's one JSONL reader: its line, byte and row limits and messages.
    for line_no, data in read_values(name, FileLimits(MAX_ROLLOUT_ROWS, MAX_ROLLOUT_BYTES)):
        where = f"{name}:{line_no}"
        if isinstance(data, Mapping) and "trajectories" in data:
            items = data["trajectories"]
            if not isinstance(items, list):
                raise ValueError(f"{where}: 'trajectories' must be a list")
            trajectories = [
                _trajectory_from(t, f"{where}: trajectories[{i}]") for i, t in enumerate(items)
            ]
        else:
            trajectories = [_trajectory_from(data, where)]
        total += len(trajectories)
        if total > MAX_ROLLOUT_ROWS:
            raise ValueError(f"{where}: more than {MAX_ROLLOUT_ROWS} trajectories")
        groups.append(TrajectoryGroup(trajectories))
    return groups


def _read_parquet(name: str) -> list[TrajectoryGroup]:
    import polars as pl
    from art import Trajectory, TrajectoryGroup

    try:
        table = pl.read_parquet(name, columns=["group_index", "reward", "messages"])
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise ValueError(f"{name}: not an ART trajectory Parquet file: {exc}") from None
    if table.height > MAX_ROLLOUT_ROWS:
        raise ValueError(f"{name}: more than {MAX_ROLLOUT_ROWS} trajectories")
    by_group: dict[int, list[Trajectory]] = {}
    for row_no, record in enumerate(table.iter_rows(named=True)):
        where = f"{name}: table row {row_no}"
        messages: list[Any] = [
            _unflatten(m, f"{where}: messages[{i}]") for i, m in enumerate(record["messages"] or [])
        ]
        trajectory = Trajectory(messages_and_choices=messages, reward=record["reward"] or 0.0)
        by_group.setdefault(int(record["group_index"] or 0), []).append(trajectory)
    return [TrajectoryGroup(by_group[index]) for index in sorted(by_group)]


def _unflatten(flat: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One message of ART's Parquet schema back to a chat dict."""
    message: dict[str, Any] = {"role": flat.get("role"), "content": flat.get("content")}
    if flat.get("tool_calls"):
        try:
            message["tool_calls"] = json.loads(flat["tool_calls"])
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}.tool_calls: invalid JSON: {exc.msg}") from None
    if flat.get("tool_call_id"):
        message["tool_call_id"] = flat["tool_call_id"]
    return message


# ------------------------------------------------------------------- gathering


def run_sync(factory: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run the coroutine ``factory()`` builds to completion from sync code.

    With no event loop running in this thread, ``asyncio.run`` runs it. When a
    loop is already running here (a notebook, an async trainer), blocking that
    loop on itself would deadlock, so the coroutine runs on a fresh loop in one
    worker thread while this thread waits: the outer loop is paused until the
    rollouts finish, and objects bound to the outer loop cannot be used by the
    rollout function. Async callers should await :func:`gather_groups` instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-rollout-art") as pool:
        return pool.submit(context.run, lambda: asyncio.run(factory())).result()


def _check_prompts(prompts: Any, backend: str) -> list[Any]:
    if prompts is None or isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise ValueError(
            f"rollout_backend {backend!r} needs prompts: a list of seed prompts, "
            f"got {_type_name(prompts)}"
        )
    if not prompts:
        raise ValueError(f"rollout_backend {backend!r} needs at least one seed prompt")
    return list(prompts)


def _assistant_turns(trajectory: Any) -> int:
    return sum(
        1
        for item in trajectory.messages_and_choices
        if _choice_message(item) is not None
        or (isinstance(item, Mapping) and item.get("role") == "assistant")
    )


def _is_connection_failure(exc: BaseException) -> bool:
    """A failed connection: ``ConnectionError``, or openai's/httpx's connection errors."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionError):
            return True
        names = {cls.__name__ for cls in type(current).__mro__}
        if names & {"APIConnectionError", "ConnectError", "ConnectTimeout"}:
            return True
        current = current.__cause__ or current.__context__
    return False


def _request_url(exc: BaseException) -> Optional[str]:
    request = getattr(exc, "request", None)  # openai.APIConnectionError, httpx errors
    try:
        url = getattr(request, "url", None)
    except RuntimeError:  # httpx: "The request instance has not been set on this exception"
        return None
    return str(url) if url is not None else None


def connection_failure(
    exc: BaseException,
    where: str,
    servers: Mapping[str, Optional[str]],
    *,
    request_url: bool = True,
) -> Optional[ConnectionError]:
    """A ``ConnectionError`` naming the address when ``exc`` is a failed connection, else None.

    ``servers`` maps a config key (``"rollout_policy_base_url"``) to its URL:
    when the request went to one of them, the message names that key and URL;
    otherwise it names the URL the request went to, when known. With
    ``request_url=False`` the exception's own request URL is not trusted
    (LiteLLM's errors carry a placeholder) and the first URL of ``servers`` is
    named.
    """
    if not _is_connection_failure(exc):
        return None
    reached = _request_url(exc) if request_url else None
    target = ""
    for key, base in servers.items():
        if base and (reached is None or reached.startswith(base.rstrip("/"))):
            target = f"no server answered at {base} ({key})"
            break
    if not target:
        target = f"no server answered at {reached}" if reached else "the connection failed"
    return ConnectionError(f"{where}: {target}: {_type_name(exc)}: {exc}")


async def _one_rollout(
    fn: RolloutFn,
    model: Any,
    prompt: Any,
    where: str,
    max_steps: int,
    servers: Mapping[str, Optional[str]],
) -> Trajectory:
    from art import Trajectory

    try:
        result = fn(model, copy.deepcopy(prompt))
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        unreachable = connection_failure(exc, where, servers)
        if unreachable is not None:
            raise unreachable from exc
        raise RuntimeError(f"{where}: rollout_func raised {_type_name(exc)}: {exc}") from exc
    if not isinstance(result, Trajectory):
        raise TypeError(
            f"{where}: rollout_func must return an art.Trajectory, got {_type_name(result)}"
        )
    reward = result.reward
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        # Refused here, before ART adds it up (its TypeError names no rollout).
        raise NonFiniteReward(
            f"{where}: reward must be a number, got {_type_name(reward)}"
            f"{'' if reward is None else f' {str(reward)[:40]!r}'}"
        )
    trajectory_to_row(result, where=where)  # refuse a prompt-less trajectory early
    turns = _assistant_turns(result)
    if turns > max_steps:
        raise ValueError(f"{where}: {turns} assistant turns exceed rollout_max_steps={max_steps}")
    return result


async def gather_groups(
    prompts: Sequence[Any],
    fn: RolloutFn,
    *,
    model: Any = None,
    group_size: int = DEFAULT_GROUP_SIZE,
    max_steps: int = MAX_ROLLOUT_ROWS,
    after_each: Optional[Callable[[TrajectoryGroup], Awaitable[TrajectoryGroup]]] = None,
    backend: str = "art",
    servers: Optional[Mapping[str, Optional[str]]] = None,
) -> list[TrajectoryGroup]:
    """Run ``group_size`` rollouts per seed prompt, concurrently; one group per prompt.

    Each prompt becomes one ``art.TrajectoryGroup`` (its ``metadata`` records
    ``PROMPT_INDEX_KEY``), passed to ``after_each`` as soon as its rollouts are
    done (as ``art.gather_trajectory_groups`` does, without its tqdm bar: the
    rollouts done are reported to :func:`~agent_rollout.backends._report.reporting`
    instead). Groups come back in prompt order and trajectories in rollout
    order. The first rollout that raises, returns something other than a
    Trajectory, sets a reward that is not a number, has no prompt or runs past
    ``max_steps`` assistant turns stops the gather with an error naming the
    backend, the prompt and the rollout; a failed connection is a
    ``ConnectionError`` that also names the address (``servers``: config key
    to URL, the servers the rollouts talk to).
    """
    import art

    total = len(prompts) * group_size
    done = 0
    report_progress(0, total)

    async def one_rollout(index: int, k: int, prompt: Any) -> Trajectory:
        nonlocal done
        where = f"rollout_backend {backend!r}: prompt {index} rollout {k}"
        trajectory = await _one_rollout(fn, model, prompt, where, max_steps, servers or {})
        done += 1
        report_progress(done, total)
        return trajectory

    async def one_group(index: int, prompt: Any) -> art.TrajectoryGroup:
        trajectories = await asyncio.gather(
            *(one_rollout(index, k, prompt) for k in range(group_size))
        )
        group = art.TrajectoryGroup(trajectories, metadata={PROMPT_INDEX_KEY: index})
        return group if after_each is None else await after_each(group)

    return list(
        await asyncio.gather(*(one_group(index, prompt) for index, prompt in enumerate(prompts)))
    )


def resolve_rollout(rollout_func: Union[str, RolloutFn, None], backend: str) -> RolloutFn:
    """The rollout function: a callable as is, a ``module:fn`` spec imported; not ``None``."""
    if rollout_func is None:
        raise ValueError(
            f"rollout_backend {backend!r} requires training.rollout_func "
            "('module.path:function_name' naming fn(model, prompt) -> art.Trajectory)"
        )
    if callable(rollout_func):
        return rollout_func
    return resolve_rollout_func(rollout_func)


def policy_model(model: Any, options: Mapping[str, Any], backend: str) -> Any:
    """The ``model`` handed to the rollout function.

    With ``options["policy_model"]`` (config ``rollout_policy_model``) and
    ``options["policy_base_url"]`` (``rollout_policy_base_url``), an inference-only
    ``art.Model`` whose ``openai_client()`` talks to that server (the key is
    ``OPENAI_API_KEY``, or the placeholder ``EMPTY``). Without them, ``model``
    as the caller passed it. Both at once is refused.
    """
    name, url = options.get("policy_model"), options.get("policy_base_url")
    if name is None and url is None:
        return model
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"rollout_backend {backend!r}: rollout_policy_base_url needs rollout_policy_model "
            f"(the model name the server knows), got {name!r}"
        )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(
            f"rollout_backend {backend!r}: rollout_policy_model needs rollout_policy_base_url "
            f"(an http(s) URL such as 'http://127.0.0.1:8000/v1'), got {url!r}"
        )
    if model is not None:
        raise ValueError(
            f"rollout_backend {backend!r}: a model was passed and rollout_policy_model is set; "
            "use one or the other"
        )
    import art

    return art.Model(
        name=name.replace("/", "-"),
        project="agent-rollout",
        inference_model_name=name,
        inference_base_url=url.rstrip("/"),
        inference_api_key=os.environ.get("OPENAI_API_KEY") or "EMPTY",
    )


def policy_servers(options: Mapping[str, Any]) -> dict[str, Optional[str]]:
    """The servers the rollouts talk to, by config key (for connection failure messages)."""
    url = options.get("policy_base_url")
    return {"rollout_policy_base_url": url if isinstance(url, str) else None}


def plan(prompts: Any, options: Mapping[str, Any], backend: str) -> tuple[list[Any], int]:
    """Check the seed prompts and group size; bound the total number of rollouts."""
    seeds = _check_prompts(prompts, backend)
    group_size = check_int(
        options.get("group_size", DEFAULT_GROUP_SIZE),
        "rollout_group_size",
        MAX_GROUP_SIZE,
        wrong_type=ValueError,
    )
    if len(seeds) * group_size > MAX_ROLLOUT_ROWS:
        raise ValueError(
            f"{len(seeds)} prompts x rollout_group_size {group_size} exceed "
            f"{MAX_ROLLOUT_ROWS} rollouts (MAX_ROLLOUT_ROWS)"
        )
    return seeds, group_size


def launch(
    *,
    prompts: Sequence[Any] | None,
    rollout_func: Union[str, RolloutFn, None],
    model: Any,
    tokenizer: Any,
    reward_fn: Any,
    max_steps: int,
    options: Mapping[str, Any],
) -> BackendRows:
    """Backend entry point for ``launch_rollout("art", ...)``.

    With ``rollout_func``: ``options["group_size"]`` rollouts per seed prompt
    (:func:`gather_groups`), then one row per prompt by the ranking rule
    (prompt order). With ``options["source"]`` instead: the groups of an ART
    trajectory file, ranked the same way. Prompts without a winner are in
    ``drops``; when every prompt is dropped it is a ``ValueError``.
    ``tokenizer`` and ``reward_fn`` are not used: the rollout function sets
    each trajectory's reward.
    """
    del tokenizer, reward_fn
    import_art()  # before rollout_func's module can import it: no network, no notices
    source = options.get("source")
    if source is not None:
        if rollout_func is not None:
            raise ValueError("rollout_backend 'art': set rollout_func or rollout_source, not both")
        if not isinstance(source, (str, os.PathLike)):
            raise ValueError(f"rollout_source must be a path string, got {_type_name(source)}")
        rows = trajectory_groups_to_rows(read_trajectory_groups(source))
    else:
        fn = resolve_rollout(rollout_func, "art")
        seeds, group_size = plan(prompts, options, "art")
        model = policy_model(model, options, "art")
        servers = policy_servers(options)
        groups = run_sync(
            lambda: gather_groups(
                seeds,
                fn,
                model=model,
                group_size=group_size,
                max_steps=max_steps,
                servers=servers,
            )
        )
        rows = trajectory_groups_to_rows(groups, backend="art")
    refuse_all_dropped("art", rows)
    return rows
