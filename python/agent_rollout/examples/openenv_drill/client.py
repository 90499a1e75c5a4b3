"""The drill's client: OpenEnv's ``EnvClient`` over the server's WebSocket session."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from agent_rollout.examples.openenv_drill.models import DrillAction, DrillObservation, DrillState


class DrillEnv(EnvClient[DrillAction, DrillObservation, DrillState]):
    """Async client; call ``.sync()`` for the blocking wrapper.

    ``DrillEnv(base_url="http://127.0.0.1:8765")`` talks to ``ws://.../ws``:
    OpenEnv turns the HTTP base URL into the WebSocket one itself.
    """

    def _step_payload(self, action: DrillAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[DrillObservation]:
        done = bool(payload.get("done", False))
        reward = payload.get("reward")
        observation = DrillObservation(
            **payload.get("observation", {}),
            done=done,
            reward=reward,
        )
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> DrillState:
        return DrillState(**payload)
