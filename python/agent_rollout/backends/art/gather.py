"""The ``art`` backend: running rollout functions and gathering their trajectory groups.

The rollout function, the policy model handed to it, the plan (seed prompts
times the group size, bounded), the gather itself (concurrent, its progress
reported), and a failed connection named by its address.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from agent_rollout._exceptions import RolloutRuntimeError, RolloutTypeError, RolloutValueError
from agent_rollout._limits import DEFAULT_GROUP_SIZE, MAX_GROUP_SIZE, MAX_ROLLOUT_ROWS, check_int
from agent_rollout.backends import resolve_rollout_func
from agent_rollout.backends._ranking import NonFiniteReward
from agent_rollout.backends._report import report_progress
from agent_rollout.backends.art.rows import (
    PROMPT_INDEX_KEY,
    choice_message,
    trajectory_to_row,
    type_name,
)

if TYPE_CHECKING:
    from art import Trajectory, TrajectoryGroup

__all__ = [
    "RolloutFn",
    "connection_failure",
    "gather_groups",
    "plan",
    "policy_model",
    "policy_servers",
    "resolve_rollout",
    "run_sync",
]

_T = TypeVar("_T")
RolloutFn = Callable[[Any, Any], Any]


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
        raise RolloutValueError(
            f"rollout_backend {backend!r} needs prompts: a list of seed prompts, "
            f"got {type_name(prompts)}"
        )
    if not prompts:
        raise RolloutValueError(f"rollout_backend {backend!r} needs at least one seed prompt")
    return list(prompts)


def _assistant_turns(trajectory: Any) -> int:
    return sum(
        1
        for item in trajectory.messages_and_choices
        if choice_message(item) is not None
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
    return ConnectionError(f"{where}: {target}: {type_name(exc)}: {exc}")


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
        raise RolloutRuntimeError(f"{where}: rollout_func raised {type_name(exc)}: {exc}") from exc
    if not isinstance(result, Trajectory):
        raise RolloutTypeError(
            f"{where}: rollout_func must return an art.Trajectory, got {type_name(result)}"
        )
    reward = result.reward
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        # Refused here, before ART adds it up (its TypeError names no rollout).
        raise NonFiniteReward(
            f"{where}: reward must be a number, got {type_name(reward)}"
            f"{'' if reward is None else f' {str(reward)[:40]!r}'}"
        )
    trajectory_to_row(result, where=where)  # refuse a prompt-less trajectory early
    turns = _assistant_turns(result)
    if turns > max_steps:
        raise RolloutValueError(
            f"{where}: {turns} assistant turns exceed rollout_max_steps={max_steps}"
        )
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
        raise RolloutValueError(
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
        raise RolloutValueError(
            f"rollout_backend {backend!r}: rollout_policy_base_url needs rollout_policy_model "
            f"(the model name the server knows), got {name!r}"
        )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise RolloutValueError(
            f"rollout_backend {backend!r}: rollout_policy_model needs rollout_policy_base_url "
            f"(an http(s) URL such as 'http://127.0.0.1:8000/v1'), got {url!r}"
        )
    if model is not None:
        raise RolloutValueError(
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
        wrong_type=RolloutValueError,
    )
    if len(seeds) * group_size > MAX_ROLLOUT_ROWS:
        raise RolloutValueError(
            f"{len(seeds)} prompts x rollout_group_size {group_size} exceed "
            f"{MAX_ROLLOUT_ROWS} rollouts (MAX_ROLLOUT_ROWS)"
        )
    return seeds, group_size
