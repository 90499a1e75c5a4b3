"""Rollout functions for ``rollout_backend: openenv``, driving the drill environment.

The ``openenv`` contract: ``training.rollout_func`` names a function that takes
the list of seed prompts and returns rows ``{"prompt": ..., "answer"?: ...}``.

- ``rollout`` plays one drill episode per seed prompt against a running OpenEnv
  server, through OpenEnv's own client, and builds each row from what the
  server sent: the chat prompt from the observation, the answer from the
  environment's reference (its state). The server's base URL comes from
  ``AGENT_ROLLOUT_OPENENV_URL`` (default ``http://127.0.0.1:8765``).
- ``offline_rollout`` builds the same rows without a server or ``openenv``.
- ``serve_drill_env`` runs the drill server in this process on a free loopback
  port for as long as its ``with`` block lasts.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Optional

from agent_rollout._extras import install_hint
from agent_rollout._limits import MAX_ROLLOUT_ROWS, MAX_ROWS_LIMIT
from agent_rollout.examples.openenv_drill.tasks import (
    DRILL_INSTRUCTIONS,
    build_task,
    seed_text,
    task_messages,
)

if TYPE_CHECKING:
    from openenv.core.sync_client import SyncEnvClient

URL_ENV_VAR = "AGENT_ROLLOUT_OPENENV_URL"
DEFAULT_URL = "http://127.0.0.1:8765"
CONNECT_TIMEOUT_S = 10.0
MESSAGE_TIMEOUT_S = 30.0
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
_URL_SCHEMES = ("http://", "https://", "ws://", "wss://")
_INSTALL_HINT = install_hint("openenv")

Row = dict[str, Any]


def _seed_texts(prompts: object) -> list[str]:
    """Check the seed prompt list and return the text of each seed."""
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise TypeError(
            f"openenv rollout: prompts must be a list of seed prompts, got {type(prompts).__name__}"
        )
    if not prompts:
        raise ValueError("openenv rollout: no seed prompts were given")
    if len(prompts) > MAX_ROLLOUT_ROWS:
        raise ValueError(
            f"openenv rollout: {len(prompts)} seed prompts; at most {MAX_ROLLOUT_ROWS} are allowed"
        )
    return [seed_text(seed, f"seed prompt {index}") for index, seed in enumerate(prompts)]


def server_url() -> str:
    """The drill server's base URL: ``AGENT_ROLLOUT_OPENENV_URL`` or the default."""
    url = os.environ.get(URL_ENV_VAR, "").strip() or DEFAULT_URL
    if not url.startswith(_URL_SCHEMES):
        raise ValueError(
            f"{URL_ENV_VAR}={url!r} is not a server URL; expected one starting with "
            f"{', '.join(_URL_SCHEMES)}"
        )
    return url.rstrip("/")


def _connect(url: str) -> SyncEnvClient[Any, Any, Any]:
    try:
        from agent_rollout.examples.openenv_drill.client import DrillEnv
    except ImportError as exc:
        raise ImportError(
            f"the openenv rollout needs the openenv-core package: {_INSTALL_HINT}"
        ) from exc
    client = DrillEnv(
        base_url=url,
        connect_timeout_s=CONNECT_TIMEOUT_S,
        message_timeout_s=MESSAGE_TIMEOUT_S,
    ).sync()
    try:
        client.connect()
    except (ConnectionError, OSError, TimeoutError) as exc:
        client.close()
        raise ConnectionError(
            f"openenv rollout: no OpenEnv drill server answered at {url} ({exc}); start one with "
            "`python -m agent_rollout.examples.openenv_drill.server` or point "
            f"{URL_ENV_VAR} at a running one"
        ) from exc
    return client


def rollout(prompts: Sequence[Any]) -> list[Row]:
    """Play one drill episode per seed prompt on the OpenEnv server; one row each.

    Each episode is ``reset(prompt=seed)`` followed by a ``state()`` read over
    one WebSocket session; nothing is stepped, so no reply is invented. Rows
    come back in seed order. A seed that is not text, or that the server
    refuses, raises an error naming its index.
    """
    texts = _seed_texts(prompts)
    url = server_url()
    client = _connect(url)
    rows: list[Row] = []
    try:
        for index, text in enumerate(texts):
            try:
                observation = client.reset(prompt=text).observation
                state = client.state()
            except Exception as exc:  # the client raises RuntimeError, TimeoutError, ...
                raise RuntimeError(
                    f"openenv rollout: seed prompt {index}: the drill server at {url} failed: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            if not state.reference or state.prompt != text:
                raise RuntimeError(
                    f"openenv rollout: seed prompt {index}: the server at {url} returned a state "
                    "for another episode (is it the agent_rollout drill server?)"
                )
            rows.append(
                {
                    "prompt": task_messages(observation.instructions, observation.question),
                    "answer": state.reference,
                }
            )
    finally:
        client.close()
    return rows


def offline_rollout(prompts: Sequence[Any], *, rows: Optional[int] = None) -> list[Row]:
    """The rows ``rollout`` would produce, built locally without a server.

    With ``rows`` set, the seeds are cycled until exactly that many rows exist
    (handy for feeding large, realistic batches to the normaliser).
    """
    texts = _seed_texts(prompts)
    if rows is None:
        count = len(texts)
    elif isinstance(rows, bool) or not isinstance(rows, int):
        raise TypeError(f"offline_rollout: rows must be an int, got {type(rows).__name__}")
    elif not 1 <= rows <= MAX_ROWS_LIMIT:
        raise ValueError(f"offline_rollout: rows must be in [1, {MAX_ROWS_LIMIT}], got {rows}")
    else:
        count = rows
    tasks = [build_task(text) for text in texts]
    width = len(tasks)
    out: list[Row] = []
    append = out.append
    for position in range(count):
        task = tasks[position % width]
        append(
            {
                "prompt": [
                    {"role": "system", "content": DRILL_INSTRUCTIONS},
                    {"role": "user", "content": task.question},
                ],
                "answer": task.reference,
            }
        )
    return out


def health(base_url: str, timeout_s: float) -> bool:
    """True when ``GET /health`` answers ``healthy`` (proxies bypassed)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{base_url}/health", timeout=timeout_s) as response:
            body = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(body, dict) and body.get("status") == "healthy"


def _wait_for_start(server: Any, thread: threading.Thread, base_url: str, timeout_s: float) -> None:
    """Return once the drill server answers its health check (``serve_drill_env``)."""
    deadline = time.monotonic() + timeout_s
    while not (server.started and health(base_url, timeout_s=1.0)):
        if not thread.is_alive():
            raise RuntimeError(f"drill server at {base_url} stopped during start-up")
        if time.monotonic() > deadline:
            raise TimeoutError(f"drill server at {base_url} not ready after {timeout_s:.0f} s")
        time.sleep(0.02)


@contextmanager
def serve_drill_env(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
) -> Iterator[str]:
    """Serve the drill in a background thread; yield its base URL.

    ``port=0`` picks a free port (the socket is bound before the server starts,
    so no other process can take it in between). The server is stopped and
    its thread joined when the block ends, however it ends. Start-up that does
    not finish within ``startup_timeout_s`` raises ``TimeoutError``.
    """
    try:
        import uvicorn

        from agent_rollout.examples.openenv_drill.server import create_drill_app
    except ImportError as exc:
        raise ImportError(
            f"the drill server needs the openenv-core package: {_INSTALL_HINT}"
        ) from exc

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"drill server: cannot bind {host}:{port}: {exc}") from exc
    bound_port = sock.getsockname()[1]
    url_host = f"[{host}]" if family == socket.AF_INET6 else host
    base_url = f"http://{url_host}:{bound_port}"

    config = uvicorn.Config(create_drill_app(), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="openenv-drill-server", daemon=True
    )
    thread.start()
    try:
        # The loop is in a function of its own: see "Cleanup around loops" in
        # docs/architecture.md.
        _wait_for_start(server, thread, base_url, startup_timeout_s)
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_TIMEOUT_S)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=STOP_TIMEOUT_S)
        sock.close()
