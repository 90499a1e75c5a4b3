"""A tiny, deterministic OpenEnv environment: the "drill".

Each episode is built from one seed prompt. If the prompt contains a simple
integer sum, difference or product (``17 + 25``), the drill asks for its
result; otherwise it asks how many whitespace-separated words the prompt has.
Either way the reference answer is one integer, and a step grades a reply
against it (reward 1.0 or 0.0, then the episode is done).

``tasks`` is plain Python and needs nothing installed; ``models``, ``server``
and ``client`` are built on ``openenv-core`` and import it.
"""

from agent_rollout.examples.openenv_drill.tasks import (
    DRILL_INSTRUCTIONS,
    MAX_SEED_CHARS,
    DrillTask,
    build_task,
    calculate,
    count_words,
    expression_in,
    grade_reply,
    reference_answer,
    seed_text,
    task_messages,
)

__all__ = [
    "DRILL_INSTRUCTIONS",
    "MAX_SEED_CHARS",
    "DrillTask",
    "build_task",
    "calculate",
    "count_words",
    "expression_in",
    "grade_reply",
    "reference_answer",
    "seed_text",
    "task_messages",
]
