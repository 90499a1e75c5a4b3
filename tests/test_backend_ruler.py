"""The ``ruler`` backend end to end: real ART rollouts, real RULER, real LiteLLM client.

The judge is a small OpenAI-compatible server this file starts on 127.0.0.1. It
reads the trajectories RULER sends, works out the sum the question asks for and
scores each trajectory's final answer; words in the question make it misbehave
on purpose (see ``_judge``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# LiteLLM (imported by ART) otherwise fetches its price list from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
art = pytest.importorskip("art")

from agent_rollout import launch_rollout  # noqa: E402
from agent_rollout.backends import ruler  # noqa: E402
from agent_rollout.examples.art_rollout import SYSTEM_PROMPT, ScriptedPolicy  # noqa: E402

ROLLOUT = "agent_rollout.examples.art_rollout:rollout"
TRAJECTORY_RE = re.compile(r'<trajectory id="(\d+)">\n(.*?)\n</trajectory>', re.DOTALL)
QUESTION_RE = re.compile(r"(-?\d+) \+ (-?\d+)")


def _final_answer(messages: list[dict[str, Any]]) -> str:
    replies = [m for m in messages if m.get("role") == "assistant"]
    return str(replies[-1].get("content") or "") if replies else ""


def _judge(user_text: str) -> str:
    """The judge's reply content for one RULER request (a JSON string, or not)."""
    trajectories = [(tid, json.loads(body)) for tid, body in TRAJECTORY_RE.findall(user_text)]
    a, b = (int(n) for n in QUESTION_RE.search(user_text).groups())  # type: ignore[union-attr]
    if "broken" in user_text:
        return "the judge is having a bad day"
    scores = []
    for tid, messages in trajectories:
        answer = _final_answer(messages)
        if "flat" in user_text:
            score = 0.5
        elif "zero" in user_text:
            score = 0.0
        elif "silent" in user_text:
            score = 0.9 if answer == "" else 0.1
        else:
            score = 0.9 if answer == str(a + b) else 0.1
        scores.append({"trajectory_id": tid, "explanation": f"answered {answer!r}", "score": score})
    if "short" in user_text:
        scores = scores[:1]
    return json.dumps({"scores": scores})


class _JudgeHandler(BaseHTTPRequestHandler):
    timeout = 10

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length))
        self.server.seen.append(  # type: ignore[attr-defined]
            {"path": self.path, "auth": self.headers.get("authorization"), "body": body}
        )
        content = _judge(body["messages"][-1]["content"])
        reply = {
            "id": "chatcmpl-judge",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JudgeHandler)
    server.seen = []  # type: ignore[attr-defined]
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _options(server: ThreadingHTTPServer, **extra: Any) -> dict[str, Any]:
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return {"group_size": 2, "judge_model": "judge-1", "judge_base_url": base, **extra}


def _opening(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]


def test_each_prompt_takes_the_answer_the_judge_ranked_best(judge: Any) -> None:
    policy = ScriptedPolicy(["5", "2"])  # rollout 0 says 5, rollout 1 says 2, per question
    rows = ruler.launch(
        prompts=["What is 2 + 3?", "What is 1 + 1?"],
        rollout_func=ROLLOUT,
        model=policy,
        tokenizer=None,
        reward_fn=None,
        max_steps=8,
        options=_options(judge),
    )
    assert list(rows) == [
        {"prompt": _opening("What is 2 + 3?"), "answer": "5"},
        {"prompt": _opening("What is 1 + 1?"), "answer": "2"},
    ]
    assert rows.drops == ()
    # What went over the wire: the chat completions route, the bare model name,
    # the placeholder key, and RULER's JSON-schema response format.
    assert len(judge.seen) == 2
    request = judge.seen[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer EMPTY"
    assert request["body"]["model"] == "judge-1"
    assert request["body"]["response_format"]["type"] == "json_schema"


def test_identical_rollouts_are_scored_once_and_keep_their_answer(judge: Any) -> None:
    result = launch_rollout(
        "ruler",
        prompts=["What is 20 + 22?"],
        rollout_func=ROLLOUT,
        options=_options(judge, group_size=3),
    )
    assert result.rows == ({"prompt": _opening("What is 20 + 22?"), "answer": "42"},)
    sent = judge.seen[0]["body"]["messages"][-1]["content"]
    assert len(TRAJECTORY_RE.findall(sent)) == 1  # RULER's all-identical path


def test_prompts_without_a_usable_winner_are_dropped_and_counted(
    judge: Any, caplog: pytest.LogCaptureFixture
) -> None:
    prompts = [
        "What is 2 + 3?",
        "broken: what is 1 + 1?",
        "short: what is 2 + 2?",
        "flat: what is 3 + 3?",
        "zero: what is 4 + 4?",
        "silent: what is 5 + 5?",
    ]
    caplog.set_level(logging.WARNING, logger="agent_rollout.backends.ruler")
    rows = ruler.launch(
        prompts=prompts,
        rollout_func=ROLLOUT,
        model=ScriptedPolicy(["5", ""]),
        tokenizer=None,
        reward_fn=None,
        max_steps=8,
        options=_options(judge),
    )
    assert list(rows) == [{"prompt": _opening("What is 2 + 3?"), "answer": "5"}]
    assert len(rows.drops) == 5
    assert [(d.prompt_index, d.reason) for d in rows.drops] == [
        (1, "judge_failed"),
        (2, "judge_failed"),
        (3, "tie"),
        (4, "no_signal"),
        (5, "no_answer"),
    ]
    assert "Expected 2 scores, but got 1" in rows.drops[1].detail
    assert rows.drop_counts() == {"judge_failed": 2, "tie": 1, "no_signal": 1, "no_answer": 1}
    assert "dropped 5 of 6 prompts" in caplog.text
    assert "judge_failed: 2" in caplog.text


def test_every_prompt_dropped_is_an_error_but_run_still_reports(judge: Any) -> None:
    kwargs: dict[str, Any] = {
        "prompts": ["zero: what is 1 + 1?"],
        "rollout_func": ROLLOUT,
        "options": _options(judge),
    }
    with pytest.raises(ValueError, match=r"every prompt was dropped \(1 of 1; no_signal: 1\)"):
        launch_rollout("ruler", **kwargs)
    result = ruler.run(**kwargs)
    assert list(result) == [] and len(result.drops) == 1


def test_judge_params() -> None:
    assert ruler.judge_params("openai/o3", None) == ("openai/o3", {})
    model, extra = ruler.judge_params("Qwen/Qwen3-8B", "http://127.0.0.1:8000/v1/")
    assert model == "openai/Qwen/Qwen3-8B"
    assert extra["api_base"] == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "requires training.rollout_judge_model"),
        ({"judge_model": "  "}, "requires training.rollout_judge_model"),
        ({"judge_model": "j", "judge_base_url": "127.0.0.1:8000"}, "must be an http"),
    ],
)
def test_bad_judge_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ruler.run(prompts=["What is 1 + 1?"], rollout_func=ROLLOUT, options=options)
