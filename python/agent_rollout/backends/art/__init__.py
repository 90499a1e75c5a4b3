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

The jobs, one module each: :mod:`~agent_rollout.backends.art.rows`
(trajectories and groups to rows), :mod:`~agent_rollout.backends.art.gather`
(running the rollout function, gathering groups),
:mod:`~agent_rollout.backends.art.files` (ART's files read back),
:mod:`~agent_rollout.backends.art.quiet` (importing ART quietly); this one
holds ``launch`` and the names the other backends and callers use.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

from agent_rollout._exceptions import RolloutValueError
from agent_rollout._limits import DEFAULT_GROUP_SIZE, MAX_GROUP_SIZE
from agent_rollout.backends._ranking import BackendRows, refuse_all_dropped
from agent_rollout.backends.art.files import read_trajectory_groups
from agent_rollout.backends.art.gather import (
    RolloutFn,
    connection_failure,
    gather_groups,
    plan,
    policy_model,
    policy_servers,
    resolve_rollout,
    run_sync,
)
from agent_rollout.backends.art.quiet import import_art, quiet_litellm
from agent_rollout.backends.art.rows import (
    PROMPT_INDEX_KEY,
    to_message,
    trajectory_groups_to_rows,
    trajectory_to_row,
    type_name,
)

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
            raise RolloutValueError(
                "rollout_backend 'art': set rollout_func or rollout_source, not both"
            )
        if not isinstance(source, (str, os.PathLike)):
            raise RolloutValueError(
                f"rollout_source must be a path string, got {type_name(source)}"
            )
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
