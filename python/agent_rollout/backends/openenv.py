"""The ``openenv`` backend: the OpenEnv ``rollout_func`` protocol.

``training.rollout_func`` (``module.path:function_name``, or a callable given
to ``launch_rollout``) is called with the list of seed prompts, and returns the
rows; ``launch_rollout`` normalises them. ``model``, ``tokenizer`` and
``max_steps`` are passed as keywords when the function's signature names them
(or takes ``**kwargs``). Nothing here imports OpenEnv itself: the bundled
example that drives an OpenEnv environment is
``agent_rollout.examples.openenv_rollout``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from agent_rollout._exceptions import RolloutValueError
from agent_rollout.backends import resolve_rollout_func

__all__ = ["call_rollout_func", "launch"]


def call_rollout_func(fn: Callable[..., Any], prompts: list[Any], extras: dict[str, Any]) -> Any:
    """``fn(prompts)``, plus ``model``/``tokenizer``/``max_steps`` its signature names.

    A function that takes ``**kwargs`` gets all three; one that names none of
    them is called as ``fn(prompts)``, the seed's contract. A named parameter
    with a default keeps it when the caller gave no ``model``/``tokenizer``
    (``None``): the seed called ``fn(prompts)``, so that default was in force.
    """
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: the plain contract
        return fn(prompts)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return fn(prompts, **extras)
    named = {
        p.name: p.default is not inspect.Parameter.empty
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    chosen = {
        key: value
        for key, value in extras.items()
        if key in named and not (value is None and named[key])
    }
    return fn(prompts, **chosen)


def launch(
    *,
    prompts: Sequence[Any],
    rollout_func: Union[str, Callable[..., Any], None],
    model: Any,
    tokenizer: Any,
    reward_fn: Any,
    max_steps: int,
    options: Mapping[str, Any],
) -> Any:
    """Backend entry point for ``launch_rollout("openenv", ...)``: the function's own rows.

    ``reward_fn`` and ``options`` are not used (the function owns its episode).
    """
    del reward_fn, options
    if rollout_func is None:
        raise RolloutValueError(
            "rollout_backend='openenv' requires training.rollout_func ('module.path:function_name')"
        )
    fn = resolve_rollout_func(rollout_func) if isinstance(rollout_func, str) else rollout_func
    extras = {"model": model, "tokenizer": tokenizer, "max_steps": max_steps}
    seeds = prompts if isinstance(prompts, list) else list(prompts)
    return call_rollout_func(fn, seeds, extras)
