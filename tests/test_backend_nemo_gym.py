"""The nemo_gym backend: Gym row mapping, the JSONL reader, launch(), and the real data.

The last test converts every JSONL file shipped in the nemo-gym wheel. It needs
the unpacked wheel: run ``scripts/fetch_nemo_gym_data.sh DIR`` and point
``AGENT_ROLLOUT_NEMO_GYM_DATA`` at DIR. Without it that test skips and says so.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_rollout import launch_rollout, normalise_rollout_rows
from agent_rollout.backends import nemo_gym
from agent_rollout.backends.nemo_gym import GymRowError, gym_row_to_row, launch, read_gym_jsonl

DATA_ENV = "AGENT_ROLLOUT_NEMO_GYM_DATA"
MEASURED_VERSION = "0.4.0"


def gym(inp: Any, **fields: Any) -> dict[str, Any]:
    """A Gym task row whose request has ``input`` (plus any top-level fields)."""
    return {"responses_create_params": {"input": inp}, **fields}


def text(value: str, kind: str = "input_text") -> dict[str, Any]:
    return {"type": kind, "text": value}


def fails(row: Any, field: str, why: str, **kwargs: Any) -> GymRowError:
    with pytest.raises(GymRowError) as info:
        gym_row_to_row(row, **kwargs)
    assert info.value.field == field
    assert why in str(info.value)
    assert isinstance(info.value, ValueError)
    return info.value


# ---------------------------------------------------------------- prompt mapping


def test_string_input_is_one_user_message() -> None:
    assert gym_row_to_row(gym("What is 2+2?")) == {
        "prompt": [{"role": "user", "content": "What is 2+2?"}]
    }


def test_instructions_become_a_leading_system_message() -> None:
    row = {"responses_create_params": {"instructions": "Be brief.", "input": "Hi"}}
    assert gym_row_to_row(row)["prompt"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]


@pytest.mark.parametrize("instructions", [None, ""])
def test_null_or_empty_instructions_add_nothing(instructions: Any) -> None:
    row = {"responses_create_params": {"instructions": instructions, "input": "Hi"}}
    assert gym_row_to_row(row)["prompt"] == [{"role": "user", "content": "Hi"}]


def test_instructions_must_be_a_string() -> None:
    row = {"responses_create_params": {"instructions": ["x"], "input": "Hi"}}
    fails(row, "responses_create_params.instructions", "must be a string, got list")


def test_message_items_with_and_without_type() -> None:
    items = [
        {"role": "system", "content": "sys"},
        {"type": "message", "role": "user", "content": "question"},
        {
            "type": "message",
            "role": "assistant",
            "content": "reply",
            "id": "m1",
            "status": "completed",
        },
        {"role": "user", "content": "follow-up"},
    ]
    assert gym_row_to_row(gym(items))["prompt"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": "follow-up"},
    ]


def test_developer_role_becomes_system() -> None:
    prompt = gym_row_to_row(gym([{"role": "developer", "content": "rules"}]))["prompt"]
    assert prompt == [{"role": "system", "content": "rules"}]


@pytest.mark.parametrize("role", ["tool", "critic", None, 3])
def test_unknown_role_is_refused(role: Any) -> None:
    fails(
        gym([{"type": "message", "role": role, "content": "x"}]),
        "responses_create_params.input[0].role",
        "unsupported role",
    )


def test_text_parts_of_a_user_message_join_with_newlines() -> None:
    item = {"role": "user", "content": [text("first"), text("second")]}
    assert gym_row_to_row(gym([item]))["prompt"] == [{"role": "user", "content": "first\nsecond"}]


def test_text_parts_of_an_assistant_message_join_without_separator() -> None:
    item = {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "content": [
            {"type": "output_text", "text": "Hello, ", "annotations": [], "logprobs": None},
            text("world", "output_text"),
        ],
    }
    assert gym_row_to_row(gym([item]))["prompt"] == [
        {"role": "assistant", "content": "Hello, world"}
    ]


def test_refusal_part_keeps_its_text() -> None:
    item = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help."}]}
    assert gym_row_to_row(gym([item]))["prompt"] == [
        {"role": "assistant", "content": "I can't help."}
    ]


def test_image_content_stays_openai_chat_parts() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"}
    bare = {"type": "input_image", "image_url": "https://example.org/a.png"}
    item = {"role": "user", "content": [image, text("How many circles?"), bare]}
    assert gym_row_to_row(gym([item]))["prompt"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,AAAA", "detail": "high"},
                },
                {"type": "text", "text": "How many circles?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.org/a.png", "detail": "auto"},
                },
            ],
        }
    ]


def test_image_given_only_by_file_id_is_refused() -> None:
    item = {
        "role": "user",
        "content": [{"type": "input_image", "file_id": "file-123", "detail": "auto"}],
    }
    error = fails(
        gym([item]), "responses_create_params.input[0].content[0].image_url", "file_id 'file-123'"
    )
    assert "only as a URL" in str(error)


@pytest.mark.parametrize("url", [None, "", 7])
def test_image_without_a_url_is_refused(url: Any) -> None:
    item = {"role": "user", "content": [{"type": "input_image", "image_url": url}]}
    fails(
        gym([item]),
        "responses_create_params.input[0].content[0].image_url",
        "non-empty string image_url",
    )


def test_image_detail_must_be_a_string() -> None:
    item = {"role": "user", "content": [{"type": "input_image", "image_url": "u", "detail": 1}]}
    fails(
        gym([item]),
        "responses_create_params.input[0].content[0].detail",
        "must be a string, got int",
    )


def test_image_in_an_assistant_message_is_refused() -> None:
    item = {"role": "assistant", "content": [{"type": "input_image", "image_url": "u"}]}
    fails(
        gym([item]),
        "responses_create_params.input[0].content[0]",
        "assistant message cannot carry an image",
    )


@pytest.mark.parametrize("kind", ["input_file", "input_audio", None])
def test_unknown_content_part_is_refused(kind: Any) -> None:
    item = {"role": "user", "content": [text("ok"), {"type": kind, "file_data": "..."}]}
    error = fails(
        gym([item]),
        "responses_create_params.input[0].content[1].type",
        "unsupported content part type",
    )
    assert repr(kind) in str(error)


def test_content_part_must_be_an_object() -> None:
    fails(
        gym([{"role": "user", "content": ["plain"]}]),
        "responses_create_params.input[0].content[0]",
        "must be an object, got str",
    )


def test_text_part_needs_string_text() -> None:
    item = {"role": "user", "content": [{"type": "input_text", "text": None}]}
    fails(
        gym([item]),
        "responses_create_params.input[0].content[0].text",
        "must be a string, got null",
    )


def test_refusal_part_needs_string_refusal() -> None:
    item = {"role": "assistant", "content": [{"type": "refusal"}]}
    fails(
        gym([item]),
        "responses_create_params.input[0].content[0].refusal",
        "must be a string, got null",
    )


def test_message_content_missing_or_of_wrong_type() -> None:
    fails(gym([{"role": "user"}]), "responses_create_params.input[0].content", "missing")
    fails(
        gym([{"role": "user", "content": None}]),
        "responses_create_params.input[0].content",
        "got null",
    )
    fails(
        gym([{"role": "user", "content": {"text": "x"}}]),
        "responses_create_params.input[0].content",
        "got dict",
    )


def test_tool_calls_and_outputs() -> None:
    items = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
            "id": "fc_1",
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "sunny",
            "id": None,
            "status": "completed",
        },
    ]
    assert gym_row_to_row(gym(items))["prompt"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]


def test_assistant_output_between_turns_folds_into_one_message() -> None:
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}]},
        {"type": "message", "role": "assistant", "content": [text("Let me check.", "output_text")]},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "1"},
        {"type": "function_call_output", "call_id": "b", "output": "2"},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "opaque"},
        {"role": "assistant", "content": "Done."},
    ]
    prompt = gym_row_to_row(gym(items))["prompt"]
    assert [m["role"] for m in prompt] == ["user", "assistant", "tool", "tool", "assistant"]
    assert prompt[1]["content"] == "<think>plan</think>Let me check."
    assert [call["id"] for call in prompt[1]["tool_calls"]] == ["a", "b"]
    assert prompt[4] == {"role": "assistant", "content": "Done."}


def test_reasoning_with_several_summaries_and_null_summary() -> None:
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "summary": [{"text": "a"}, {"text": ""}, {"text": "b"}]},
        {"type": "reasoning", "summary": None},
        {"role": "assistant", "content": "x"},
    ]
    assert gym_row_to_row(gym(items))["prompt"][1] == {
        "role": "assistant",
        "content": "<think>a</think><think>b</think>x",
    }


def test_reasoning_errors() -> None:
    fails(
        gym([{"type": "reasoning", "summary": "s"}]),
        "responses_create_params.input[0].summary",
        "must be a list, got str",
    )
    fails(
        gym([{"type": "reasoning", "summary": ["s"]}]),
        "responses_create_params.input[0].summary[0]",
        "must be an object",
    )
    fails(
        gym([{"type": "reasoning", "summary": [{"text": 1}]}]),
        "responses_create_params.input[0].summary[0].text",
        "got int",
    )


def test_only_empty_reasoning_leaves_no_prompt() -> None:
    fails(
        gym([{"type": "reasoning", "summary": []}]),
        "responses_create_params.input",
        "holds no text",
    )


@pytest.mark.parametrize("missing", ["call_id", "name", "arguments"])
def test_function_call_fields_are_required(missing: str) -> None:
    item = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
    del item[missing]
    fails(gym([item]), f"responses_create_params.input[0].{missing}", "must be a string, got null")


def test_function_call_arguments_must_be_a_json_string_not_an_object() -> None:
    item = {"type": "function_call", "call_id": "c", "name": "f", "arguments": {"x": 1}}
    fails(gym([item]), "responses_create_params.input[0].arguments", "got dict")


@pytest.mark.parametrize(
    ("change", "field"), [({"call_id": None}, "call_id"), ({"output": [text("x")]}, "output")]
)
def test_function_call_output_fields(change: dict[str, Any], field: str) -> None:
    item = {"type": "function_call_output", "call_id": "c", "output": "o", **change}
    fails(gym([item]), f"responses_create_params.input[0].{field}", "must be a string")


@pytest.mark.parametrize("kind", ["web_search_call", "item_reference", "computer_call", 5])
def test_unknown_item_type_is_refused(kind: Any) -> None:
    error = fails(
        gym([{"role": "user", "content": "ok"}, {"type": kind}]),
        "responses_create_params.input[1].type",
        "unsupported input item type",
    )
    assert "supported: message, function_call" in str(error)


def test_item_without_type_or_role_is_refused() -> None:
    fails(
        gym([{"content": "x"}]),
        "responses_create_params.input[0].type",
        "unsupported input item type None",
    )


def test_item_must_be_an_object() -> None:
    fails(gym(["hello"]), "responses_create_params.input[0]", "must be an object, got str")


def test_input_problems() -> None:
    fails({"responses_create_params": {}}, "responses_create_params.input", "missing")
    fails(gym([]), "responses_create_params.input", "is an empty list")
    fails(gym(""), "responses_create_params.input", "is an empty string")
    fails(gym(None), "responses_create_params.input", "got null")
    fails(gym({"role": "user"}), "responses_create_params.input", "got dict")


def test_row_problems() -> None:
    fails(["not", "a", "row"], "row", "must be an object, got list")
    error = fails({"question": "q", "expected_answer": "a"}, "responses_create_params", "missing")
    assert "ng_materialize_prompts" in str(error)
    fails({"responses_create_params": "x"}, "responses_create_params", "must be an object, got str")


def test_where_prefixes_the_message() -> None:
    error = fails(gym([]), "responses_create_params.input", "empty", where="data.jsonl:4: row 3")
    assert str(error) == "data.jsonl:4: row 3: responses_create_params.input: is an empty list"
    assert error.where == "data.jsonl:4: row 3"


# ---------------------------------------------------------------- answers


def test_expected_answer_wins() -> None:
    row = gym("q", expected_answer="42", answer="41", ground_truth="40")
    assert gym_row_to_row(row)["answer"] == "42"


def test_later_answer_fields_and_null_values() -> None:
    assert gym_row_to_row(gym("q", answer="Yes", ground_truth="No"))["answer"] == "Yes"
    assert gym_row_to_row(gym("q", expected_answer=None, ground_truth="No"))["answer"] == "No"
    assert gym_row_to_row(gym("q", expected_answer="", answer="A"))["answer"] == "A"
    assert "answer" not in gym_row_to_row(gym("q", expected_answer=""))
    assert nemo_gym.ANSWER_FIELDS == ("expected_answer", "answer", "ground_truth")


def test_no_answer_field_means_no_answer() -> None:
    assert "answer" not in gym_row_to_row(gym("q", solution="s", label="l"))


def test_non_string_answer_is_refused() -> None:
    row = gym("q", ground_truth=[{"name": "f", "arguments": "{}"}])
    error = fails(row, "ground_truth", "must be a string, got list")
    assert "answer_fields" in str(error)
    assert "answer" not in gym_row_to_row(row, answer_fields=())


def test_answer_fields_can_be_chosen() -> None:
    row = gym("q", expected_answer="a", gold_sql="SELECT 1")
    assert gym_row_to_row(row, answer_fields=("gold_sql",))["answer"] == "SELECT 1"
    with pytest.raises(TypeError, match="not a str: 'gold_sql'"):
        gym_row_to_row(row, answer_fields="gold_sql")


def test_rollout_prompt_comes_from_the_request_never_the_response() -> None:
    rollout = {
        "responses_create_params": {
            "input": [{"role": "user", "content": "2+2?"}],
            "temperature": 1.0,
            "tools": [],
        },
        "response": {
            "id": "resp_1",
            "output": [
                {"type": "message", "role": "assistant", "content": [text("5", "output_text")]}
            ],
        },
        "reward": 0.0,
        "expected_answer": "4",
        "_ng_task_index": 0,
        "agent_ref": {"name": "math_agent"},
    }
    assert gym_row_to_row(rollout) == {
        "prompt": [{"role": "user", "content": "2+2?"}],
        "answer": "4",
    }
    without = {k: v for k, v in rollout.items() if k != "expected_answer"}
    assert "answer" not in gym_row_to_row(without)


def test_input_is_left_alone_and_shares_nothing_with_the_result() -> None:
    row = gym(
        [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}, text("t")]}],
        expected_answer="a",
    )
    before = copy.deepcopy(row)
    out = gym_row_to_row(row)
    out["prompt"][0]["content"][0]["image_url"]["url"] = "changed"
    out["prompt"][0]["content"].append("x")
    assert row == before


# ---------------------------------------------------------------- the JSONL reader


def write(tmp_path: Path, body: str | bytes, name: str = "rows.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    return path


def line(obj: Any) -> str:
    return json.dumps(obj) + "\n"


def test_reader_converts_rows_and_skips_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "\n" + line(gym("a", expected_answer="1")) + "  \n" + line(gym("b")))
    assert read_gym_jsonl(path) == [
        {"prompt": [{"role": "user", "content": "a"}], "answer": "1"},
        {"prompt": [{"role": "user", "content": "b"}]},
    ]
    assert read_gym_jsonl(str(path)) == read_gym_jsonl(path)


def test_reader_errors_carry_path_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, line(gym("a")) + "\n" + line(gym([])))
    with pytest.raises(GymRowError) as info:
        read_gym_jsonl(path)
    assert str(info.value) == f"{path}:3: row 1: responses_create_params.input: is an empty list"


def test_reader_refuses_invalid_json(tmp_path: Path) -> None:
    path = write(tmp_path, line(gym("a")) + "<PLACEHOLDER ROW>\n")
    # The package's one JSONL reader: its message, with line and column.
    with pytest.raises(ValueError, match=r"rows\.jsonl:2:1: invalid JSON: expected a JSON value"):
        read_gym_jsonl(path)


def test_reader_refuses_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, line(gym("a")).encode() + b'{"x": "\xff"}\n')
    with pytest.raises(ValueError, match=r"rows\.jsonl:2: invalid UTF-8 at byte 8 of the line"):
        read_gym_jsonl(path)


def test_reader_refuses_a_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path, "[1, 2]\n")
    with pytest.raises(
        GymRowError, match=r"rows\.jsonl:1: row 0: row: a Gym row must be an object, got list"
    ):
        read_gym_jsonl(path)


def test_reader_caps_the_row_count(tmp_path: Path) -> None:
    path = write(tmp_path, line(gym("a")) * 3)
    assert len(read_gym_jsonl(path, max_rows=3)) == 3
    with pytest.raises(ValueError, match=r"rows\.jsonl:3: more than 2 rows"):
        read_gym_jsonl(path, max_rows=2)


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (0, ValueError, r"max_rows must be in \[1, 10000000\], got 0"),
        (-1, ValueError, r"max_rows must be in \[1, 10000000\], got -1"),
        (True, TypeError, "max_rows must be an int, got bool"),
        (2.0, TypeError, "max_rows must be an int, got float"),
    ],
)
def test_reader_checks_max_rows(tmp_path: Path, bad: Any, error: type, message: str) -> None:
    # The same check (and text) as read_rollout_jsonl's max_rows.
    with pytest.raises(error, match=message):
        read_gym_jsonl(write(tmp_path, line(gym("a"))), max_rows=bad)


def test_reader_refuses_an_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "\n \n")
    with pytest.raises(ValueError, match=r"rows\.jsonl: no Gym rows"):
        read_gym_jsonl(path)


def test_reader_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl"):
        read_gym_jsonl(tmp_path / "nope.jsonl")


# ---------------------------------------------------------------- launch()


def run(prompts: Any = None, rollout_func: Any = None, **options: Any) -> list[Any]:
    rows = launch(
        prompts=prompts,
        rollout_func=rollout_func,
        model=None,
        tokenizer=None,
        reward_fn=None,
        max_steps=64,
        options=options,
    )
    return list(rows)


def test_launch_reads_the_source_file(tmp_path: Path) -> None:
    path = write(tmp_path, line(gym("from file", expected_answer="f")))
    expected = [{"prompt": [{"role": "user", "content": "from file"}], "answer": "f"}]
    assert run(source=str(path)) == expected
    assert run(prompts=[gym("ignored")], source=str(path)) == expected  # source wins


def test_launch_converts_prompt_rows() -> None:
    assert run(prompts=[gym("a"), gym("b", answer="B")]) == [
        {"prompt": [{"role": "user", "content": "a"}]},
        {"prompt": [{"role": "user", "content": "b"}], "answer": "B"},
    ]
    with pytest.raises(GymRowError, match=r"^row 1: responses_create_params: missing"):
        run(prompts=[gym("a"), {"prompt": "raw"}])


def test_launch_needs_rows() -> None:
    with pytest.raises(ValueError, match="needs rollout_source"):
        run()
    with pytest.raises(ValueError, match="needs rollout_source"):
        run(prompts=[])


def test_launch_refuses_odd_arguments() -> None:
    with pytest.raises(ValueError, match="takes no rollout_func"):
        run(prompts=[gym("a")], rollout_func="pkg.mod:fn")
    with pytest.raises(ValueError, match="rollout_source must be a path string, got int"):
        run(source=3)
    with pytest.raises(ValueError, match="prompts must be a list of Gym rows, got str"):
        run(prompts="abc")


def test_rows_pass_the_core_normaliser() -> None:
    row = gym(
        [
            {"role": "developer", "content": "rules"},
            {"role": "user", "content": [{"type": "input_image", "image_url": "u"}, text("t")]},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "o"},
        ],
        expected_answer="a",
    )
    converted = gym_row_to_row(row)
    assert list(normalise_rollout_rows([converted], backend="nemo_gym")) == [converted]


def test_launch_rollout_runs_this_adapter(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        line(gym("q1", expected_answer="a1")) + line(gym([{"role": "user", "content": "q2"}])),
    )
    result = launch_rollout("nemo_gym", options={"source": str(path)})
    assert result.backend == "nemo_gym"
    assert result.rows == (
        {"prompt": [{"role": "user", "content": "q1"}], "answer": "a1"},
        {"prompt": [{"role": "user", "content": "q2"}]},
    )
    result = launch_rollout("nemo_gym", prompts=[gym("q3", answer="a3")])
    assert result.rows == ({"prompt": [{"role": "user", "content": "q3"}], "answer": "a3"},)
    with pytest.raises(ValueError, match=r"rows\.jsonl:2: row 1: responses_create_params\.input"):
        launch_rollout(
            "nemo_gym", options={"source": str(write(tmp_path, line(gym("a")) + line(gym([]))))}
        )


# ---------------------------------------------------------------- every file in the real wheel

# Files of nemo-gym 0.4.0 that do not convert, each with the text its error
# must contain and why. Every other JSONL file in the wheel must convert whole.
_EMPTY_INPUT = "responses_create_params.input: is an empty list"
_AGENT_BUILDS = (
    "the agent builds the prompt at run time from the task fields; the input is left empty"
)
_NO_REQUEST = "responses_create_params: missing"
_PROFILE = "a reward-profiling summary (mean/max/... metrics), not a row"
_PLACEHOLDER = ":1:1: invalid JSON: expected a JSON value"
EXPECTED_FAILURES: dict[str, tuple[str, str]] = {
    # Placeholder files: every line is the text '<PLACEHOLDER ROW>', not JSON.
    **{
        f"resources_servers/{name}/data/example_rollouts.jsonl": (
            _PLACEHOLDER,
            "placeholder lines, not JSON",
        )
        for name in (
            "browsecomp_advanced_harness",
            "jailbreak_detection",
            "over_refusal_detection",
            "tavily_search",
        )
    },
    # Reward-profiling output: aggregate metrics per task, no request in the row.
    **{
        f"resources_servers/{name}/data/example_rollouts_reward_profiling.jsonl": (
            _NO_REQUEST,
            _PROFILE,
        )
        for name in ("asr_with_pc", "circle_click", "ether0", "longmt_eval")
    },
    # Raw task data that still needs a prompt template or an environment.
    "resources_servers/aviary/data/bixbench_example.jsonl": (
        _NO_REQUEST,
        "only a task_idx; the aviary environment makes the prompt",
    ),
    "resources_servers/finance_sec_search/data/example_questions.jsonl": (
        _NO_REQUEST,
        "raw question/expected_answer pairs, before a prompt is applied",
    ),
    # Agent-driven environments: the request input is deliberately empty.
    **{
        path: (_EMPTY_INPUT, _AGENT_BUILDS)
        for path in (
            "resources_servers/aviary/data/bbh_train_example.jsonl",
            "resources_servers/aviary/data/example.jsonl",
            "resources_servers/aviary/data/example_rollouts.jsonl",
            "resources_servers/aviary/data/gsm8k_example.jsonl",
            "resources_servers/aviary/data/hotpotqa_example.jsonl",
            "resources_servers/gdpval/data/example.jsonl",
            "resources_servers/gdpval/data/example_rollouts.jsonl",
            "resources_servers/scicode/data/example.jsonl",
            "resources_servers/scicode/data/example_rollouts.jsonl",
            "responses_api_agents/harbor_agent/example/example_input.jsonl",
            "responses_api_agents/harbor_agent/example/terminal_bench_daytona_input.jsonl",
            "responses_api_agents/harbor_agent/example/terminal_bench_daytona_output.jsonl",
            "responses_api_agents/mini_swe_agent/data/example.jsonl",
            "responses_api_agents/mini_swe_agent_2/data/example.jsonl",
            "responses_api_agents/swe_agents/data/example.jsonl",
        )
    },
    "responses_api_agents/stirrup_agent/data/example.jsonl": (
        "responses_create_params.input: is an empty string",
        _AGENT_BUILDS,
    ),
    # The reference is not a string: a list of expected tool calls, a list of labels.
    "environments/workplace_assistant/data/example.jsonl": (
        "ground_truth: the reference answer must be a string, got list",
        "ground_truth is a list of expected tool calls",
    ),
    "resources_servers/workplace_assistant/data/example.jsonl": (
        "ground_truth: the reference answer must be a string, got list",
        "ground_truth is a list of expected tool calls",
    ),
    "resources_servers/vlm_eval_kit/data/example.jsonl": (
        "answer: the reference answer must be a string, got list",
        "answer is a list of accepted answers",
    ),
    "resources_servers/vlm_eval_kit/data/example_rollouts.jsonl": (
        "answer: the reference answer must be a string, got list",
        "answer is a list of accepted answers",
    ),
    # An empty file.
    "resources_servers/math_formal_lean/data/minif2f_valid.jsonl": (
        "no Gym rows",
        "the file is empty",
    ),
}
_ANSWER_TYPE = "the reference answer must be a string"


def _data_dir() -> Path:
    value = os.environ.get(DATA_ENV)
    if not value:
        pytest.skip(
            f"{DATA_ENV} is not set: run scripts/fetch_nemo_gym_data.sh DIR and set {DATA_ENV}=DIR "
            "to convert every JSONL file shipped in the nemo-gym wheel"
        )
    path = Path(value)
    if not path.is_dir():
        pytest.fail(f"{DATA_ENV}={value} is not a directory")
    return path


def test_every_jsonl_file_in_the_nemo_gym_wheel(
    capsys: pytest.CaptureFixture[str], record_property: Any
) -> None:
    root = _data_dir()
    versions = sorted(p.name for p in root.glob("nemo_gym-*.dist-info"))
    assert versions == [f"nemo_gym-{MEASURED_VERSION}.dist-info"], (
        f"{root} holds {versions}; the expected-failures table was measured on nemo-gym "
        f"{MEASURED_VERSION} (fetch it with NEMO_GYM_VERSION={MEASURED_VERSION})"
    )
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.jsonl"))
    assert len(files) > 200, f"only {len(files)} JSONL files under {root}"
    missing = sorted(set(EXPECTED_FAILURES) - set(files))
    assert not missing, f"expected-failure entries for files not in the wheel: {missing}"

    problems: list[str] = []
    converted_files = rows = answered = with_images = with_tools = 0
    collapsed_rows = tool_rows = dropped = 0
    failures: dict[str, str] = {}
    for name in files:
        path = root / name
        try:
            converted = read_gym_jsonl(path)
        except ValueError as exc:
            failures[name] = str(exc).replace(str(root) + "/", "")
            expected = EXPECTED_FAILURES.get(name)
            if expected is None:
                problems.append(f"{name}: unexpected failure: {exc}")
            elif expected[0] not in str(exc) or not str(exc).startswith(str(path)):
                problems.append(f"{name}: failed differently: {exc} (expected {expected[0]!r})")
            continue
        if name in EXPECTED_FAILURES:
            problems.append(
                f"{name}: listed as an expected failure but converted; update the table"
            )
            continue
        assert list(normalise_rollout_rows(converted, backend="nemo_gym")) == converted, name
        converted_files += 1
        rows += len(converted)
        collapsed = nemo_gym.launch(
            prompts=None,
            rollout_func=None,
            model=None,
            tokenizer=None,
            reward_fn=None,
            max_steps=1,
            options={"source": str(path)},
        )
        collapsed_rows += len(collapsed)
        dropped += len(collapsed.drops)
        tool_rows += collapsed.unused_fields.get(nemo_gym.TOOLS_FIELD, 0)
        for row in converted:
            assert isinstance(row["prompt"], list) and row["prompt"], f"{name}: empty prompt"
            answered += "answer" in row
            with_images += any(isinstance(m["content"], list) for m in row["prompt"])
            with_tools += any("tool_calls" in m for m in row["prompt"])

    # A file refused only for its answer type must convert once no answer is taken.
    for name, (text_, _reason) in EXPECTED_FAILURES.items():
        if _ANSWER_TYPE in text_:
            assert all(
                gym_row_to_row(json.loads(raw), answer_fields=())["prompt"]
                for raw in (root / name).read_text(encoding="utf-8").splitlines()
                if raw.strip()
            )

    summary = {
        "nemo_gym_version": MEASURED_VERSION,
        "files_found": len(files),
        "files_converted": converted_files,
        "rows_converted": rows,
        "rows_with_answer": answered,
        "rows_with_images": with_images,
        "rows_with_tool_calls": with_tools,
        "rows_after_collapsing_repeats": collapsed_rows,
        "tasks_dropped": dropped,
        "rows_whose_tools_are_not_carried": tool_rows,
        "files_failed": len(failures),
        "failures": {name: EXPECTED_FAILURES.get(name, ("", "UNEXPECTED"))[1] for name in failures},
    }
    record_property("nemo_gym_summary", json.dumps(summary))
    with capsys.disabled():
        print(
            f"\nnemo-gym {MEASURED_VERSION}: {len(files)} JSONL files, {converted_files} converted "
            f"({rows} rows, {answered} with an answer, {with_images} with images, "
            f"{with_tools} with tool calls), {len(failures)} refused as expected; "
            f"{collapsed_rows} rows once repeats of a task collapse ({dropped} tasks dropped), "
            f"{tool_rows} rows define tools that rows cannot carry"
        )
    assert not problems, "\n".join(problems)
    assert converted_files + len(failures) == len(files)
    assert len(failures) == len(EXPECTED_FAILURES)


# ------------------------------------------------- collected rollouts: one row per task


def _rollout(task: int, answer_text: str, reward: Any, **fields: Any) -> dict[str, Any]:
    return {
        "responses_create_params": {
            "input": [{"role": "user", "content": f"task {task}: 2+2?"}],
            "tools": [{"type": "function", "name": "calc", "parameters": {}}],
        },
        "response": {
            "output": [
                {"type": "reasoning", "summary": []},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [text(answer_text, "output_text")],
                },
            ]
        },
        "reward": reward,
        "_ng_task_index": task,
        **fields,
    }


def test_repeats_of_one_task_collapse_to_one_row_with_the_reference() -> None:
    rows = [
        _rollout(0, "5", 0.0, expected_answer="4"),
        _rollout(1, "7", 0.0, expected_answer="9"),
        _rollout(0, "4", 1.0, expected_answer="4"),
        gym("a plain task", expected_answer="x"),
    ]
    result = launch_rollout("nemo_gym", prompts=rows)
    assert result.rows == (
        {"prompt": [{"role": "user", "content": "task 0: 2+2?"}], "answer": "4"},
        {"prompt": [{"role": "user", "content": "task 1: 2+2?"}], "answer": "9"},
        {"prompt": [{"role": "user", "content": "a plain task"}], "answer": "x"},
    )
    assert result.drops == ()
    assert result.unused_fields == {"responses_create_params.tools": 3}


def test_without_a_task_index_repeats_are_matched_by_prompt() -> None:
    first, second = _rollout(0, "5", 0.0), _rollout(0, "4", 1.0)
    del first["_ng_task_index"], second["_ng_task_index"]
    result = launch_rollout("nemo_gym", prompts=[first, second])
    assert result.rows == ({"prompt": [{"role": "user", "content": "task 0: 2+2?"}]},)


def test_rows_sharing_a_task_index_with_different_prompts_stay_apart() -> None:
    # Rollouts of two Gym datasets written to one file both count tasks from 0: the
    # index alone does not identify a task, and merging them would lose one silently.
    other = _rollout(0, "9", 1.0, expected_answer="9")
    other["responses_create_params"]["input"][0]["content"] = "another dataset: 4+5?"
    result = launch_rollout("nemo_gym", prompts=[_rollout(0, "4", 1.0, expected_answer="4"), other])
    assert result.rows == (
        {"prompt": [{"role": "user", "content": "task 0: 2+2?"}], "answer": "4"},
        {"prompt": [{"role": "user", "content": "another dataset: 4+5?"}], "answer": "9"},
    )
    assert result.drops == ()


def test_repeats_with_different_references_drop_the_task() -> None:
    rows = [
        _rollout(3, "4", 1.0, expected_answer="4"),
        _rollout(3, "4", 1.0, expected_answer="four"),
        _rollout(4, "1", 1.0, expected_answer="1"),
    ]
    result = launch_rollout("nemo_gym", prompts=rows)
    assert len(result.rows) == 1
    assert result.drop_counts() == {"answer_conflict": 1}
    assert result.drops[0].prompt_index == 3
    assert "row 0: '4'; row 1: 'four'" in result.drops[0].detail


def test_every_task_dropped_is_an_error_that_says_why() -> None:
    rows = [_rollout(3, "4", 1.0, expected_answer="4"), _rollout(3, "4", 1.0, expected_answer="5")]
    expected = r"every prompt was dropped \(1 of 1; answer_conflict: 1\)"
    with pytest.raises(ValueError, match=expected):
        launch_rollout("nemo_gym", prompts=rows)


def test_answer_from_response_ranks_rewards_when_there_is_no_reference() -> None:
    rows = [_rollout(0, "5", 0.0), _rollout(0, "4", 1.0), _rollout(0, "4", 1.0)]
    plain = launch_rollout("nemo_gym", prompts=rows)
    assert plain.rows == ({"prompt": [{"role": "user", "content": "task 0: 2+2?"}]},)
    ranked = launch_rollout("nemo_gym", prompts=rows, options={"answer_from_response": True})
    assert ranked.rows == (
        {"prompt": [{"role": "user", "content": "task 0: 2+2?"}], "answer": "4"},
    )
    # A reference, when present, still wins over the best response.
    with_ref = [dict(row, expected_answer="four") for row in rows]
    result = launch_rollout("nemo_gym", prompts=with_ref, options={"answer_from_response": True})
    assert result.rows[0]["answer"] == "four"


def test_answer_from_response_ending_on_a_tool_call_has_no_answer() -> None:
    # As for art: a response whose last assistant turn is a tool call has no final
    # text; the thinking-aloud message before the call is not an answer.
    best = _rollout(0, "let me add these", 1.0)
    best["response"]["output"].append(
        {"type": "function_call", "call_id": "c1", "name": "calc", "arguments": "{}"}
    )
    rows = [best, _rollout(0, "5", 0.0)]
    with pytest.raises(ValueError, match=r"every prompt was dropped \(1 of 1; no_answer: 1\)"):
        launch_rollout("nemo_gym", prompts=rows, options={"answer_from_response": True})


def test_answer_from_response_ties_drop_and_bad_rewards_are_errors() -> None:
    tie = [_rollout(0, "5", 1.0), _rollout(0, "4", 1.0), _rollout(1, "2", 0.5)]
    result = launch_rollout("nemo_gym", prompts=tie, options={"answer_from_response": True})
    assert [row["answer"] for row in result.rows] == ["2"]
    assert [(d.prompt_index, d.reason) for d in result.drops] == [(0, "tie")]
    with pytest.raises(ValueError, match=r"task 0 \(row 0\) rollout 1: reward nan is not a finite"):
        launch_rollout(
            "nemo_gym",
            prompts=[_rollout(0, "5", 1.0), _rollout(0, "4", float("nan"))],
            options={"answer_from_response": True},
        )
    with pytest.raises(ValueError, match="row 0: reward: missing"):
        launch_rollout(
            "nemo_gym",
            prompts=[_rollout(0, "5", None)],
            options={"answer_from_response": True},
        )
    with pytest.raises(ValueError, match="answer_from_response must be a bool, got str"):
        launch_rollout("nemo_gym", prompts=tie, options={"answer_from_response": "yes"})


def test_source_files_collapse_too(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    lines = [_rollout(0, "5", 0.0, expected_answer="4"), _rollout(0, "4", 1.0, expected_answer="4")]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    result = launch_rollout("nemo_gym", options={"source": str(path)})
    assert result.rows == (
        {"prompt": [{"role": "user", "content": "task 0: 2+2?"}], "answer": "4"},
    )
    assert result.unused_fields == {"responses_create_params.tools": 2}
    assert len(read_gym_jsonl(path)) == 2  # the per-line reader keeps every line
