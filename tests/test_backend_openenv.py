"""The ``openenv`` backend against the real ``openenv-core`` package.

The server tests start the drill environment (OpenEnv's ``create_app``) on a
free 127.0.0.1 port and drive it through OpenEnv's own ``EnvClient``. They
skip only when ``openenv-core`` is not installed; the offline tests always run.
"""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_rollout
from agent_rollout.examples import openenv_rollout
from agent_rollout.examples.openenv_drill import (
    DRILL_INSTRUCTIONS,
    MAX_SEED_CHARS,
    build_task,
    grade_reply,
)
from agent_rollout.examples.openenv_rollout import (
    URL_ENV_VAR,
    offline_rollout,
    rollout,
    serve_drill_env,
)

HAVE_OPENENV = importlib.util.find_spec("openenv") is not None
needs_openenv = pytest.mark.skipif(not HAVE_OPENENV, reason="openenv-core is not installed")

SEEDS: list[Any] = [
    "What is 17 + 25?",
    {"prompt": "the quick brown fox jumps"},
    [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Compute 6 * -7 for me"},
    ],
    {"question": "How much is 100 - 58?"},
]
EXPECTED_ANSWERS = ["42", "5", "-42", "42"]
EXAMPLES = Path(__file__).resolve().parent.parent / "python" / "agent_rollout" / "examples"


def _bundled_prompts() -> list[Any]:
    lines = (EXAMPLES / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["prompt"] for line in lines if line.strip()]


def _bundled_launch_kwargs() -> dict[str, Any]:
    import yaml

    config = yaml.safe_load((EXAMPLES / "grpo.yaml").read_text(encoding="utf-8"))
    settings = agent_rollout.RolloutSettings.model_validate(config["training"])
    return settings.to_launch_kwargs()


def _user_text(row: dict[str, Any]) -> str:
    return str(row["prompt"][1]["content"])


# --- the drill rules and the offline rollout (no server, no openenv) ---------


@pytest.mark.parametrize(
    ("text", "kind", "reference"),
    [
        ("What is 17 + 25?", "arithmetic", "42"),
        ("12-30", "arithmetic", "-18"),
        ("3 \u00d7 4 apples", "arithmetic", "12"),
        ("no numbers here at all", "word_count", "5"),
        ("one", "word_count", "1"),
    ],
)
def test_build_task(text: str, kind: str, reference: str) -> None:
    task = build_task(text)
    assert (task.kind, task.reference) == (kind, reference)
    assert text in task.question


def test_grade_reply() -> None:
    task = build_task("What is 2 + 2?")
    assert grade_reply(task, " 4\n") == 1.0
    assert grade_reply(task, "+4") == 1.0
    assert grade_reply(task, "5") == 0.0
    assert grade_reply(task, "four") == 0.0
    assert grade_reply(task, "9" * 5000) == 0.0


def test_offline_rows() -> None:
    rows = offline_rollout(SEEDS)
    assert [row["answer"] for row in rows] == EXPECTED_ANSWERS
    for row in rows:
        assert set(row) == {"prompt", "answer"}
        assert row["prompt"][0] == {"role": "system", "content": DRILL_INSTRUCTIONS}
        assert row["prompt"][1]["role"] == "user"
    assert "the quick brown fox jumps" in _user_text(rows[1])
    assert offline_rollout(SEEDS) == rows


def test_offline_rows_are_independent_objects() -> None:
    rows = offline_rollout(["1 + 1"], rows=3)
    rows[0]["prompt"][1]["content"] = "changed"
    assert _user_text(rows[1]) != "changed"


def test_offline_cycles_to_100k_rows() -> None:
    # What it costs is the demo's to show (agent-rollout demo times it), not a test's.
    rows = offline_rollout(SEEDS, rows=100_000)
    assert len(rows) == 100_000
    assert [row["answer"] for row in rows[:8]] == EXPECTED_ANSWERS * 2
    assert rows[-1]["answer"] == EXPECTED_ANSWERS[(100_000 - 1) % len(SEEDS)]


def test_offline_rows_pass_the_normaliser() -> None:
    rows = offline_rollout(SEEDS)
    assert list(agent_rollout.normalise_rollout_rows(rows, "openenv")) == rows


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        (["ok", 7], "seed prompt 1: expected a string"),
        (["ok", "   "], "seed prompt 1: text is empty"),
        ([{"text": "x"}], "seed prompt 0: mapping has neither a 'prompt' nor a 'question' key"),
        ([{"prompt": None}], "seed prompt 0: prompt: expected a string"),
        ([[{"role": "assistant", "content": "hi"}]], "seed prompt 0: message list has no 'user'"),
        ([["not a message"]], "seed prompt 0[0]: message must be a mapping, got str"),
        (["x" * (MAX_SEED_CHARS + 1)], f"the limit is {MAX_SEED_CHARS}"),
        ([], "no seed prompts were given"),
    ],
)
def test_bad_seeds_are_named(seeds: list[Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        offline_rollout(seeds)


def test_prompts_must_be_a_list() -> None:
    with pytest.raises(TypeError, match="prompts must be a list of seed prompts, got str"):
        offline_rollout("What is 1 + 1?")  # type: ignore[arg-type]


@pytest.mark.parametrize("rows", [0, -1, True, 2.5])
def test_offline_row_count_is_checked(rows: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="offline_rollout: rows must be"):
        offline_rollout(["a"], rows=rows)


def test_bad_server_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV_VAR, "ftp://127.0.0.1:1")
    with pytest.raises(
        ValueError, match=re.escape(f"{URL_ENV_VAR}='ftp://127.0.0.1:1' is not a server URL")
    ):
        rollout(["1 + 1"])


def test_missing_openenv_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes the import fail as if nothing were installed.
    for name in ("openenv", "agent_rollout.examples.openenv_drill.client"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "agent_rollout.examples.openenv_drill.server", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'openenv-core>=0.3.0,<0.4'")):
        rollout(["1 + 1"])
    with (
        pytest.raises(ImportError, match="the drill server needs the openenv-core package"),
        serve_drill_env(),
    ):
        pass


# --- the real OpenEnv server and client --------------------------------------


@pytest.fixture(scope="module")
def drill_url() -> Iterator[str]:
    if not HAVE_OPENENV:
        pytest.skip("openenv-core is not installed")
    with serve_drill_env() as url:
        yield url


@needs_openenv
def test_rollout_through_the_real_client(drill_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV_VAR, drill_url)
    rows = rollout(SEEDS)
    assert [row["answer"] for row in rows] == EXPECTED_ANSWERS
    assert "Compute 6 * -7 for me" in _user_text(rows[2])
    # The server and the offline path build the very same rows.
    assert rows == offline_rollout(SEEDS)


@needs_openenv
def test_client_reset_step_and_state(drill_url: str) -> None:
    from agent_rollout.examples.openenv_drill.client import DrillEnv
    from agent_rollout.examples.openenv_drill.models import DrillAction

    with DrillEnv(base_url=drill_url, message_timeout_s=10.0).sync() as env:
        first = env.reset(prompt="What is 6 * 7?")
        assert first.done is False
        assert first.observation.kind == "arithmetic"
        assert first.observation.reference is None
        assert "6 * 7" in first.observation.question
        state = env.state()
        assert (state.reference, state.step_count, state.done) == ("42", 0, False)

        graded = env.step(DrillAction(answer=" 42 "))
        assert (graded.done, graded.reward) == (True, 1.0)
        assert graded.observation.reference == "42"
        assert env.state().step_count == 1
        with pytest.raises(RuntimeError, match="already graded"):
            env.step(DrillAction(answer="42"))

        env.reset(prompt="one two three")
        wrong = env.step(DrillAction(answer="4"))
        assert (wrong.reward, wrong.observation.reference) == (0.0, "3")


@needs_openenv
def test_server_refuses_bad_resets(drill_url: str) -> None:
    from agent_rollout.examples.openenv_drill.client import DrillEnv
    from agent_rollout.examples.openenv_drill.models import DrillAction

    with DrillEnv(base_url=drill_url, message_timeout_s=10.0).sync() as env:
        with pytest.raises(RuntimeError, match="no episode is running"):
            env.step(DrillAction(answer="1"))
        with pytest.raises(RuntimeError, match=r"a 'prompt' .* is required"):
            env.reset()
        with pytest.raises(RuntimeError, match=r"unexpected argument.*colour"):
            env.reset(prompt="1 + 1", colour="red")
        with pytest.raises(RuntimeError, match="reset: prompt: text is empty"):
            env.reset(prompt="  ")


@needs_openenv
def test_server_publishes_the_drill_schema(drill_url: str) -> None:
    import json
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{drill_url}/schema", timeout=5) as response:
        schema = json.loads(response.read())
    assert "answer" in schema["action"]["properties"]
    assert "question" in schema["observation"]["properties"]
    # openenv-core publishes its base State schema, not the environment's subclass.
    assert "step_count" in schema["state"]["properties"]


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@needs_openenv
def test_unreachable_server_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv(URL_ENV_VAR, url)
    expected = re.escape(f"no OpenEnv drill server answered at {url}") + f".*{URL_ENV_VAR}"
    with pytest.raises(ConnectionError, match=expected):
        rollout(["1 + 1"])


@needs_openenv
def test_server_stops_when_the_block_ends(drill_url: str) -> None:
    with serve_drill_env() as url:
        assert url != drill_url
        assert openenv_rollout.health(url, timeout_s=2.0)
    assert not openenv_rollout.health(url, timeout_s=2.0)


@needs_openenv
def test_server_stops_when_the_block_raises() -> None:
    with pytest.raises(KeyError), serve_drill_env() as url:
        raise KeyError("boom")
    assert not openenv_rollout.health(url, timeout_s=2.0)


@needs_openenv
def test_launch_rollout_end_to_end(drill_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV_VAR, drill_url)
    result = agent_rollout.launch_rollout(
        "openenv",
        prompts=SEEDS,
        rollout_func="agent_rollout.examples.openenv_rollout:rollout",
    )
    assert result.backend == "openenv"
    assert [row["answer"] for row in result.rows] == EXPECTED_ANSWERS
    assert list(result.rows) == offline_rollout(SEEDS)


def test_bundled_config_names_the_openenv_rollout() -> None:
    kwargs = _bundled_launch_kwargs()
    assert kwargs["name"] == "openenv"
    assert kwargs["rollout_func"] == "agent_rollout.examples.openenv_rollout:rollout"
    assert kwargs["max_steps"] == 64
    rows = offline_rollout(_bundled_prompts())
    assert [row["answer"] for row in rows[:3]] == ["42", "108", "-7"]
    assert rows[4]["answer"] == "1000"


@needs_openenv
def test_bundled_config_end_to_end(drill_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV_VAR, drill_url)
    prompts = _bundled_prompts()
    result = agent_rollout.launch_rollout(prompts=prompts, **_bundled_launch_kwargs())
    assert list(result.rows) == offline_rollout(prompts)
    assert len(result.rows) == len(prompts)
