"""The drill's action, observation and state, as OpenEnv pydantic types."""

from __future__ import annotations

from typing import Optional

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from agent_rollout.examples.openenv_drill.tasks import MAX_SEED_CHARS


class DrillAction(Action):
    """The agent's reply to the current task."""

    answer: str = Field(..., max_length=MAX_SEED_CHARS, description="The reply to grade")


class DrillObservation(Observation):
    """What the agent sees: the instructions and the task, then the verdict."""

    instructions: str = Field(default="", description="System instructions for the agent")
    question: str = Field(default="", description="The task to answer")
    kind: str = Field(default="", description="'arithmetic' or 'word_count'")
    reference: Optional[str] = Field(
        default=None, description="The correct answer, shown only once the episode is done"
    )


class DrillState(State):
    """The server-side episode state, including the reference answer."""

    prompt: str = Field(default="", description="The seed text this episode was built from")
    kind: str = Field(default="", description="'arithmetic' or 'word_count'")
    reference: str = Field(default="", description="The integer the reply must equal")
    done: bool = Field(default=False, description="Whether a reply has been graded")
