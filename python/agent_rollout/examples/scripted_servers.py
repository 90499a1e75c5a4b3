"""Scripted OpenAI-compatible servers for the bundled examples: a policy and a RULER judge.

Both answer ``POST <base>/chat/completions`` on 127.0.0.1 with the standard
library's HTTP server, so the ``art`` and ``ruler`` examples run offline on CPU
with no model at all:

- the **policy** plays the adding agent of :mod:`agent_rollout.examples.art_rollout`:
  asked a question it calls the ``add`` tool with the integers in it; shown the
  tool's result it replies with a number. Per question, calls alternate between
  the right sum and the sum plus one, so a group of rollouts holds different
  answers and the ranking rule has something to rank;
- the **judge** reads the trajectories RULER sends (``<trajectory id="N">``
  blocks), works out the sum the question asks for, and scores each
  trajectory's final answer 0.9 when it is that sum, else 0.1.

:func:`serve` runs either one for as long as its ``with`` block lasts; ``python
-m agent_rollout.examples.scripted_servers policy|judge [--port N]`` runs one
in the foreground. ``agent-rollout run --serve`` starts them for a config whose
``rollout_policy_base_url`` / ``rollout_judge_base_url`` name a loopback address.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

__all__ = ["KINDS", "judge_reply", "policy_reply", "serve"]

Reply = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Turns a chat completions request body into the reply's assistant message."""

_NUMBER = re.compile(r"-?\d+")
_TRAJECTORY = re.compile(r'<trajectory id="([^"]+)">\n(.*?)\n</trajectory>', re.DOTALL)
_CONTEXT = re.compile(r"<context>\n(.*?)\n</context>", re.DOTALL)
_MAX_BODY = 16 * 1024 * 1024


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _question(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return _text(message)
    return ""


class _Policy:
    """The scripted policy; the per-question call count makes rollouts differ."""

    def __init__(self) -> None:
        self._answers: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, body: Mapping[str, Any]) -> dict[str, Any]:
        messages = list(body.get("messages") or [])
        question = _question(messages)
        last = messages[-1] if messages else {}
        if isinstance(last, Mapping) and last.get("role") == "tool":
            total = sum(int(n) for n in _NUMBER.findall(_text(last)))
            with self._lock:
                count = self._answers.get(question, 0)
                self._answers[question] = count + 1
            return {"role": "assistant", "content": str(total + count % 2)}
        numbers = [int(n) for n in _NUMBER.findall(question)]
        call = {
            "id": f"call_{len(messages)}",
            "type": "function",
            "function": {"name": "add", "arguments": json.dumps({"numbers": numbers})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}


def policy_reply() -> Reply:
    """A fresh scripted policy (its alternation starts over)."""
    return _Policy()


def _final_answer(messages: Any) -> str:
    if not isinstance(messages, list):
        return ""
    replies = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant"]
    return _text(replies[-1]) if replies else ""


def _json_list(raw: str) -> list[Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def judge_reply() -> Reply:
    """The scripted RULER judge."""

    def reply(body: Mapping[str, Any]) -> dict[str, Any]:
        messages = list(body.get("messages") or [])
        text = _text(messages[-1]) if messages else ""
        # RULER moves the messages all trajectories share into <context>.
        shared = _CONTEXT.search(text)
        context = _json_list(shared.group(1)) if shared else []
        scores = []
        for tid, raw in _TRAJECTORY.findall(text):
            trajectory = _json_list(raw)
            question = _question(context + trajectory)
            expected = str(sum(int(n) for n in _NUMBER.findall(question)))
            answer = _final_answer(context + trajectory)
            scores.append(
                {
                    "trajectory_id": tid,
                    "explanation": f"answered {answer!r}, the sum is {expected}",
                    "score": 0.9 if answer.strip() == expected else 0.1,
                }
            )
        return {"role": "assistant", "content": json.dumps({"scores": scores})}

    return reply


KINDS: Mapping[str, Callable[[], Reply]] = {"policy": policy_reply, "judge": judge_reply}
"""The servers this module can run, by name."""


class _Handler(BaseHTTPRequestHandler):
    timeout = 30
    server: _Server

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            length = int(self.headers.get("content-length", "0"))
            if not 0 <= length <= _MAX_BODY:
                raise ValueError(f"body of {length} bytes")
            body = json.loads(self.rfile.read(length))
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._send(400, {"error": {"message": f"bad request: {exc}"}})
            return
        self.server.seen.append({"path": self.path, "body": body})
        message = self.server.reply(body)
        self._send(
            200,
            {
                "id": f"chatcmpl-scripted-{len(self.server.seen)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": str(body.get("model", "scripted")),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    reply: Reply
    seen: list[dict[str, Any]]


@contextmanager
def serve(
    kind: str | Reply, host: str = "127.0.0.1", port: int = 0
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve a scripted model; yield ``(base URL ending in /v1, requests seen)``.

    ``kind`` is ``"policy"``, ``"judge"`` or a reply function of your own.
    ``port=0`` picks a free port. The server is shut down when the block ends,
    also on errors. Raises ``OSError`` when the address cannot be bound.
    """
    reply = KINDS[kind]() if isinstance(kind, str) else kind
    server = _Server((host, port), _Handler)
    server.reply = reply
    server.seen = []
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/v1", server.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Run a scripted OpenAI-compatible server.")
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with serve(args.kind, port=args.port) as (url, _):
        print(f"scripted {args.kind} at {url} (Ctrl-C stops it)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
