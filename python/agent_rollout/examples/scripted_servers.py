"""Scripted OpenAI-compatible servers for the bundled examples: a policy and a RULER judge.

Both answer ``POST <base>/chat/completions`` on 127.0.0.1 with the standard
library's HTTP server, so the ``art``, ``ruler`` and ``nemo_gym`` live examples
run offline on CPU with no model at all. They are examples of a *good* policy
and a *good* judge: the right answer to a question is the drill's reference
(:func:`agent_rollout.examples.openenv_drill.tasks.reference_answer`: the result
of the first ``a + b``, ``a - b`` or ``a * b`` in it, else its word count), the
same answer the ``openenv`` example takes from its environment.

- the **policy**, asked a question, calls the tool that solves it when the
  request offers one (``calculate`` with the expression, or ``count_words``
  with the text: the tools of :mod:`agent_rollout.examples.art_rollout`);
  shown the tool's result, or offered no such tool, it replies with the
  answer. On every second reply to one question it answers one too many, on
  purpose, so a group of rollouts holds a right and a wrong answer and the
  ranking rule has something to rank (it counts for the last
  :data:`~agent_rollout._limits.SCRIPTED_QUESTIONS_KEPT` questions asked: a
  question forgotten starts over, right);
- the **judge** reads the trajectories RULER sends (``<trajectory id="N">``
  blocks), works out the right answer to the question and scores each
  trajectory's final answer 0.9 when it is that answer, else 0.1.

A body that is not a chat completions request (not JSON, not an object,
``messages`` missing or of the wrong type, a number too long to read, nesting
too deep, ...) is answered ``400`` with ``{"error": {"message": ...}}``; a
body over :data:`~agent_rollout._limits.MAX_SCRIPTED_BODY_BYTES` (1 MiB) ``413``,
from its ``Content-Length``, without reading it; an unknown route ``404``;
nothing drops the connection or prints a traceback. Both answer in time linear
in the body: the judge finds the blocks RULER sends with ``str.find`` (no
backtracking regex), and what the trajectories share is read once. What a
server keeps is bounded too, however long it runs: the policy's reply counts
(``SCRIPTED_QUESTIONS_KEPT`` questions, each by a 16-byte digest) and the
requests ``serve`` yields (the last ``SCRIPTED_REQUESTS_KEPT``).

:func:`serve` runs either one for as long as its ``with`` block lasts; ``python
-m agent_rollout.examples.scripted_servers policy|judge [--port N]`` runs one
in the foreground. ``agent-rollout run --serve`` starts them for a config whose
``rollout_policy_base_url`` / ``rollout_judge_base_url`` name a loopback address;
the bundled configs use :data:`BUNDLED_PORTS`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from agent_rollout._limits import (
    MAX_SCRIPTED_BODY_BYTES,
    SCRIPTED_QUESTIONS_KEPT,
    SCRIPTED_REQUESTS_KEPT,
)
from agent_rollout.examples.openenv_drill.tasks import expression_in, reference_answer

__all__ = [
    "BUNDLED_PORTS",
    "KINDS",
    "BadRequest",
    "check_request",
    "judge_reply",
    "parse_context",
    "parse_trajectories",
    "policy_reply",
    "serve",
    "tool_call_for",
]

Reply = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Turns a (checked) chat completions request body into the reply's assistant message."""

BUNDLED_PORTS: Mapping[str, int] = {"policy": 8791, "judge": 8792}
"""The loopback ports the bundled configs give the scripted policy and judge."""

_INTEGER = re.compile(r"-?\d{1,30}")
_TRAJECTORY_OPEN = '<trajectory id="'
_TRAJECTORY_CLOSE = "\n</trajectory>"
_CONTEXT_OPEN = "<context>\n"
_CONTEXT_CLOSE = "\n</context>"
_SHOWN_ANSWER = 80
"""The most characters of a trajectory's answer the judge's explanation quotes."""


class BadRequest(ValueError):
    """A request body that is not a chat completions request; answered with 400."""

    status = 400


class _TooLarge(BadRequest):
    """A body over ``MAX_SCRIPTED_BODY_BYTES``; answered with 413, unread."""

    status = 413


# ---- the request ---------------------------------------------------------------------------


def _check_parts(content: list[Any], where: str) -> None:
    for index, part in enumerate(content):
        if not isinstance(part, dict):
            raise BadRequest(f"{where}[{index}] must be an object")
        for key in ("type", "text"):
            if key in part and not isinstance(part[key], str):
                raise BadRequest(f"{where}[{index}].{key} must be a string")


def _check_tool_calls(calls: Any, where: str) -> None:
    if not isinstance(calls, list):
        raise BadRequest(f"{where} must be an array")
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise BadRequest(f"{where}[{index}] must be an object with a 'function' object")
        for key in ("name", "arguments"):
            if not isinstance(function.get(key), str):
                raise BadRequest(f"{where}[{index}].function.{key} must be a string")


def _check_message(message: Any, where: str) -> None:
    if not isinstance(message, dict):
        raise BadRequest(f"{where} must be an object")
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise BadRequest(f"{where}.role must be a non-empty string")
    content = message.get("content")
    if isinstance(content, list):
        _check_parts(content, f"{where}.content")
    elif content is not None and not isinstance(content, str):
        raise BadRequest(f"{where}.content must be a string, an array of parts or null")
    if message.get("tool_calls") is not None:
        _check_tool_calls(message["tool_calls"], f"{where}.tool_calls")
    if "tool_call_id" in message and not isinstance(message["tool_call_id"], str):
        raise BadRequest(f"{where}.tool_call_id must be a string")


def check_request(body: Any) -> dict[str, Any]:
    """``body`` when it is a chat completions request these servers can answer.

    Raises :class:`BadRequest` naming the first field at fault: the body must
    be an object whose ``messages`` is a non-empty array of messages (``role``
    a string; ``content`` a string, an array of part objects or null;
    ``tool_calls`` an array of ``{"function": {"name": str, "arguments": str}}``),
    ``model`` a string if present and ``tools`` an array of objects if present.
    """
    if not isinstance(body, dict):
        raise BadRequest(f"the body must be a JSON object, got {_json_type(body)}")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest(f"'messages' must be a non-empty array, got {_json_type(messages)}")
    for index, message in enumerate(messages):
        _check_message(message, f"messages[{index}]")
    if "model" in body and not isinstance(body["model"], str):
        raise BadRequest(f"'model' must be a string, got {_json_type(body['model'])}")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(tool, dict) for tool in tools)
    ):
        raise BadRequest("'tools' must be an array of objects")
    return body


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


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


def _tool_names(tools: Any) -> set[str]:
    names = set()
    for tool in tools or []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


# ---- the policy ----------------------------------------------------------------------------


def tool_call_for(question: str) -> tuple[str, dict[str, str]]:
    """The tool that solves ``question`` and its arguments.

    ``("calculate", {"expression": "12 * 9"})`` when the question holds an
    expression, else ``("count_words", {"text": question})``.
    """
    expression = expression_in(question)
    if expression is not None:
        return "calculate", {"expression": expression}
    return "count_words", {"text": question}


class _Policy:
    """The scripted policy; the per-question reply count makes rollouts differ.

    Counts are kept for the ``SCRIPTED_QUESTIONS_KEPT`` questions replied to last,
    each by a digest of its text (a question may be up to a body long): past them,
    the one replied to longest ago is forgotten.
    """

    def __init__(self) -> None:
        self._replies: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def _count(self, question: str) -> int:
        """How many replies to ``question`` came before this one (which is counted)."""
        key = hashlib.blake2b(question.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            count = self._replies.pop(key, 0)
            self._replies[key] = count + 1  # the newest, last
            if len(self._replies) > SCRIPTED_QUESTIONS_KEPT:
                self._replies.popitem(last=False)
        return count

    def __call__(self, body: Mapping[str, Any]) -> dict[str, Any]:
        messages = list(body["messages"])
        question = _question(messages)
        last = messages[-1]
        if last.get("role") != "tool":
            name, arguments = tool_call_for(question)
            if name in _tool_names(body.get("tools")):
                call = {
                    "id": f"call_{len(messages)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
                return {"role": "assistant", "content": None, "tool_calls": [call]}
        result = _text(last).strip() if last.get("role") == "tool" else ""
        answer = result if _INTEGER.fullmatch(result) else reference_answer(question)
        if self._count(question) % 2:  # every second reply to a question is wrong, on purpose
            answer = str(int(answer) + 1)
        return {"role": "assistant", "content": answer}


def policy_reply() -> Reply:
    """A fresh scripted policy (its right/wrong alternation starts over)."""
    return _Policy()


# ---- the judge -----------------------------------------------------------------------------


def parse_trajectories(text: str) -> list[tuple[str, str]]:
    """The ``(id, body)`` of each ``<trajectory id="ID">\\nBODY\\n</trajectory>`` block
    in ``text``, in order: what ``re.findall(r'<trajectory id="([^"]+)">\\n(.*?)\\n</trajectory>',
    text, re.DOTALL)`` finds, in one pass.

    Only ``str.find`` scans, at most twice over any stretch: time linear in
    the text, whatever it holds (that regex scans to the end of the text from
    every opening tag that is never closed: quadratic time).
    """
    found = []
    at = text.find(_TRAJECTORY_OPEN)
    while at >= 0:
        start = at + len(_TRAJECTORY_OPEN)
        quote = text.find('"', start)
        if quote < 0:
            break  # no later tag has a quote after its id either
        if quote == start or not text.startswith('">\n', quote):
            # Not a tag. The next one's quote is at or after this one, so
            # the search from here looks again at no more than this id.
            at = text.find(_TRAJECTORY_OPEN, at + 1)
            continue
        end = text.find(_TRAJECTORY_CLOSE, quote + 3)
        if end < 0:
            break  # no block after this one is closed either
        found.append((text[start:quote], text[quote + 3 : end]))
        at = text.find(_TRAJECTORY_OPEN, end + len(_TRAJECTORY_CLOSE))
    return found


def parse_context(text: str) -> Optional[str]:
    """The body of the first ``<context>\\nBODY\\n</context>`` block in ``text``, else
    None (``re.search(r"<context>\\n(.*?)\\n</context>", text, re.DOTALL)``), in one pass."""
    at = text.find(_CONTEXT_OPEN)
    if at < 0:
        return None
    end = text.find(_CONTEXT_CLOSE, at + len(_CONTEXT_OPEN))
    return None if end < 0 else text[at + len(_CONTEXT_OPEN) : end]


def _last(messages: list[Any], role: str) -> Optional[Mapping[str, Any]]:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == role:
            return message
    return None


def _json_list(raw: str) -> list[Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    return value if isinstance(value, list) else []


def _shown(answer: str) -> str:
    if len(answer) <= _SHOWN_ANSWER:
        return repr(answer)
    return f"{answer[:_SHOWN_ANSWER]!r}... ({len(answer)} characters)"


def judge_reply() -> Reply:
    """The scripted RULER judge."""

    def reply(body: Mapping[str, Any]) -> dict[str, Any]:
        text = _text(body["messages"][-1])
        # RULER moves the messages all trajectories share into <context>. A
        # trajectory's own question and answer come first; what it lacks is
        # the context's, worked out once (not once per trajectory).
        shared = parse_context(text)
        context = _json_list(shared) if shared is not None else []
        question = _last(context, "user")
        shared_expected = reference_answer(_text(question) if question else "")
        replied = _last(context, "assistant")
        shared_answer = _text(replied) if replied else ""
        shared_stripped = shared_answer.strip()
        scores = []
        for tid, raw in parse_trajectories(text):
            trajectory = _json_list(raw)
            own_question = _last(trajectory, "user")
            expected = (
                shared_expected if own_question is None else reference_answer(_text(own_question))
            )
            own_reply = _last(trajectory, "assistant")
            answer = shared_answer if own_reply is None else _text(own_reply)
            right = (shared_stripped if own_reply is None else answer.strip()) == expected
            scores.append(
                {
                    "trajectory_id": tid,
                    "explanation": f"answered {_shown(answer)}, the right answer is {expected}",
                    "score": 0.9 if right else 0.1,
                }
            )
        return {"role": "assistant", "content": json.dumps({"scores": scores})}

    return reply


KINDS: Mapping[str, Callable[[], Reply]] = {"policy": policy_reply, "judge": judge_reply}
"""The servers this module can run, by name."""


# ---- the HTTP server -----------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    timeout = 30
    server: _Server

    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, _error(f"no route POST {self.path}"))
            return
        try:
            body = check_request(self._read_json())
        except BadRequest as exc:
            self._send(exc.status, _error(f"bad request: {exc}"))
            return
        number = self.server.count()
        self.server.seen.append({"path": self.path, "body": body})
        try:
            message = self.server.reply(body)
        except Exception as exc:  # a bug in a reply function: an answer, not a dropped connection
            self._send(500, _error(f"the scripted server failed: {type(exc).__name__}: {exc}"))
            return
        self._send(
            200,
            {
                "id": f"chatcmpl-scripted-{number}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or "scripted",
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

    def do_GET(self) -> None:
        # The model list an OpenAI client (and `run`'s probe of a bundled address) asks for.
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [MODEL_ENTRY]})
            return
        self._send(404, _error(f"no route GET {self.path}"))

    def _read_json(self) -> Any:
        raw_length = self.headers.get("content-length")
        try:
            length = int(raw_length or "")
        except ValueError:
            self.close_connection = True
            raise BadRequest(
                f"a JSON body with a Content-Length is required, got {raw_length!r}"
            ) from None
        if length > MAX_SCRIPTED_BODY_BYTES:
            self.close_connection = True  # the body is never read
            raise _TooLarge(
                f"a body of {length} bytes is more than a scripted server reads "
                f"({MAX_SCRIPTED_BODY_BYTES} bytes)"
            )
        if length < 1:
            self.close_connection = True
            raise BadRequest(f"a body of {length} bytes; expected 1 to {MAX_SCRIPTED_BODY_BYTES}")
        data = self.rfile.read(length)
        try:
            return json.loads(data)
        except RecursionError:
            raise BadRequest("the body is nested too deeply") from None
        except ValueError as exc:  # not JSON, not UTF-8, a number too long to convert
            raise BadRequest(f"the body is not valid JSON: {exc}") from None

    def send_error(
        self, code: int, message: Optional[str] = None, explain: Optional[str] = None
    ) -> None:
        # The base class's own errors (a malformed request line, an unsupported
        # method, ...) in JSON too.
        self.close_connection = True
        self._send(code, _error(message or self.responses.get(code, ("error",))[0]))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


MODEL_ENTRY = {"id": "scripted", "object": "model", "created": 0, "owned_by": "agent-rollout"}
"""The one model a scripted server lists."""


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    reply: Reply
    seen: deque[dict[str, Any]]  # the last SCRIPTED_REQUESTS_KEPT requests
    requests = 0
    lock: threading.Lock

    def count(self) -> int:
        """This request's number, from 1."""
        with self.lock:
            self.requests += 1
            return self.requests

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away or timed out: nothing to print


@contextmanager
def serve(
    kind: str | Reply, host: str = "127.0.0.1", port: int = 0
) -> Iterator[tuple[str, deque[dict[str, Any]]]]:
    """Serve a scripted model; yield ``(base URL ending in /v1, requests seen)``: the
    last ``SCRIPTED_REQUESTS_KEPT`` requests answered, each ``{"path", "body"}``.

    ``kind`` is ``"policy"``, ``"judge"`` or a reply function of your own
    (called with a checked request body). ``port=0`` picks a free port. The
    server is shut down when the block ends, also on errors. Raises
    ``OSError`` when the address cannot be bound.
    """
    reply = KINDS[kind]() if isinstance(kind, str) else kind
    server = _Server((host, port), _Handler)
    server.reply = reply
    server.seen = deque(maxlen=SCRIPTED_REQUESTS_KEPT)
    server.lock = threading.Lock()
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
