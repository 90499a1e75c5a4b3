"""The ``nemo_gym`` backend: NVIDIA NeMo Gym data, converted, or collected live.

- :mod:`~agent_rollout.backends.nemo_gym.convert`: Gym task and rollout rows
  (files or mappings) as training rows; needs nothing but the standard library.
- :mod:`~agent_rollout.backends.nemo_gym.live`: Gym's own servers started (or
  reused), rollouts collected, then converted; needs nemo-gym (Python 3.12+).
  Its jobs: :mod:`~agent_rollout.backends.nemo_gym.settings` (the options),
  :mod:`~agent_rollout.backends.nemo_gym.servers` (Gym's servers found, checked
  and started), :mod:`~agent_rollout.backends.nemo_gym.stopping` (what was
  started stopped, whatever the signals).

``launch`` (what ``launch_rollout("nemo_gym", ...)`` calls) picks one by
``options["gym_config"]``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from agent_rollout._errors import GymRowError
from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import MAX_ROLLOUT_ROWS
from agent_rollout.backends._ranking import BackendRows
from agent_rollout.backends.nemo_gym.convert import (
    ANSWER_FIELDS,
    TOOLS_FIELD,
    convert_gym_rows,
    gym_row_to_row,
    gym_rows,
    read_gym_jsonl,
    type_name,
)
from agent_rollout.backends.nemo_gym.live import launch_live

__all__ = [
    "ANSWER_FIELDS",
    "TOOLS_FIELD",
    "GymRowError",
    "convert_gym_rows",
    "gym_row_to_row",
    "gym_rows",
    "launch",
    "read_gym_jsonl",
]


def launch(
    *,
    prompts: Sequence[Any] | None,
    rollout_func: str | None,
    model: Any,
    tokenizer: Any,
    reward_fn: Any,
    max_steps: int,
    options: Mapping[str, Any],
) -> BackendRows:
    """Backend entry point for ``launch_rollout("nemo_gym", ...)``.

    With ``options["gym_config"]`` set (config key ``rollout_gym_config``) it
    runs NeMo Gym live (:mod:`agent_rollout.backends.nemo_gym.live`, needs nemo-gym):
    Gym collects rollouts for the tasks below against the policy at
    ``options["policy_base_url"]``, and they are converted as follows.
    The rows come from ``options["source"]`` (a Gym JSONL path) when it is set,
    otherwise from ``prompts`` (each a Gym row mapping), through
    :func:`convert_gym_rows` (``options["answer_from_response"]``, default
    false, lets the best-rewarded response answer a task without a reference).
    Nothing is generated:
    ``model``, ``tokenizer``, ``reward_fn`` and ``max_steps`` are not used, and a
    ``rollout_func`` is refused because this backend has nothing to call it with.
    """
    del model, tokenizer, reward_fn, max_steps  # conversion only; nothing runs
    if rollout_func is not None:
        raise RolloutValueError(
            "rollout_backend 'nemo_gym' converts Gym data and takes no rollout_func; "
            "use rollout_backend 'openenv' to run a function"
        )
    from_response = options.get("answer_from_response", False)
    if not isinstance(from_response, bool):
        raise RolloutValueError(
            f"answer_from_response must be a bool, got {type_name(from_response)}"
        )
    if options.get("gym_config") is not None:  # live: run Gym, then convert what it collected
        return launch_live(prompts, options, answer_from_response=from_response)
    source = options.get("source")
    if source is not None:
        if not isinstance(source, (str, os.PathLike)):
            raise RolloutValueError(
                f"rollout_source must be a path string, got {type_name(source)}"
            )
        return convert_gym_rows(gym_rows(source), answer_from_response=from_response)
    if not prompts:
        raise RolloutValueError(
            "rollout_backend 'nemo_gym' needs rollout_source (a Gym JSONL file) "
            "or prompts (Gym row mappings)"
        )
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise RolloutValueError(f"prompts must be a list of Gym rows, got {type_name(prompts)}")
    if len(prompts) > MAX_ROLLOUT_ROWS:
        raise RolloutValueError(f"prompts: more than {MAX_ROLLOUT_ROWS} Gym rows")
    return convert_gym_rows(
        ((f"row {index}", row) for index, row in enumerate(prompts)),
        answer_from_response=from_response,
    )
