"""A valid config survives its own dump, for every backend and every kind of host.

For generated valid sections of every backend (and of none), for
``RolloutSettings`` and for hosts that mix in ``RolloutFields`` (a plain one,
one with ``extra="forbid"``, an axolotl-style composed model that is
validated again from ``model_dump(exclude_none=True)`` on each Ray worker,
and one holding ``RolloutSettings`` under a key of its own), each of

- ``model_validate(m.model_dump())``
- ``model_validate(m.model_dump(exclude_none=True))``
- ``model_validate(m.model_dump(exclude_defaults=True))``
- ``model_validate_json(m.model_dump_json())``

gives a model equal to ``m``, with the same warnings. The dump writes every
default back (``rollout_group_size: 4`` with ``openenv``): the cross-field
rules take a key at its default for unset, so it is not refused.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from agent_rollout.backends import BACKEND_NAMES
from agent_rollout.config import (
    MAX_GROUP_SIZE,
    MAX_PORT,
    ROLLOUT_KEYS,
    RolloutFields,
    RolloutSettings,
)

MANY = max(200, settings().max_examples)
POLICY = {
    "rollout_policy_model": "Qwen/Qwen2.5-0.5B-Instruct",
    "rollout_policy_base_url": "http://h/v1",
}


@st.composite
def valid_sections(draw: st.DrawFn) -> dict[str, Any]:
    """A section every rule accepts (warnings allowed), of one backend or of none."""
    backend: Optional[str] = draw(st.one_of(st.none(), st.sampled_from(BACKEND_NAMES)))
    section: dict[str, Any] = {}
    if draw(st.booleans()):
        section["rollout_max_steps"] = draw(
            st.one_of(st.integers(1, 100_000), st.sampled_from([1.0, 64.0, 100_000.0]))
        )
    if draw(st.booleans()):
        section["rollout_group_size"] = 4  # its default: unset for the rules, any backend
    if backend is None:
        if draw(st.booleans()):
            section["rollout_backend"] = None
        return section
    section["rollout_backend"] = draw(st.sampled_from([backend, backend.upper(), backend.title()]))
    group = st.integers(1, MAX_GROUP_SIZE)
    if backend in ("art", "ruler"):
        if backend == "art" and draw(st.booleans()):
            section["rollout_source"] = draw(st.sampled_from(["t.jsonl", "/srv/t.jsonl"]))
        elif draw(st.integers(0, 3)):
            section["rollout_func"] = draw(st.sampled_from(["m:f", "pkg.mod:play_episode"]))
        if draw(st.booleans()):
            section["rollout_group_size"] = draw(group)
        if draw(st.booleans()):
            section.update(POLICY)
    if backend == "ruler":
        if draw(st.integers(0, 3)):
            section["rollout_judge_model"] = "openai/o4-mini"
        if draw(st.booleans()):
            section["rollout_judge_base_url"] = "https://judge.example/v1"
    if backend == "openenv" and draw(st.integers(0, 3)):
        section["rollout_func"] = "m:f"
    if backend == "nemo_gym":
        if draw(st.booleans()):
            section["rollout_gym_config"] = draw(st.sampled_from(["g.yaml", "a.yaml,b.yaml"]))
            section.update(POLICY)
            if draw(st.booleans()):
                section["rollout_group_size"] = draw(group)
            if draw(st.booleans()):
                section["rollout_gym_head_port"] = draw(st.integers(1, MAX_PORT))
        elif draw(st.booleans()):
            section["rollout_source"] = "gym.jsonl"
    # Unset keys written as null (a dump with exclude_none=False does that too).
    for key in draw(st.lists(st.sampled_from(ROLLOUT_KEYS), max_size=3)):
        if key not in section and key not in ("rollout_max_steps", "rollout_group_size"):
            section[key] = None
    return section


class ModelInputConfig(BaseModel):
    base_model: str = "m"
    tokenizer_config: Optional[str] = None


class TrainingMixin(BaseModel):
    learning_rate: float = 1e-5
    micro_batch_size: int = 1
    rollout_sources: Optional[list[str]] = None  # a key of the host's, two edits from ours


class AxolotlStyleConfig(ModelInputConfig, TrainingMixin, RolloutFields):
    model_config = ConfigDict(title="AxolotlInputConfig", extra="allow")


class StrictHost(RolloutFields):
    model_config = ConfigDict(extra="forbid")
    learning_rate: float = 1e-5


class PlainHost(RolloutFields):
    epochs: int = 1


class NestedHost(BaseModel):
    model_config = ConfigDict(extra="forbid")
    learning_rate: float = 1e-5
    agent: RolloutSettings = Field(default_factory=RolloutSettings)


HOSTS: list[type[BaseModel]] = [RolloutSettings, PlainHost, StrictHost, AxolotlStyleConfig]


def round_trips(model: BaseModel) -> list[BaseModel]:
    kind = type(model)
    return [
        kind.model_validate(model.model_dump()),
        kind.model_validate(model.model_dump(exclude_none=True)),
        kind.model_validate(model.model_dump(exclude_defaults=True)),
        kind.model_validate_json(model.model_dump_json()),
    ]


def warnings_of(model: BaseModel) -> Any:
    inner = model.agent if isinstance(model, NestedHost) else model
    return inner.rollout_warnings  # type: ignore[attr-defined]


@pytest.mark.parametrize("host", HOSTS, ids=lambda host: host.__name__)
@given(section=valid_sections(), extra=st.booleans())
@settings(max_examples=MANY)
def test_every_valid_config_survives_its_dump(
    host: type[BaseModel], section: dict[str, Any], extra: bool
) -> None:
    data = dict(section)
    if extra and host is not StrictHost:
        data.update({"learning_rate": 2e-5, "wandb_project": "p"} if host is not PlainHost else {})
    model = host.model_validate(data)
    for again in round_trips(model):
        assert again == model
        assert warnings_of(again) == warnings_of(model)


@given(section=valid_sections())
@settings(max_examples=MANY)
def test_a_nested_host_survives_its_dump(section: dict[str, Any]) -> None:
    model = NestedHost.model_validate({"learning_rate": 1e-4, "agent": section})
    for again in round_trips(model):
        assert again == model
        assert warnings_of(again) == warnings_of(model)


@given(section=valid_sections())
@settings(max_examples=MANY)
def test_axolotl_revalidates_on_each_worker(section: dict[str, Any]) -> None:
    # axolotl validates the config, sends model_dump(exclude_none=True) to each Ray
    # worker and validates it there again: twice, three times, always the same config.
    config = AxolotlStyleConfig.model_validate({"base_model": "m", "rl": "grpo", **section})
    worker = AxolotlStyleConfig.model_validate(config.model_dump(exclude_none=True))
    second = AxolotlStyleConfig.model_validate(worker.model_dump(exclude_none=True))
    assert worker == config == second
    if config.rollout_backend is not None:
        assert worker.to_launch_kwargs() == config.to_launch_kwargs()


@pytest.mark.parametrize("host", HOSTS, ids=lambda host: host.__name__)
def test_a_config_with_no_rollout_key_survives_its_dump(host: type[BaseModel]) -> None:
    # The case: every axolotl config failed on the worker, rollout keys or not.
    model = host.model_validate({})
    assert all(again == model for again in round_trips(model))
    openenv = host.model_validate({"rollout_backend": "openenv", "rollout_func": "a.b:c"})
    assert all(again == openenv for again in round_trips(openenv))
