"""The ``art`` backend over the real openpipe-art package (no model is called)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

# LiteLLM (imported by ART) otherwise fetches its price list from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
art = pytest.importorskip("art")

from openai.types.chat import ChatCompletionMessage  # noqa: E402
from openai.types.chat.chat_completion import Choice  # noqa: E402

from agent_rollout import RolloutDrop, launch_rollout  # noqa: E402
from agent_rollout.backends import art as art_backend  # noqa: E402
from agent_rollout.examples.art_rollout import (  # noqa: E402
    SYSTEM_PROMPT,
    TOOLS,
    ScriptedPolicy,
    rollout,
)

QUESTION = "What is 2 + 3?"
OPENING = [
    {"role": "system", "content": SYSTEM_PROMPT},
    {"role": "user", "content": QUESTION},
]
TOOL_CALL = {
    "id": "call_add",
    "type": "function",
    "function": {"name": "add", "arguments": json.dumps({"numbers": [2, 3]})},
}


def _choice(content: Any, tool_calls: Any = None) -> Choice:
    return Choice(
        index=0,
        finish_reason="stop",
        message=ChatCompletionMessage(role="assistant", content=content, tool_calls=tool_calls),
    )


def _launch(**overrides: Any) -> list[dict[str, Any]]:
    kwargs: dict[str, Any] = {
        "prompts": [QUESTION],
        "rollout_func": "agent_rollout.examples.art_rollout:rollout",
        "model": None,
        "tokenizer": None,
        "reward_fn": None,
        "max_steps": 64,
        "options": {"group_size": 2},
    }
    kwargs.update(overrides)
    return art_backend.launch(**kwargs)


# ------------------------------------------------------------------ trajectory_to_row


def test_example_trajectory_becomes_prompt_and_final_answer() -> None:
    row = art_backend.trajectory_to_row(rollout(None, QUESTION))
    assert row == {"prompt": OPENING, "answer": "5"}


def test_choices_and_tool_calls_become_plain_dicts() -> None:
    trajectory = art.Trajectory(
        messages_and_choices=[
            *OPENING,
            _choice(None, tool_calls=[TOOL_CALL]),
            {"role": "tool", "tool_call_id": "call_add", "content": "5"},
            _choice("It is 5."),
            {"role": "user", "content": "Thanks"},
            _choice("You are welcome."),
        ]
    )
    row = art_backend.trajectory_to_row(trajectory)
    assert row == {"prompt": OPENING, "answer": "You are welcome."}
    assert all(type(m) is dict for m in row["prompt"])
    # The converted assistant turn (used by the ruler backend and error paths) is JSON-like.
    message = art_backend.to_message(trajectory.messages_and_choices[2], "m")
    assert message == {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
    json.dumps(message)


def test_answer_joins_text_parts_of_an_assistant_dict() -> None:
    trajectory = art.Trajectory(
        messages_and_choices=[
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}],
            },
        ]
    )
    assert art_backend.trajectory_to_row(trajectory)["answer"] == "Hello"


def test_no_answer_when_the_last_assistant_turn_is_a_bare_tool_call() -> None:
    trajectory = art.Trajectory(
        messages_and_choices=[*OPENING, _choice(None, tool_calls=[TOOL_CALL])]
    )
    assert art_backend.trajectory_to_row(trajectory) == {"prompt": OPENING}


@pytest.mark.parametrize(
    ("items", "what"),
    [
        ([], "has no messages"),
        ([_choice("5"), {"role": "user", "content": "x"}], "opens with an assistant turn"),
        ([{"role": "assistant", "content": "5"}], "opens with an assistant turn"),
    ],
)
def test_a_trajectory_without_prompt_messages_is_refused(items: list[Any], what: str) -> None:
    trajectory = art.Trajectory(messages_and_choices=items)
    with pytest.raises(ValueError, match=f"^group 1 trajectory 0: {what}; a row needs"):
        art_backend.trajectory_to_row(trajectory, where="group 1 trajectory 0")


def test_a_foreign_object_in_messages_is_named_by_index() -> None:
    trajectory = art.Trajectory(messages_and_choices=[{"role": "user", "content": "x"}, 42])
    with pytest.raises(ValueError, match=r"messages_and_choices\[1\]: expected a chat message"):
        art_backend.trajectory_to_row(trajectory)


def test_a_message_without_role_is_refused() -> None:
    trajectory = art.Trajectory(messages_and_choices=[{"content": "no role"}])
    with pytest.raises(ValueError, match=r"messages_and_choices\[0\]: a chat message needs"):
        art_backend.trajectory_to_row(trajectory)


def test_a_non_json_value_is_named_by_path() -> None:
    trajectory = art.Trajectory(
        messages_and_choices=[{"role": "user", "content": [{"type": "x", "blob": object()}]}]
    )
    with pytest.raises(ValueError, match=r"\[0\]\.content\[0\]\.blob: unsupported value"):
        art_backend.trajectory_to_row(trajectory)


# ------------------------------------------------------------ groups and gathering


def _rewarded(prompt: Any, answer: str, reward: float) -> Any:
    """The example trajectory for ``prompt`` with its final answer and reward replaced."""
    trajectory = rollout(ScriptedPolicy([answer]), prompt)
    trajectory.reward = reward
    return trajectory


def test_one_row_per_group_and_bare_trajectories_keep_their_order() -> None:
    first = rollout(None, "What is 1 + 1?")
    wrong = _rewarded("What is 1 + 1?", "3", 0.0)
    second = rollout(None, "What is 2 + 2?")
    rows = art_backend.trajectory_groups_to_rows([art.TrajectoryGroup([wrong, first]), second])
    assert [row["answer"] for row in rows] == ["2", "4"]
    assert rows.drops == ()
    assert art_backend.trajectory_groups_to_rows(second) == [art_backend.trajectory_to_row(second)]


def test_the_issue_case_four_rollouts_two_answers_give_one_reference_row() -> None:
    """4 rollouts of one prompt answering 5, 6, 5, 6 used to give 4 rows; now 1, answer 5."""
    result = launch_rollout(
        "art",
        prompts=[QUESTION],
        rollout_func="agent_rollout.examples.art_rollout:rollout",
        model=ScriptedPolicy(["5", "6"]),
        options={"group_size": 4},
    )
    assert result.rows == ({"prompt": OPENING, "answer": "5"},)
    assert result.drops == ()


def test_best_reward_must_beat_every_different_answer() -> None:
    groups = [
        art.TrajectoryGroup([_rewarded(QUESTION, "5", 0.9), _rewarded(QUESTION, "6", 0.9)]),
        art.TrajectoryGroup([_rewarded(QUESTION, "5", 0.9), _rewarded(QUESTION, "5", 0.9)]),
        art.TrajectoryGroup([_rewarded(QUESTION, "6", -1.0), _rewarded(QUESTION, "5", -0.5)]),
    ]
    rows = art_backend.trajectory_groups_to_rows(groups)
    assert [row["answer"] for row in rows] == ["5", "5"]  # identical answers tie as one winner
    assert rows.drops == (
        RolloutDrop(0, "tie", "rollouts 0, 1 share the best reward 0.9 with different answers"),
    )


def test_a_winner_without_text_drops_the_prompt() -> None:
    silent = art.Trajectory(messages_and_choices=[*OPENING, _choice(None, [TOOL_CALL])], reward=1)
    rows = art_backend.trajectory_groups_to_rows(
        [art.TrajectoryGroup([silent, _rewarded(QUESTION, "5", 0.5)])]
    )
    assert list(rows) == []
    assert [(d.prompt_index, d.reason) for d in rows.drops] == [(0, "no_answer")]


@pytest.mark.parametrize("reward", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_reward_is_an_error_naming_prompt_and_rollout(reward: float) -> None:
    def fn(model: Any, prompt: Any) -> Any:
        trajectory = rollout(model, prompt)
        if "7" in str(prompt):
            trajectory.reward = reward
        return trajectory

    with pytest.raises(
        ValueError, match=rf"^rollout_backend 'art': prompt 1 rollout 0: reward {reward!r} is not"
    ):
        launch_rollout("art", prompts=[QUESTION, "What is 7 + 1?"], rollout_func=fn)


def test_drops_are_counted_on_the_result_and_all_dropped_is_an_error() -> None:
    def tie_on_six(model: Any, prompt: Any) -> Any:
        trajectory = rollout(model, prompt)
        if "6" in str(prompt):
            trajectory.reward = 1.0  # the wrong answers score as well as the right ones
        return trajectory

    policy = ScriptedPolicy(["5", "7"])  # right for 2 + 3, wrong for 6 + 0 every other call
    result = launch_rollout(
        "art",
        prompts=[QUESTION, "What is 6 + 0?"],
        rollout_func=tie_on_six,
        model=policy,
        options={"group_size": 2},
    )
    assert result.rows == ({"prompt": OPENING, "answer": "5"},)
    assert result.drop_counts() == {"tie": 1}
    assert result.drops[0].prompt_index == 1
    with pytest.raises(ValueError, match=r"'art': every prompt was dropped \(1 of 1; tie: 1\)"):
        launch_rollout(
            "art",
            prompts=["What is 6 + 0?"],
            rollout_func=tie_on_six,
            model=ScriptedPolicy(["6", "7"]),
            options={"group_size": 2},
        )


def test_a_group_with_recorded_exceptions_is_refused() -> None:
    group = art.TrajectoryGroup([rollout(None, QUESTION), RuntimeError("judge down")])
    with pytest.raises(ValueError, match=r"group 0: 1 rollout.*RuntimeError.*judge down"):
        art_backend.trajectory_groups_to_rows([group])


def test_something_else_than_trajectories_is_refused() -> None:
    with pytest.raises(ValueError, match=r"item 0: expected an art\.Trajectory"):
        art_backend.trajectory_groups_to_rows([{"prompt": "x"}])


def test_launch_runs_group_size_rollouts_per_prompt() -> None:
    calls: list[Any] = []

    def counted(model: Any, prompt: Any) -> Any:
        calls.append(prompt)
        return rollout(model, prompt)

    rows = _launch(
        prompts=[QUESTION, "What is 10 + 20?"], rollout_func=counted, options={"group_size": 3}
    )
    assert len(calls) == 6
    assert [row["answer"] for row in rows] == ["5", "30"]
    assert rows[1]["prompt"][1] == {"role": "user", "content": "What is 10 + 20?"}


def test_launch_accepts_an_async_rollout_and_message_prompts() -> None:
    prompt = [{"role": "user", "content": "Add 4 + 5"}]
    rows = _launch(prompts=[prompt], rollout_func="agent_rollout.examples.art_rollout:arollout")
    assert rows == [{"prompt": prompt, "answer": "9"}]


def test_launch_works_inside_a_running_event_loop() -> None:
    async def caller() -> list[dict[str, Any]]:
        return _launch()

    rows = asyncio.run(caller())
    assert [row["answer"] for row in rows] == ["5"]


def test_launch_rollout_goes_through_the_adapter() -> None:
    result = launch_rollout(
        "art",
        prompts=[QUESTION],
        rollout_func="agent_rollout.examples.art_rollout:rollout",
        options={"group_size": 1},
    )
    assert result.backend == "art"
    assert result.rows == ({"prompt": OPENING, "answer": "5"},)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"rollout_func": None}, "requires training.rollout_func"),
        ({"prompts": []}, "needs at least one seed prompt"),
        ({"prompts": "What?"}, "needs prompts: a list of seed prompts, got str"),
        ({"options": {"group_size": 0}}, r"rollout_group_size must be in \[1, 1024\], got 0"),
        ({"options": {"group_size": True}}, "rollout_group_size must be an int, got bool"),
        ({"options": {"group_size": 1000}, "prompts": ["a"] * 101}, "exceed 100000 rollouts"),
        ({"rollout_func": "agent_rollout.examples.art_rollout:nope"}, "has no attribute 'nope'"),
    ],
)
def test_launch_refuses_bad_settings(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _launch(**overrides)


def _gather(fn: Any, **kwargs: Any) -> list[Any]:
    return art_backend.run_sync(lambda: art_backend.gather_groups(["What is 1 + 2?"], fn, **kwargs))


def test_a_raising_rollout_names_prompt_and_rollout() -> None:
    def broken(model: Any, prompt: Any) -> Any:
        raise KeyError("tool missing")

    with pytest.raises(RuntimeError, match="prompt 0 rollout 0: rollout_func raised KeyError"):
        _gather(broken, group_size=1)


def test_a_rollout_must_return_a_trajectory() -> None:
    async def wrong(model: Any, prompt: Any) -> Any:
        return {"prompt": prompt}

    with pytest.raises(TypeError, match=r"rollout 0: rollout_func must return an art\.Trajectory"):
        _gather(wrong, group_size=1)


def test_a_rollout_longer_than_max_steps_is_refused() -> None:
    with pytest.raises(ValueError, match="2 assistant turns exceed rollout_max_steps=1"):
        _gather(rollout, group_size=1, max_steps=1)


def test_gathered_groups_carry_prompt_index_and_model() -> None:
    seen: list[Any] = []

    def spy(model: Any, prompt: Any) -> Any:
        seen.append(model)
        prompt.append({"role": "user", "content": "mutated"})  # must not leak to siblings
        return art.Trajectory(messages_and_choices=[*prompt, _choice("ok")])

    sentinel = object()
    groups = art_backend.run_sync(
        lambda: art_backend.gather_groups(
            [[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]],
            spy,
            model=sentinel,
            group_size=2,
        )
    )
    assert [g.metadata[art_backend.PROMPT_INDEX_KEY] for g in groups] == [0, 1]
    assert [len(g.trajectories) for g in groups] == [2, 2]
    assert seen == [sentinel] * 4
    assert all(len(t.messages_and_choices) == 3 for g in groups for t in g.trajectories)


# -------------------------------------------------------------------- ART's files


def _groups() -> list[Any]:
    runner_up = rollout(None, [{"role": "user", "content": "1 and 1"}])
    runner_up.reward = 0.5
    group = art.TrajectoryGroup([rollout(None, QUESTION), runner_up])
    return [group, art.TrajectoryGroup([rollout(None, "What is 7 + 8?")])]


EXPECTED = [
    {"prompt": OPENING, "answer": "5"},
    {
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "What is 7 + 8?"},
        ],
        "answer": "15",
    },
]


def test_reads_the_parquet_model_log_writes(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")  # ART's writer needs it; CI installs it
    from art.utils.trajectory_logging import write_trajectory_groups_parquet

    path = tmp_path / "0001.parquet"
    write_trajectory_groups_parquet(_groups(), path)
    groups = art_backend.read_trajectory_groups(path)
    assert [len(g.trajectories) for g in groups] == [2, 1]
    assert art_backend.trajectory_groups_to_rows(groups) == EXPECTED
    # the tool call survives the round trip as a plain dict
    assert groups[0].trajectories[0].messages_and_choices[2]["tool_calls"][0]["id"] == "call_0"
    assert _launch(rollout_func=None, options={"source": str(path)}) == EXPECTED


def test_reads_arts_legacy_jsonl(tmp_path: Path) -> None:
    from art.utils.trajectory_migration import serialize_trajectory_groups

    path = tmp_path / "0001.jsonl"
    path.write_text(serialize_trajectory_groups(_groups()) + "\n\n", encoding="utf-8")
    groups = art_backend.read_trajectory_groups(path)
    assert art_backend.trajectory_groups_to_rows(groups) == EXPECTED


def test_reads_arts_sft_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "sft.jsonl"
    lines = [{"messages": [*OPENING, {"role": "assistant", "content": "5"}]}]
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    rows = art_backend.trajectory_groups_to_rows(art_backend.read_trajectory_groups(path))
    assert rows == [{"prompt": OPENING, "answer": "5"}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"messages": []}\n{oops\n', r"bad\.jsonl:2:2: invalid JSON: expected a string key"),
        ('{"trajectories": 3}\n', r"bad\.jsonl:1: 'trajectories' must be a list"),
        (
            '{"trajectories": [{"reward": 1}]}\n',
            r":1: trajectories\[0\]: 'messages' must be a list",
        ),
        ('{"messages": [], "reward": "high"}\n', r":1: 'reward' must be a number, got str"),
    ],
)
def test_a_bad_jsonl_line_is_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        art_backend.read_trajectory_groups(path)


def test_unknown_files_and_double_sources_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"x\.csv: unsupported ART trajectory file"):
        art_backend.read_trajectory_groups(tmp_path / "x.csv")
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet")
    with pytest.raises(ValueError, match=r"junk\.parquet: not an ART trajectory Parquet file"):
        art_backend.read_trajectory_groups(junk)
    with pytest.raises(ValueError, match="set rollout_func or rollout_source, not both"):
        _launch(options={"source": str(junk)})


# ------------------------------------------- ART's inference client and the policy keys


def test_art_model_openai_client_talks_to_a_loopback_server() -> None:
    """The [art] extra pins openai<3: with openai 3 this call raised TypeError (httpx2)."""
    from agent_rollout.examples.scripted_servers import serve

    async def ask(model: Any) -> Any:
        client = model.openai_client()
        return await client.chat.completions.create(
            model="scripted-policy",
            messages=[{"role": "user", "content": "What is 2 + 3?"}],
            tools=TOOLS,
        )

    with serve("policy") as (url, seen):
        model = art.Model(
            name="policy",
            project="agent-rollout-tests",
            inference_base_url=url,
            inference_api_key="EMPTY",
        )
        completion = asyncio.run(ask(model))
    call = completion.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "calculate",
        {"expression": "2 + 3"},
    )
    assert seen[0]["path"] == "/v1/chat/completions"


def test_policy_options_build_an_art_model_for_the_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_rollout.examples.scripted_servers import serve

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with serve("policy") as (url, seen):
        result = launch_rollout(
            "art",
            prompts=[{"prompt": QUESTION}],  # a seed row, as in the bundled prompts.jsonl
            rollout_func="agent_rollout.examples.art_rollout:policy_rollout",
            options={"group_size": 2, "policy_model": "Org/policy-1", "policy_base_url": url},
        )
    # rollout 0 answers 5 (reward 1), rollout 1 answers 6 (reward 0): one row, answer 5.
    assert result.rows == ({"prompt": OPENING, "answer": "5"},)
    assert {request["body"]["model"] for request in seen} == {"Org/policy-1"}
    model = art_backend.policy_model(
        None, {"policy_model": "m", "policy_base_url": url + "/"}, "art"
    )
    assert (model.inference_model_name, model.inference_base_url) == ("m", url)
    assert model.inference_api_key == "EMPTY"


@pytest.mark.parametrize(
    ("options", "model", "message"),
    [
        ({"policy_base_url": "http://127.0.0.1:1/v1"}, None, "needs rollout_policy_model"),
        ({"policy_model": "m"}, None, "needs rollout_policy_base_url"),
        ({"policy_model": "m", "policy_base_url": "ftp://x"}, None, "needs rollout_policy_base"),
        ({"policy_model": "m", "policy_base_url": "http://h/v1"}, object(), "one or the other"),
    ],
)
def test_policy_options_are_checked(options: dict[str, Any], model: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        art_backend.policy_model(model, options, "art")
    assert art_backend.policy_model(model, {}, "art") is model


# ------------------------------------------- failures that say where, rewards, progress


@pytest.mark.parametrize(("reward", "shown"), [(None, "NoneType"), ("high", "str 'high'")])
def test_a_reward_that_is_not_a_number_is_refused_before_art_adds_it(
    reward: Any, shown: str
) -> None:
    """ART's own gather adds rewards up and fails with a TypeError naming nothing."""

    def fn(model: Any, prompt: Any) -> Any:
        trajectory = rollout(model, prompt)
        if "7" in str(prompt):
            trajectory.reward = reward  # assignment skips pydantic's check
        return trajectory

    with pytest.raises(ValueError) as info:
        launch_rollout(
            "art", prompts=[QUESTION, "What is 7 + 1?"], rollout_func=fn, options={"group_size": 1}
        )
    assert str(info.value) == (
        f"rollout_backend 'art': prompt 1 rollout 0: reward must be a number, got {shown}"
    )


def test_a_rollout_that_raises_is_named_with_backend_prompt_and_rollout() -> None:
    def fn(model: Any, prompt: Any) -> Any:
        if "7" in str(prompt):
            raise KeyError("no such tool")
        return rollout(model, prompt)

    with pytest.raises(RuntimeError) as info:
        launch_rollout(
            "art", prompts=[QUESTION, "What is 7 + 1?"], rollout_func=fn, options={"group_size": 1}
        )
    assert str(info.value) == (
        "rollout_backend 'art': prompt 1 rollout 0: rollout_func raised KeyError: 'no such tool'"
    )


def test_an_unreachable_policy_is_a_connection_error_naming_its_address() -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    with pytest.raises(ConnectionError) as info:
        launch_rollout(
            "art",
            prompts=[QUESTION],
            rollout_func="agent_rollout.examples.art_rollout:policy_rollout",
            options={"group_size": 1, "policy_model": "p", "policy_base_url": url},
        )
    assert str(info.value) == (
        f"rollout_backend 'art': prompt 0 rollout 0: no server answered at {url} "
        "(rollout_policy_base_url): APIConnectionError: Connection error."
    )


def test_rollouts_done_are_reported_and_art_draws_no_bar(
    capfd: pytest.CaptureFixture[str],
) -> None:
    from agent_rollout.backends._report import reporting

    class Seen:
        def __init__(self) -> None:
            self.counts: list[tuple[int, int]] = []
            self.notes: list[str] = []

        def rollouts(self, done: int, total: int) -> None:
            self.counts.append((done, total))

        def note(self, text: str) -> None:
            self.notes.append(text)

    seen = Seen()
    capfd.readouterr()
    with reporting(seen):
        launch_rollout(
            "art",
            prompts=[QUESTION, "What is 7 + 1?", "Count these words"],
            rollout_func="agent_rollout.examples.art_rollout:arollout",
            options={"group_size": 2},
        )
    assert seen.counts == [(done, 6) for done in range(7)]
    assert capfd.readouterr() == ("", "")  # no tqdm bar, no LiteLLM line


def test_art_is_imported_without_a_network_call_or_a_notice(tmp_path: Path) -> None:
    """LiteLLM, imported by ART, fetches its price table unless told not to; we tell it."""
    import subprocess
    import sys

    from support import cli_env

    script = tmp_path / "probe.py"
    script.write_text(
        "import json, os, socket\n"
        "tried = []\n"
        "def refuse(*args, **kwargs):\n"
        "    tried.append(repr(args[:2]))\n"
        "    raise OSError('no network in this test')\n"
        "socket.getaddrinfo = refuse\n"
        "socket.socket.connect = refuse\n"
        "from agent_rollout.backends import art as backend\n"
        "backend.import_art()\n"
        "from litellm.litellm_core_utils.get_model_cost_map import _cost_map_source_info as i\n"
        "print(json.dumps({'tried': tried, 'source': i.source, 'forced': i.is_env_forced,\n"
        "    'env': os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP')}))\n",
        encoding="utf-8",
    )
    env = cli_env()
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    env.pop("TRANSFORMERS_NO_ADVISORY_WARNINGS", None)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, env=env, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"tried": [], "source": "local", "forced": True, "env": None}
    assert proc.stderr == b""  # neither LiteLLM's warning nor transformers' notice
    # AGENT_ROLLOUT_DEBUG lets the notice through (and still keeps the network out).
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        env=env | {"AGENT_ROLLOUT_DEBUG": "1"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tried"] == []
    assert b"PyTorch was not found" in proc.stderr
