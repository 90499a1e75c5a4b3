"""The ``ruler`` backend: one row per seed prompt, the answer a RULER judge liked best.

RULER ships inside ``openpipe-art`` as ``art.rewards.ruler_score_group``: it
shows every trajectory of one group to an LLM judge (through LiteLLM) and sets
each trajectory's ``reward`` to the judge's score in [0, 1].

The rollouts run exactly as for ``rollout_backend: art`` (``rollout_func`` names
``fn(model, prompt) -> art.Trajectory``, ``group_size`` rollouts per prompt,
``agent_rollout.backends.art.gather_groups``); each group is scored as it
arrives (the ``after_each`` hook, as in ``art.gather_trajectory_groups``).
Then each prompt gives at most one row:

- ``prompt``: the winning trajectory's messages before its first assistant turn;
- ``answer``: the text of the winning trajectory's last assistant turn.

The winner follows the rule shared with ``art`` (``_ranking.pick_reference``):
the trajectory with the highest score, when that score is strictly higher than
the score of every trajectory with a different answer. A prompt is
**dropped**, and counted on the ``RolloutResult``, when its group has no
usable winner:

- ``judge_failed``: RULER raised (the judge was unreachable, or its reply did
  not parse, or held the wrong number of scores). When the judge could be
  reached for no prompt at all, that is a ``ConnectionError`` naming its
  address rather than every prompt dropped;
- ``bad_score``: a score is not a finite number (for ``art`` that is an error,
  since user code set it; here the judge did);
- ``no_signal``: the best score is 0 or less (the judge rated every rollout a
  failure; RULER's scale is [0, 1]);
- ``tie``: trajectories with different answers share the best score (RULER
  expressed no preference; identical answers tied at the top are one winner);
- ``no_answer``: the winner's last assistant turn has no text.

A rollout that raises, returns no Trajectory or has no prompt is not a judge
outcome: it stops the run with an error, as in the ``art`` backend.

Options: ``judge_model`` (required, a LiteLLM model name such as
``openai/gpt-4o-mini``) and ``judge_base_url`` (optional). With a base URL the
judge is any OpenAI-compatible server (vLLM, a LiteLLM proxy, ...): the model
name is sent as ``openai/<judge_model>`` (unless it already starts with
``openai/``), to ``<judge_base_url>/chat/completions``, with the key from
``OPENAI_API_KEY`` or the placeholder ``EMPTY`` when that is unset.

LiteLLM, which carries RULER's calls, is kept quiet while the judge is asked
(``agent_rollout.backends.art.quiet_litellm``; ``AGENT_ROLLOUT_DEBUG=1`` lets it
speak).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from agent_rollout._errors import NonFiniteReward
from agent_rollout._exceptions import RolloutValueError
from agent_rollout.backends import require_backend_package
from agent_rollout.backends._ranking import (
    BackendRows,
    Candidate,
    RolloutDrop,
    pick_reference,
    refuse_all_dropped,
)
from agent_rollout.backends.art import (
    PROMPT_INDEX_KEY,
    RolloutFn,
    connection_failure,
    gather_groups,
    import_art,
    plan,
    policy_model,
    policy_servers,
    quiet_litellm,
    resolve_rollout,
    run_sync,
    trajectory_to_row,
)

if TYPE_CHECKING:
    from art import TrajectoryGroup

__all__ = ["judge_params", "launch", "pick_winner", "run"]

logger = logging.getLogger(__name__)

_FAILED_KEY = "agent_rollout_ruler_error"
_UNREACHABLE_KEY = "agent_rollout_ruler_unreachable"


def judge_params(judge_model: Any, judge_base_url: Any) -> tuple[str, dict[str, object]]:
    """Check the judge options; return the LiteLLM model name and extra params."""
    if not isinstance(judge_model, str) or not judge_model.strip():
        raise RolloutValueError(
            "rollout_backend 'ruler' requires training.rollout_judge_model "
            f"(a LiteLLM model name such as 'openai/gpt-4o-mini'), got {judge_model!r}"
        )
    if judge_base_url is None:
        return judge_model, {}
    if not isinstance(judge_base_url, str) or not judge_base_url.startswith(
        ("http://", "https://")
    ):
        raise RolloutValueError(
            "rollout_judge_base_url must be an http(s) URL such as "
            f"'http://127.0.0.1:8000/v1', got {judge_base_url!r}"
        )
    model = judge_model if judge_model.startswith("openai/") else f"openai/{judge_model}"
    api_key = os.environ.get("OPENAI_API_KEY") or "EMPTY"
    return model, {"api_base": judge_base_url.rstrip("/"), "api_key": api_key}


def pick_winner(
    group: TrajectoryGroup, index: int
) -> tuple[Optional[dict[str, Any]], Optional[RolloutDrop]]:
    """The row of a scored group's best trajectory, or ``None`` and the drop."""
    error = group.metadata.get(_FAILED_KEY)
    if error is not None:
        return None, RolloutDrop(index, "judge_failed", str(error))
    where = f"prompt {index}"
    candidates = [
        Candidate(k, trajectory.reward, trajectory_to_row(trajectory, where=f"{where} rollout {k}"))
        for k, trajectory in enumerate(group.trajectories)
    ]
    try:
        return pick_reference(candidates, prompt_index=index, where=where, min_best=0.0)
    except NonFiniteReward as exc:
        return None, RolloutDrop(index, "bad_score", str(exc).removeprefix(f"{where} "))


async def _gather_scored(
    seeds: list[Any],
    fn: Any,
    model: Any,
    group_size: int,
    max_steps: int,
    judge_model: str,
    extra: dict[str, object],
    servers: dict[str, Optional[str]],
    judge_url: Optional[str],
) -> list[TrajectoryGroup]:
    from art.rewards import ruler_score_group

    async def score(group: TrajectoryGroup) -> TrajectoryGroup:
        try:
            scored = await ruler_score_group(group, judge_model, extra_litellm_params=extra or None)
        except Exception as exc:  # any judge failure drops this prompt only
            unreachable = connection_failure(
                exc, "the judge", {"rollout_judge_base_url": judge_url}, request_url=False
            )
            if unreachable is not None:
                group.metadata[_UNREACHABLE_KEY] = str(unreachable).removeprefix("the judge: ")
            group.metadata[_FAILED_KEY] = f"{type(exc).__name__}: {exc}"
            return group
        if scored is None:  # only with swallow_exceptions=True, kept for safety
            group.metadata[_FAILED_KEY] = "ruler_score_group returned None"
            return group
        scored.metadata.update(group.metadata)  # RULER builds a new group without it
        return scored

    return await gather_groups(
        seeds,
        fn,
        model=model,
        group_size=group_size,
        max_steps=max_steps,
        after_each=score,
        backend="ruler",
        servers=servers,
    )


def run(
    *,
    prompts: Sequence[Any] | None,
    rollout_func: Union[str, RolloutFn, None],
    model: Any = None,
    max_steps: int = 64,
    options: Mapping[str, Any],
) -> BackendRows:
    """Roll out, score with RULER and keep each prompt's winner; never raises for drops.

    Returns a :class:`~agent_rollout.backends._ranking.BackendRows` (a list of
    rows, in prompt order, whose ``drops`` say which prompts were dropped and why).
    """
    require_backend_package("ruler")
    import_art()  # before rollout_func's module can import it: no network, no notices
    judge_url = options.get("judge_base_url")
    judge_model, extra = judge_params(options.get("judge_model"), judge_url)
    fn = resolve_rollout(rollout_func, "ruler")
    seeds, group_size = plan(prompts, options, "ruler")
    model = policy_model(model, options, "ruler")
    servers = policy_servers(options)
    with quiet_litellm():
        groups = run_sync(
            lambda: _gather_scored(
                seeds, fn, model, group_size, max_steps, judge_model, extra, servers, judge_url
            )
        )
    unreachable = [group.metadata.get(_UNREACHABLE_KEY) for group in groups]
    if groups and all(unreachable):
        raise ConnectionError(
            f"rollout_backend 'ruler': the judge could not be reached for any of the "
            f"{len(groups)} prompts: {unreachable[0]}"
        )
    rows: list[dict[str, Any]] = []
    drops: list[RolloutDrop] = []
    for group in groups:
        index = int(group.metadata[PROMPT_INDEX_KEY])  # type: ignore[arg-type]
        row, drop = pick_winner(group, index)
        if drop is not None:
            drops.append(drop)
        elif row is not None:
            rows.append(row)
    return BackendRows(rows, drops)


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
    """Backend entry point for ``launch_rollout("ruler", ...)``.

    Logs a warning with the dropped count (per reason) when any prompt was
    dropped (the drops are also on the ``RolloutResult``), and raises
    ``ValueError`` when every prompt was. ``tokenizer`` and ``reward_fn`` are
    not used: the judge is the reward.
    """
    del tokenizer, reward_fn
    result = run(
        prompts=prompts,
        rollout_func=rollout_func,
        model=model,
        max_steps=max_steps,
        options=options,
    )
    refuse_all_dropped("ruler", result)
    if result.drops:
        counts = ", ".join(f"{reason}: {n}" for reason, n in sorted(result.drop_counts().items()))
        logger.warning(
            "rollout_backend 'ruler': dropped %d of %d prompts with no usable winner (%s)",
            len(result.drops),
            len(result.drops) + len(result),
            counts,
        )
    return result
