"""One meaning of ``answer`` for backends that sample: the shared ranking rule.

``art``, ``ruler`` and (optionally) ``nemo_gym`` collect several rollouts of
one prompt, each with a reward. A row's ``answer`` must be a *reference* an
accuracy reward can compare against, never one unranked sample, so each prompt
gives at most one row:

- the answer is the final assistant text of the rollout with the highest
  reward, provided that reward is strictly higher than the reward of every
  rollout that gave a *different* answer (rollouts with the same answer tied
  at the top are one winner);
- otherwise the prompt is **dropped** (no row) and the drop is counted, with a
  reason from :data:`DROP_REASONS`, on the ``RolloutResult``.

A reward that is not a finite number is an error (:class:`NonFiniteReward`)
naming the prompt and the rollout; ``ruler``, whose rewards come from the
judge rather than from user code, turns it into a ``bad_score`` drop.

This module imports nothing heavy: ``launch_rollout`` reads its types.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from agent_rollout._errors import NonFiniteReward
from agent_rollout._exceptions import RolloutValueError

__all__ = [
    "DROP_REASONS",
    "BackendRows",
    "Candidate",
    "NonFiniteReward",
    "RolloutDrop",
    "pick_reference",
    "refuse_all_dropped",
]

DROP_REASONS: tuple[str, ...] = (
    "tie",
    "no_answer",
    "no_signal",
    "judge_failed",
    "bad_score",
    "answer_conflict",
)
"""Why a prompt can be left without a row:

- ``tie``: rollouts with different answers share the best reward;
- ``no_answer``: the best rollout's final assistant turn has no text;
- ``no_signal``: (ruler) the judge's best score is 0 or less;
- ``judge_failed``: (ruler) the judge raised or replied with something unusable;
- ``bad_score``: (ruler) the judge gave a score that is not a finite number;
- ``answer_conflict``: (nemo_gym) repeats of one task carry different expected answers.
"""


@dataclass(frozen=True)
class RolloutDrop:
    """One prompt (or task) that produced no row, and why.

    ``prompt_index`` is the seed prompt's index (for ``rollout_source`` files:
    the group's or task's index in the file); ``reason`` is one of
    :data:`DROP_REASONS`; ``detail`` says what was seen.
    """

    prompt_index: int
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"prompt {self.prompt_index}: {self.reason}: {self.detail}"


class BackendRows(list):  # type: ignore[type-arg]
    """A backend's rows (a plain ``list``) plus what did not make it into them.

    ``drops`` lists the prompts left without a row; ``unused_fields`` counts,
    per input field, the rows whose field has no place in a
    ``{"prompt", "answer"}`` row (NeMo Gym ``tools``, say).
    ``launch_rollout`` copies both onto the ``RolloutResult``.
    """

    def __init__(
        self,
        rows: Iterable[dict[str, Any]],
        drops: Sequence[RolloutDrop] = (),
        unused_fields: Optional[Mapping[str, int]] = None,
    ) -> None:
        super().__init__(rows)
        self.drops: tuple[RolloutDrop, ...] = tuple(drops)
        self.unused_fields: dict[str, int] = dict(unused_fields or {})

    def drop_counts(self) -> dict[str, int]:
        """Dropped prompts per reason."""
        return dict(Counter(drop.reason for drop in self.drops))


@dataclass(frozen=True)
class Candidate:
    """One rollout of a prompt: its index in the group, its reward and its row."""

    rollout: int
    reward: object
    """Checked when ranked: a number, finite."""
    row: dict[str, Any]


def _reward(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NonFiniteReward(f"{where}: reward must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise NonFiniteReward(f"{where}: reward {number!r} is not a finite number")
    return number


def pick_reference(
    candidates: Sequence[Candidate],
    *,
    prompt_index: int,
    where: str,
    min_best: Optional[float] = None,
) -> tuple[Optional[dict[str, Any]], Optional[RolloutDrop]]:
    """The winning row of one prompt's rollouts, or the drop that explains why none won.

    ``where`` names the prompt in error messages (``"prompt 3"``). With
    ``min_best``, a best reward at or below it is a ``no_signal`` drop (RULER's
    judge scores in [0, 1], where 0 means "every rollout failed"). Raises
    :class:`NonFiniteReward` for a reward that is not a finite number.
    """
    if not candidates:
        raise RolloutValueError(f"{where}: no rollouts to rank")
    rewards = [_reward(c.reward, f"{where} rollout {c.rollout}") for c in candidates]
    best = max(rewards)
    if min_best is not None and best <= min_best:
        return None, RolloutDrop(prompt_index, "no_signal", f"best reward {best}")
    top = [c for c, reward in zip(candidates, rewards, strict=True) if reward == best]
    answers = {c.row.get("answer", "") for c in top}
    if len(answers) > 1:
        ids = ", ".join(str(c.rollout) for c in top)
        return None, RolloutDrop(
            prompt_index,
            "tie",
            f"rollouts {ids} share the best reward {best} with different answers",
        )
    winner = top[0]
    if not winner.row.get("answer"):
        return None, RolloutDrop(
            prompt_index,
            "no_answer",
            f"rollout {winner.rollout} (reward {best}) ends without assistant text",
        )
    return winner.row, None


def refuse_all_dropped(backend: str, rows: BackendRows) -> None:
    """Raise ``ValueError`` when every prompt was dropped (there is nothing to train on)."""
    if rows or not rows.drops:
        return
    counts = ", ".join(f"{reason}: {n}" for reason, n in sorted(rows.drop_counts().items()))
    total = len(rows.drops)
    raise RolloutValueError(
        f"rollout_backend {backend!r}: every prompt was dropped ({total} of {total}; "
        f"{counts}); first: {rows.drops[0]}"
    )
