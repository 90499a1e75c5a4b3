"""Positions for the host's whole config: its own model, our ``file:line:col``.

A host reads the file with ``read_config`` (values as its YAML, JSON or TOML
reader gives them, positions kept), validates them with its own pydantic
model (after its own merging, if any), and turns the ``ValidationError``
into ``ConfigIssue``s: every error, the host's and ours, at any depth, list
items included. Tested with an axolotl-style composed model, a
soup-cli-style model (our keys in a nested ``training:`` section) and nested
lists, in YAML, JSON and TOML.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal, Optional, Union

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_rollout.config import (
    ConfigDocument,
    ConfigError,
    RolloutFields,
    read_config,
    read_config_bytes,
)
from support import facts

# ------------------------------------------------------------ host models


class DatasetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    type: Literal["chat_template", "alpaca"] = "chat_template"
    split: Optional[str] = None


class ModelInputConfig(BaseModel):
    base_model: str
    tokenizer_config: Optional[str] = None


class HyperparametersConfig(BaseModel):
    learning_rate: float = 1e-5
    micro_batch_size: int = Field(default=1, ge=1)


class DatasetsMixin(BaseModel):
    datasets: list[DatasetConfig] = Field(default_factory=list)


class AxolotlInputConfig(ModelInputConfig, HyperparametersConfig, DatasetsMixin, RolloutFields):
    """axolotl composes its flat config from mixins; ours is one of them."""

    model_config = ConfigDict(extra="forbid", title="AxolotlInputConfig")
    rl: Optional[Literal["grpo", "dpo"]] = None


class TrainingConfig(RolloutFields):
    """soup-cli: the training section, our keys among the trainer's."""

    model_config = ConfigDict(extra="forbid")
    epochs: int = 1
    lr: float = 1e-5
    reward_weights: Union[float, list[float]] = 1.0


class SoupConfig(BaseModel):
    base: str
    task: Literal["sft", "grpo"] = "sft"
    training: TrainingConfig = Field(default_factory=TrainingConfig)


def issues_of(document: ConfigDocument, model: type[BaseModel], **kwargs: object) -> list[tuple]:
    with pytest.raises(ConfigError) as caught:
        document.validate(model, **kwargs)  # type: ignore[arg-type]
    return [(i.line, i.col, i.location, i.kind, i.message) for i in caught.value.issues]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


AXOLOTL = """\
base_model: Qwen/Qwen2.5-0.5B-Instruct
rl: grpo
learning_rate: fast
micro_batch_size: 0
datasets:
  - path: a.jsonl
  - path: b.jsonl
    type: sharegpt
    spilt: train
  - type: alpaca
rollout_backend: openenv
rollout_max_steps: 0
rollout_judge_model: j
rollout_fucn: m:f
wandb_project: p
"""


def test_axolotl_style_every_error_at_its_line_and_column(tmp_path: Path) -> None:
    document = read_config(write(tmp_path, "axolotl.yaml", AXOLOTL))
    assert issues_of(document, AxolotlInputConfig) == [
        (
            3,
            16,
            "learning_rate",
            "value",
            "Input should be a valid number, unable to parse string as a number (got 'fast')",
        ),
        (4, 19, "micro_batch_size", "value", "Input should be greater than or equal to 1 (got 0)"),
        (
            8,
            11,
            "datasets[1].type",
            "value",
            "Input should be 'chat_template' or 'alpaca' (got 'sharegpt')",
        ),
        (9, 5, "datasets[1].spilt", "unknown_key", "Extra inputs are not permitted (got 'train')"),
        (10, 5, "datasets[2].path", "missing", "Field required"),
        (12, 20, "rollout_max_steps", "value", "rollout_max_steps must be in [1, 100000], got 0"),
        (
            13,
            1,
            "rollout_judge_model",
            "cross_field",
            "rollout_judge_model needs rollout_backend 'ruler', but rollout_backend is 'openenv'",
        ),
        (
            14,
            1,
            "rollout_fucn",
            "unknown_key",
            "unknown key 'rollout_fucn'; did you mean 'rollout_func'?",
        ),
        (15, 1, "wandb_project", "unknown_key", "Extra inputs are not permitted (got 'p')"),
    ]


def test_a_missing_key_is_placed_at_the_mapping_that_lacks_it(tmp_path: Path) -> None:
    document = read_config(write(tmp_path, "a.yaml", "rl: grpo\nrollout_backend: nemo_gym\n"))
    assert issues_of(document, AxolotlInputConfig) == [
        (1, 1, "base_model", "missing", "Field required")
    ]


SOUP = """\
base: Qwen/Qwen2.5-0.5B-Instruct
task: grpo
training:
  epochs: two
  reward_weights: [1.0, heavy]
  rollout_backend: art
  rollout_policy_model: scripted-policy
  rollout_group_size: 2.5
"""


@pytest.mark.parametrize("fmt", ["yaml", "json", "toml"])
def test_soup_style_nested_section(tmp_path: Path, fmt: str) -> None:
    import yaml

    data = yaml.safe_load(SOUP)
    if fmt == "yaml":
        text = SOUP
    elif fmt == "json":
        text = json.dumps(data, indent=2)
    else:
        text = (
            'base = "Qwen/Qwen2.5-0.5B-Instruct"\ntask = "grpo"\n[training]\nepochs = "two"\n'
            'reward_weights = [1.0, "heavy"]\nrollout_backend = "art"\n'
            'rollout_policy_model = "scripted-policy"\nrollout_group_size = 2.5\n'
        )
    document = read_config(write(tmp_path, f"soup.{fmt}", text))
    assert document.data == data
    found = issues_of(document, SoupConfig)
    assert sorted((location, kind) for _, _, location, kind, _ in found) == [
        ("training.epochs", "value"),
        ("training.reward_weights", "value"),
        ("training.reward_weights[1]", "value"),
        ("training.rollout_group_size", "value"),
        ("training.rollout_policy_model", "cross_field"),
    ]
    quoted = (lambda word: word) if fmt == "yaml" else (lambda word: f'"{word}"')
    expected = {
        "training.epochs": quoted("two"),  # a bad value: at the value
        "training.reward_weights": "[",
        "training.reward_weights[1]": quoted("heavy"),  # an item: at the item
        "training.rollout_group_size": "2.5",
        "training.rollout_policy_model": (  # a cross-field rule: at the key
            "rollout_policy_model" if fmt == "toml" else quoted("rollout_policy_model")
        ),
    }
    lines = text.split("\n")
    for line, col, location, _, _ in found:
        assert lines[line - 1][col - 1 :].startswith(expected[location]), (location, line, col)
    assert {message for *_, message in found} >= {
        "rollout_policy_model needs rollout_policy_base_url when rollout_backend is 'art' "
        "(set both or neither)"
    }


def test_json_positions_of_values_in_nested_lists(tmp_path: Path) -> None:
    text = '{"base": "m", "training": {"reward_weights": [1.0,\n  true, "x"]}}'
    document = read_config(write(tmp_path, "s.json", text))
    found = issues_of(document, SoupConfig)
    assert (2, 9, "training.reward_weights[2]") in [
        (line, col, loc) for line, col, loc, *_ in found
    ]


def test_the_host_validates_a_section_or_its_own_merge_of_the_file(tmp_path: Path) -> None:
    document = read_config(write(tmp_path, "soup.yaml", SOUP))
    # A section on its own: locations and positions are the file's.
    with pytest.raises(ValidationError) as caught:
        TrainingConfig.model_validate(document.section("training"))
    issues = document.issues(caught.value, under="training")
    assert [(i.line, i.location) for i in issues][:1] == [(4, "training.epochs")]
    # After the host's own merging (a command-line override adds a key the file lacks):
    merged = {**document.data, "training": {**document.data["training"], "lr": "high"}}
    with pytest.raises(ValidationError) as caught:
        SoupConfig.model_validate(merged)
    issues = document.issues(caught.value, data=merged)
    by_location = {i.location: (i.line, i.col) for i in issues}
    assert by_location["training.lr"] == (3, 1)  # not in the file: at the nearest key it has
    assert by_location["training.epochs"] == (4, 11)


def test_warnings_of_the_hosts_model_are_positioned(tmp_path: Path) -> None:
    text = "base: m\ntraining:\n  rollout_backend: ruler\n"
    document = read_config(write(tmp_path, "soup.yaml", text))
    config = document.validate(SoupConfig)
    assert [(w.line, w.col, w.location, w.kind, w.severity) for w in document.warnings(config)] == [
        (2, 1, "training.rollout_func", "incomplete", "warning"),
        (2, 1, "training.rollout_judge_model", "incomplete", "warning"),
    ]


def test_document_problems_and_missing_sections(tmp_path: Path) -> None:
    document = read_config_bytes("base: m\nbase: n\n", source="dup.yaml")
    assert document.data == {"base": "n"}
    assert [(i.line, i.kind) for i in document.problems] == [(2, "duplicate")]
    with pytest.raises(ConfigError, match="duplicate key 'base'"):
        document.validate(SoupConfig)
    with pytest.raises(ConfigError, match=r"section 'trainer\.rollout' is missing"):
        read_config_bytes("trainer: {lr: 1}\n").section("trainer.rollout")
    with pytest.raises(ConfigError, match="invalid YAML"):
        read_config_bytes("a: [\n")
    with pytest.raises(ConfigError, match=r"unsupported file type \.ini"):
        read_config(write(tmp_path, "c.ini", "a=1"))
    assert document.position(("base",)) == (2, 7)
    assert document.key_position(("base",)) == (2, 1)
    assert document.position(("base", "deeper")) == (2, 1)  # the nearest key the file has


def test_toml_arrays_of_tables_are_indexed(tmp_path: Path) -> None:
    text = (
        'base_model = "m"\n'
        "[[datasets]]\n"
        'path = "a.jsonl"\n'
        "[[datasets]]\n"
        'path = "b.jsonl"\n'
        'type = "sharegpt"\n'
    )
    document = read_config(write(tmp_path, "axolotl.toml", text))
    assert issues_of(document, AxolotlInputConfig) == [
        (
            6,
            8,
            "datasets[1].type",
            "value",
            "Input should be 'chat_template' or 'alpaca' (got 'sharegpt')",
        )
    ]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize(
    ("key", "location", "needle"),
    [
        ("rollout_fun\\ud800", "training.rollout_fun\ud800", "'rollout_func'"),
        ("sp\\udce9ed", "training.sp\udce9ed", "'sp\\udce9ed'"),
    ],
)
def test_a_key_holding_a_lone_surrogate_is_placed_at_its_line(
    fmt: str, key: str, location: str, needle: str
) -> None:
    """pydantic writes such a key with U+FFFD in its place, or (under ``extra="forbid"``)
    refuses it as no str at the model: the issue is at the key's own line, once."""
    if fmt == "yaml":
        text = f'training:\n  epochs: 2\n  "{key}": 1\n'
    else:
        text = f'{{"training": {{\n  "epochs": 2,\n  "{key}": 1}}}}'
    document = read_config_bytes(text, format=fmt, source=f"c.{fmt}")
    ((line, col, where, _, message),) = issues_of(document, TrainingConfig, under="training")
    assert (line, col, where) == (3, 3, location)
    assert re.search(facts(needle), message)
