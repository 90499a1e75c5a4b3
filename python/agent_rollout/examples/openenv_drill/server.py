"""The drill environment and its FastAPI app, served by OpenEnv's ``create_app``.

Run it alone with ``python -m agent_rollout.examples.openenv_drill.server
--port 8765``; it binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any, Optional

from fastapi import FastAPI
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect

from agent_rollout.examples.openenv_drill.models import DrillAction, DrillObservation, DrillState
from agent_rollout.examples.openenv_drill.tasks import (
    DRILL_INSTRUCTIONS,
    build_task,
    grade_reply,
    seed_text,
)

DEFAULT_MAX_SESSIONS = 8
"""How many WebSocket sessions (one environment each) the app serves at once."""


class DrillEnvironment(Environment[DrillAction, DrillObservation, DrillState]):
    """One drill episode per ``reset(prompt=...)``; one graded reply per episode."""

    # Every session gets its own instance and nothing is shared between them.
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = DrillState()

    def reset(
        self,
        seed: Optional[int] = None,
        episode_id: Optional[str] = None,
        prompt: object = None,
        **kwargs: Any,
    ) -> DrillObservation:
        """Start an episode from the seed text in ``prompt``.

        ``seed`` is accepted for the OpenEnv interface and ignored: the drill
        holds no randomness. Extra keyword arguments are refused by name.
        """
        if kwargs:
            raise ValueError(f"reset: unexpected argument(s): {', '.join(sorted(kwargs))}")
        if prompt is None:
            raise ValueError("reset: a 'prompt' (the seed text) is required")
        text = seed_text(prompt, "reset: prompt")
        task = build_task(text)
        self._state = DrillState(
            episode_id=episode_id or str(uuid.uuid4()),
            step_count=0,
            prompt=text,
            kind=task.kind,
            reference=task.reference,
        )
        return DrillObservation(
            instructions=DRILL_INSTRUCTIONS,
            question=task.question,
            kind=task.kind,
            done=False,
            reward=None,
        )

    def step(
        self,
        action: DrillAction,
        timeout_s: Optional[float] = None,
        **kwargs: Any,
    ) -> DrillObservation:
        """Grade one reply and end the episode."""
        if not self._state.prompt:
            raise ValueError("step: no episode is running; call reset(prompt=...) first")
        if self._state.done:
            raise ValueError("step: this episode is already graded; call reset to start another")
        task = build_task(self._state.prompt)
        self._state.step_count += 1
        self._state.done = True
        return DrillObservation(
            instructions=DRILL_INSTRUCTIONS,
            question=task.question,
            kind=task.kind,
            reference=task.reference,
            done=True,
            reward=grade_reply(task, action.answer),
        )

    @property
    def state(self) -> DrillState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="agent-rollout-drill",
            description="Deterministic integer drill built from seed prompts",
            version="1.0.0",
        )


class _QuietPeerClose:
    """ASGI middleware: a WebSocket the client already closed is not an error.

    openenv-core 0.3.0 closes the socket again after the client's ``close``
    message and only expects ``RuntimeError`` from that; Starlette raises
    ``WebSocketDisconnect``, so every normal session end would be logged as
    "Exception in ASGI application" (upstream OpenEnv issue #1159).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            pass


def create_drill_app(max_sessions: int = DEFAULT_MAX_SESSIONS) -> FastAPI:
    """The OpenEnv FastAPI app (HTTP + WebSocket routes) serving the drill."""
    app = create_app(
        DrillEnvironment,
        DrillAction,
        DrillObservation,
        env_name="agent-rollout-drill",
        max_concurrent_envs=max_sessions,
    )
    app.add_middleware(_QuietPeerClose)
    return app


def main(argv: Optional[list[str]] = None) -> None:
    """Serve the drill with uvicorn until interrupted."""
    import uvicorn

    parser = argparse.ArgumentParser(description="Serve the agent_rollout OpenEnv drill.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    uvicorn.run(create_drill_app(), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
