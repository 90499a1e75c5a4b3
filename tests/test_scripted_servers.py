"""The scripted policy and judge: a good policy and judge, and a 400 for any malformed body.

The servers are the bundled examples' stand-ins for models
(``agent_rollout.examples.scripted_servers``). Requests go over real HTTP on
127.0.0.1 with ``http.client``, so what is checked is what a client sees: the
status, a JSON body, a connection that is answered, not dropped; and nothing
printed by the server.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_rollout._limits import (
    MAX_SCRIPTED_BODY_BYTES,
    SCRIPTED_QUESTIONS_KEPT,
    SCRIPTED_REQUESTS_KEPT,
)
from agent_rollout.examples import scripted_servers
from agent_rollout.examples.scripted_servers import (
    BUNDLED_PORTS,
    check_request,
    parse_context,
    parse_trajectories,
    policy_reply,
    serve,
)
from support import BUNDLED_ANSWERS, bundled_seeds

TOOLS = [
    {"type": "function", "function": {"name": "calculate", "parameters": {}}},
    {"type": "function", "function": {"name": "count_words", "parameters": {}}},
]


def _post(url: str, body: bytes, path: str = "/v1/chat/completions", **headers: str) -> Any:
    """``(status, parsed JSON reply)`` of one POST of raw ``body`` bytes."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.putrequest("POST", path)
        sent = {"content-type": "application/json", "content-length": str(len(body))} | headers
        for name, value in sent.items():
            if value:
                connection.putheader(name, value)
        connection.endheaders(body)
        reply = connection.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        connection.close()


def _ask(url: str, body: Any) -> Any:
    status, reply = _post(url, json.dumps(body).encode())
    assert status == 200, reply
    return reply["choices"][0]["message"]


@pytest.fixture(params=["policy", "judge"])
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    with serve(request.param) as (url, _):
        yield url


GOOD = {"model": "m", "messages": [{"role": "user", "content": "What is 2 + 3?"}]}

HOSTILE: list[tuple[str, bytes, str]] = [
    ("messages is a number", b'{"messages": 5}', "'messages' must be a non-empty array"),
    ("an array of junk", b"[null, 5]", "the body must be a JSON object, got an array"),
    ("a bare number", b"5", "the body must be a JSON object, got a number"),
    ("5,000 digits", b'{"messages": [], "n": ' + b"9" * 5000 + b"}", "not valid JSON"),
    ("5,000 digits alone", b"9" * 5000, "not valid JSON"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("deep nesting in messages", b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", ""),
    ("not JSON", b"hello", "not valid JSON"),
    ("not UTF-8", b'{"messages": "\xff\xfe"}', "not valid JSON"),
    ("no messages", b'{"model": "m"}', "'messages' must be a non-empty array, got null"),
    ("empty messages", b'{"messages": []}', "'messages' must be a non-empty array"),
    ("a message is a string", b'{"messages": ["hi"]}', "messages[0] must be an object"),
    ("role is a number", b'{"messages": [{"role": 5}]}', "messages[0].role must be"),
    ("no role", b'{"messages": [{"content": "x"}]}', "messages[0].role must be"),
    (
        "content is a number",
        b'{"messages": [{"role": "user", "content": 5}]}',
        "messages[0].content must be a string, an array of parts or null",
    ),
    (
        "a part is a number",
        b'{"messages": [{"role": "user", "content": [5]}]}',
        "messages[0].content[0] must be an object",
    ),
    (
        "a part's text is a number",
        b'{"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}',
        "messages[0].content[0].text must be a string",
    ),
    (
        "tool_calls is an object",
        b'{"messages": [{"role": "assistant", "tool_calls": {}}]}',
        "messages[0].tool_calls must be an array",
    ),
    (
        "a tool call without function",
        b'{"messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]}',
        "messages[0].tool_calls[0] must be an object with a 'function' object",
    ),
    (
        "arguments are an object",
        b'{"messages": [{"role": "assistant", "tool_calls": [{"function": '
        b'{"name": "calculate", "arguments": {}}}]}]}',
        "messages[0].tool_calls[0].function.arguments must be a string",
    ),
    (
        "tool_call_id is a number",
        b'{"messages": [{"role": "tool", "content": "1", "tool_call_id": 5}]}',
        "messages[0].tool_call_id must be a string",
    ),
    (
        "model is a list",
        b'{"model": [], "messages": [{"role": "user", "content": "x"}]}',
        "'model' must be a string, got an array",
    ),
    (
        "tools is a number",
        b'{"tools": 5, "messages": [{"role": "user", "content": "x"}]}',
        "'tools' must be an array of objects",
    ),
    ("an empty body", b"", "a body of 0 bytes"),
]


@pytest.mark.parametrize(("body", "message"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_malformed_body_is_answered_400_in_json(
    server: str, body: bytes, message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    status, reply = _post(server, body)
    assert status == 400
    assert reply["error"]["message"].startswith("bad request: ")
    assert message in reply["error"]["message"]
    assert _post(server, json.dumps(GOOD).encode())[0] == 200  # still serving
    assert capfd.readouterr() == ("", "")  # no traceback, no log line


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"content-length": ""}, "a JSON body with a Content-Length is required, got None"),
        ({"content-length": "lots"}, "a JSON body with a Content-Length is required, got 'lots'"),
        ({"content-length": "-1"}, "a body of -1 bytes"),
    ],
)
def test_a_bad_content_length_is_answered_400(
    server: str, headers: dict[str, str], message: str
) -> None:
    status, reply = _post(server, b"", **headers)
    assert status == 400
    assert message in reply["error"]["message"]


@pytest.mark.parametrize("length", [MAX_SCRIPTED_BODY_BYTES + 1, 1 << 40])
def test_a_body_over_the_limit_is_answered_413_unread(server: str, length: int) -> None:
    # Only the headers are sent: a server that waited for the body would never answer.
    status, reply = _post(server, b"", **{"content-length": str(length)})
    assert status == 413
    message = reply["error"]["message"]
    assert f"a body of {length} bytes" in message
    assert f"({MAX_SCRIPTED_BODY_BYTES} bytes)" in message
    assert _post(server, json.dumps(GOOD).encode())[0] == 200  # still serving


def test_a_body_at_the_limit_is_read(server: str) -> None:
    body = json.dumps(GOOD).encode()
    body += b" " * (MAX_SCRIPTED_BODY_BYTES - len(body))
    assert _post(server, body)[0] == 200


def test_other_routes_and_methods_are_answered_in_json(server: str) -> None:
    assert _post(server, b"{}", path="/v1/embeddings")[0] == 404
    parts = urlsplit(server)
    for method, path in (("GET", "/v1/chat"), ("PUT", "/v1/models")):
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        try:
            connection.request(method, path)
            reply = connection.getresponse()
            assert reply.status == (404 if method == "GET" else 501)
            assert "message" in json.loads(reply.read())["error"]
        finally:
            connection.close()


def test_the_model_list_is_what_an_openai_client_reads(server: str) -> None:
    """GET /v1/models: what `run`'s probe of a bundled address, and the openai client's
    ``models.list()``, read."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server, api_key="unused", max_retries=0, timeout=10)
    assert [model.id for model in client.models.list()] == ["scripted"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
messages_like = st.fixed_dictionaries(
    {},
    optional={
        "messages": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "role": st.sampled_from(["user", "assistant", "tool", "system"]) | json_values,
                    "content": json_values,
                    "tool_calls": json_values,
                    "tool_call_id": json_values,
                },
            )
            | json_values,
            max_size=4,
        )
        | json_values,
        "model": json_values,
        "tools": json_values,
    },
)


# Bodies the servers must answer with 200 (json_values and messages_like are almost never
# well formed: 3 in 1,000), and the same bodies with one part broken.
good_messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"]) | st.text(min_size=1)},
    optional={
        "content": st.none()
        | st.text(max_size=8)
        | st.lists(
            st.fixed_dictionaries({}, optional={"type": st.text(max_size=5), "text": st.text()}),
            max_size=2,
        ),
        "tool_calls": st.none()
        | st.lists(
            st.fixed_dictionaries(
                {"function": st.fixed_dictionaries({"name": st.text(), "arguments": st.text()})}
            ),
            max_size=2,
        ),
        "tool_call_id": st.text(max_size=8),
    },
)
good_bodies = st.fixed_dictionaries(
    {"messages": st.lists(good_messages, min_size=1, max_size=3)},
    optional={
        "model": st.text(max_size=8),
        "tools": st.lists(st.dictionaries(st.text(max_size=5), json_values, max_size=2)),
    },
)


@st.composite
def broken_bodies(draw: st.DrawFn) -> Any:
    # A good body with one value put in the wrong place: a message, a role, a content, a
    # tool call, the model or the tools.
    body: dict[str, Any] = draw(good_bodies)
    messages: list[Any] = body["messages"]
    index = draw(st.integers(min_value=0, max_value=len(messages) - 1))
    message = messages[index]
    where = draw(st.sampled_from(["message", "role", "content", "tool_calls", "model", "tools"]))
    wrong = draw(st.sampled_from([5, 1.5, True, {"x": 1}, [1]]))
    if where == "message":
        messages[index] = wrong
    elif where in ("model", "tools"):
        body[where] = wrong
    else:
        message[where] = wrong
    return body


@pytest.fixture(scope="module")
def both_servers() -> Iterator[dict[str, str]]:
    # One of each for every example: a server that answered a bad body keeps serving (a
    # server started and shut down per example spent 50 ms waiting for its poll loop).
    with serve("policy") as (policy, _), serve("judge") as (judge, _):
        yield {"policy": policy, "judge": judge}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=json_values | messages_like | good_bodies | broken_bodies())
def test_any_json_body_gets_200_or_400_never_a_dropped_connection(
    both_servers: dict[str, str], body: Any
) -> None:
    for url in both_servers.values():
        status, reply = _post(url, json.dumps(body).encode())
        try:
            check_request(body)
        except ValueError:
            assert status == 400, reply
            assert reply["error"]["message"].startswith("bad request: ")
        else:
            assert status == 200, reply
            assert reply["choices"][0]["message"]["role"] == "assistant"


# ---- a good policy and a good judge -------------------------------------------------------


def _play(url: str, seed: Any) -> tuple[list[dict[str, Any]], str]:
    """One episode against the policy, the tools run here; (messages, final answer)."""
    messages = (
        [{"role": "user", "content": seed}] if isinstance(seed, str) else [dict(m) for m in seed]
    )
    from agent_rollout.examples.art_rollout import run_tool

    for _ in range(3):
        message = _ask(url, {"model": "m", "messages": messages, "tools": TOOLS})
        messages.append(message)
        if not message.get("tool_calls"):
            return messages, message["content"]
        for call in message["tool_calls"]:
            result = run_tool(call["function"]["name"], call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("the policy never answered")


def test_the_policy_solves_each_bundled_prompt_with_its_tool_then_errs_on_purpose() -> None:
    pytest.importorskip("art")
    seeds = [seed["prompt"] for seed in bundled_seeds()]
    with serve("policy") as (url, _):
        first = [_play(url, seed) for seed in seeds]
        second = [_play(url, seed)[1] for seed in seeds]
    assert tuple(answer for _, answer in first) == BUNDLED_ANSWERS
    assert second == [str(int(answer) + 1) for answer in BUNDLED_ANSWERS]  # every second reply
    tools = [messages[-3]["tool_calls"][0]["function"] for messages, _ in first]
    assert [tool["name"] for tool in tools] == [
        "calculate",
        "calculate",
        "calculate",
        "count_words",
        "calculate",
        "count_words",
    ]
    assert json.loads(tools[1]["arguments"]) == {"expression": "12 * 9"}


def test_the_policy_answers_directly_when_offered_no_tool_it_knows() -> None:
    """As under NeMo Gym's equivalence_rule environment (no tools) or a weather tool."""
    with serve("policy") as (url, _):
        plain = _ask(url, {"messages": [{"role": "user", "content": "What is 4 - 11?"}]})
        weather = _ask(
            url,
            {
                "messages": [{"role": "user", "content": "What is 12 * 9?"}],
                "tools": [{"type": "function", "function": {"name": "get_weather"}}],
            },
        )
    assert plain == {"role": "assistant", "content": "-7"}
    assert weather == {"role": "assistant", "content": "108"}


def _question(n: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"What is {n} + 1?"}]}


def test_the_policy_counts_replies_for_a_bounded_number_of_questions() -> None:
    # Called as the server calls it, without HTTP: the bound is the real one. Question n's
    # right answer is n + 1; a reply after an odd number of replies to it is n + 2.
    policy = policy_reply()

    def ask(n: int) -> int:
        return int(policy(_question(n))["content"]) - n - 1  # 0: right, 1: wrong

    kept = SCRIPTED_QUESTIONS_KEPT
    assert [ask(0), ask(1)] == [0, 0]
    assert {ask(n) for n in range(2, kept + 1)} == {0}  # question 0 is forgotten
    assert [ask(1), ask(1)] == [1, 0]  # question 1 is still counted
    assert {ask(n) for n in range(kept + 1, 2 * kept)} == {0}
    assert ask(1) == 1  # asked since: kept while kept - 1 newer questions came
    assert [ask(0), ask(0)] == [0, 1]  # forgotten: its alternation starts over


def test_the_server_keeps_the_last_requests_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scripted_servers, "SCRIPTED_REQUESTS_KEPT", 5)
    with serve("policy") as (url, seen):
        replies = [_post(url, json.dumps(_question(n)).encode()) for n in range(12)]
        assert [body for _, body in replies][-1]["id"] == "chatcmpl-scripted-12"
        assert len({body["id"] for _, body in replies}) == 12
        assert [status for status, _ in replies] == [200] * 12
        assert [request["body"] for request in seen] == [_question(n) for n in range(7, 12)]
    assert SCRIPTED_REQUESTS_KEPT >= 100  # what the tests that read ``seen`` rely on


def test_the_judge_scores_the_right_answer_high() -> None:
    def trajectory(answer: str) -> str:
        return json.dumps([{"role": "assistant", "content": answer}])

    context = json.dumps([{"role": "user", "content": "What is 12 * 9?"}])
    text = (
        f"<context>\n{context}\n</context>\n"
        f'<trajectory id="1">\n{trajectory("42")}\n</trajectory>\n'
        f'<trajectory id="2">\n{trajectory("108")}\n</trajectory>'
    )
    with serve("judge") as (url, _):
        reply = _ask(url, {"messages": [{"role": "user", "content": text}]})
    scores = json.loads(reply["content"])["scores"]
    assert [(s["trajectory_id"], s["score"]) for s in scores] == [("1", 0.1), ("2", 0.9)]


# ---- the judge reads RULER's blocks in linear time ------------------------------------------

TRAJECTORY = re.compile(r'<trajectory id="([^"]+)">\n(.*?)\n</trajectory>', re.DOTALL)
CONTEXT = re.compile(r"<context>\n(.*?)\n</context>", re.DOTALL)
"""The regexes the judge's parsers stand for (they backtrack: quadratic on hostile text)."""

# Texts of the pieces the blocks are made of, so that near misses are common.
block_texts = st.lists(
    st.sampled_from(
        ['<trajectory id="', "<context>", "\n</trajectory>", "\n</context>", '">', '"', "\n"]
    )
    | st.text(alphabet='1x">\n<', max_size=3),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=block_texts)
def test_the_judge_parses_what_the_regexes_match(text: str) -> None:
    assert parse_trajectories(text) == TRAJECTORY.findall(text)
    context = CONTEXT.search(text)
    assert parse_context(text) == (context[1] if context else None)


class Scanned(str):
    """A text that counts the characters its ``find`` calls look at."""

    looked_at = 0

    def find(self, sub: str, start: Any = 0, end: Any = None) -> int:  # type: ignore[override]
        at = super().find(sub, start)
        Scanned.looked_at += (len(self) if at < 0 else at + len(sub)) - start
        return at


HOSTILE_JUDGE_TEXTS = {
    "opening tags, never closed": '<trajectory id="1">\n' * 20_000,
    "opening tags without the newline": '<trajectory id="1">' * 20_000,
    "empty ids": '<trajectory id="">\n' * 20_000,
    "context tags, never closed": "<context>\n" * 40_000,
    "blocks": '<trajectory id="1">\n[]\n</trajectory>\n' * 10_000,
    "blocks around a long id": '<trajectory id="' + "1" * 200_000 + '">\n[]\n</trajectory>',
}


@pytest.mark.parametrize("text", HOSTILE_JUDGE_TEXTS.values(), ids=HOSTILE_JUDGE_TEXTS)
def test_the_judge_parsers_look_at_each_character_a_bounded_number_of_times(text: str) -> None:
    Scanned.looked_at = 0
    parse_trajectories(Scanned(text))
    assert Scanned.looked_at <= 2 * len(text)
    Scanned.looked_at = 0
    parse_context(Scanned(text))
    assert Scanned.looked_at <= len(text)


def test_hostile_judge_bodies_are_answered_at_once() -> None:
    """400 KB of RULER blocks that are never closed, and a long context shared by
    thousands of trajectories: each answered in well under the client's 10 s (the
    judge's time is linear in the body)."""
    context = [*[{"role": "user"}] * 10_000, {"role": "user", "content": "What is 2 + 3?"}]
    context.append({"role": "assistant", "content": "5" + " " * 100_000})
    shared = f"<context>\n{json.dumps(context)}\n</context>\n"
    texts = [
        HOSTILE_JUDGE_TEXTS["opening tags, never closed"],
        HOSTILE_JUDGE_TEXTS["context tags, never closed"],
        shared + '<trajectory id="1">\n[]\n</trajectory>\n' * 8_000,
    ]
    with serve("judge") as (url, _):
        replies = [_ask(url, {"messages": [{"role": "user", "content": t}]}) for t in texts]
    assert [json.loads(reply["content"])["scores"] for reply in replies[:2]] == [[], []]
    scores = json.loads(replies[2]["content"])["scores"]
    assert len(scores) == 8_000
    assert {score["score"] for score in scores} == {0.9}
    assert scores[0]["explanation"] == (
        f"answered {('5' + ' ' * 79)!r}... (100001 characters), the right answer is 5"
    )


def test_bundled_ports() -> None:
    assert dict(BUNDLED_PORTS) == {"policy": 8791, "judge": 8792}
