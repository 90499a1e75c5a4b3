"""Embedding our keys in another trainer's pydantic model, without side effects.

Two patterns, as docs/config.md describes them:
- mixin: the host's flat section model inherits ``RolloutFields`` (axolotl
  composes its config from mixins this way);
- nested field: the host holds a ``RolloutSettings`` under a key of its own.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_rollout.config import ROLLOUT_KEYS, RolloutFields, RolloutSettings

# ------------------------------------------------------------ host models


class ModelInputConfig(BaseModel):
    """Like axolotl's mixins: each contributes some fields of the flat config."""

    base_model: str
    tokenizer_config: Optional[str] = None


class TrainingMixin(BaseModel):
    learning_rate: float = 1e-5
    micro_batch_size: int = 1
    # A key of the host's own that is two edits from one of ours.
    rollout_sources: Optional[list[str]] = None


class AxolotlStyleConfig(ModelInputConfig, TrainingMixin, RolloutFields):
    """The composed model: the host's title, its own extra policy, not frozen."""

    model_config = ConfigDict(title="AxolotlInputConfig", extra="allow")


class StrictHost(RolloutFields):
    model_config = ConfigDict(extra="forbid", title="StrictHost", frozen=False)

    learning_rate: float = 1e-5


class FrozenHost(RolloutFields):
    model_config = ConfigDict(frozen=True, extra="ignore")

    epochs: int = 1


class NestedHost(BaseModel):
    model_config = ConfigDict(extra="forbid", title="NestedHost")

    learning_rate: float = 1e-5
    agent: RolloutSettings = Field(default_factory=RolloutSettings)


def errors_of(model: type[BaseModel], data: Any) -> list[tuple[tuple[Any, ...], str, str]]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return [(tuple(e["loc"]), e["type"], e["msg"]) for e in caught.value.errors()]


# ------------------------------------------------------------ no side effects


def test_the_host_keeps_its_config() -> None:
    assert AxolotlStyleConfig.model_config.get("frozen") in (None, False)
    assert AxolotlStyleConfig.model_config["title"] == "AxolotlInputConfig"
    assert AxolotlStyleConfig.model_config["extra"] == "allow"
    assert StrictHost.model_config["extra"] == "forbid"
    assert FrozenHost.model_config["frozen"] is True
    # Nothing leaks back into our own models either.
    assert RolloutFields.model_config.get("frozen") is None
    assert RolloutSettings.model_config["frozen"] is True


def test_the_host_schema_is_the_hosts() -> None:
    schema = AxolotlStyleConfig.model_json_schema()
    assert schema["title"] == "AxolotlInputConfig"
    assert "propertyNames" not in schema and "allOf" not in schema
    assert {"base_model", "learning_rate", *ROLLOUT_KEYS} <= set(schema["properties"])
    assert StrictHost.model_json_schema()["additionalProperties"] is False
    # RolloutSettings' own schema keeps the section rules.
    assert "propertyNames" in RolloutSettings.model_json_schema()
    nested = NestedHost.model_json_schema()
    assert nested["title"] == "NestedHost"


def test_a_mixed_in_host_stays_mutable_and_extra_allowed() -> None:
    config = AxolotlStyleConfig.model_validate(
        {"base_model": "m", "rollout_backend": "NeMo_Gym", "wandb_project": "p"}
    )
    config.learning_rate = 2e-5  # not frozen
    assert config.rollout_backend == "nemo_gym"
    assert config.model_extra == {"wandb_project": "p"}
    assert config.to_launch_kwargs()["name"] == "nemo_gym"
    frozen = FrozenHost.model_validate({"rollout_backend": "nemo_gym"})
    with pytest.raises(ValidationError):
        frozen.epochs = 3


# ------------------------------------------------------------ the host's keys


def test_host_fields_are_never_flagged() -> None:
    config = AxolotlStyleConfig.model_validate(
        {"base_model": "m", "rollout_backend": "nemo_gym", "rollout_sources": ["a.jsonl"]}
    )
    assert config.rollout_sources == ["a.jsonl"]
    # The same key, without the host declaring it, is a typo of rollout_source.
    errors = errors_of(RolloutSettings, {"rollout_sources": ["a.jsonl"]})
    assert errors == [
        (
            ("rollout_sources",),
            "rollout_unknown_key",
            "unknown key 'rollout_sources'; did you mean 'rollout_source'?",
        )
    ]


def test_known_keys_for_plain_validation() -> None:
    section = {"rollout_backend": "nemo_gym", "rollout_sources": ["a"]}
    settings = RolloutSettings.from_section(section, known_keys=["rollout_sources"])
    assert settings.rollout_backend == "nemo_gym"
    same = RolloutSettings.model_validate(section, context={"known_keys": {"rollout_sources"}})
    assert same == settings


# ------------------------------------------------------------ each typo once, our wording


def test_a_typo_is_reported_once_under_extra_forbid() -> None:
    errors = errors_of(StrictHost, {"rollout_backend": "art", "rollout_fucn": "m:f"})
    assert errors == [
        (
            ("rollout_fucn",),
            "rollout_unknown_key",
            "unknown key 'rollout_fucn'; did you mean 'rollout_func'?",
        )
    ]
    # A key that is neither ours nor a look-alike still meets the host's policy.
    assert [e[1] for e in errors_of(StrictHost, {"lr": 1})] == ["extra_forbidden"]


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"rollout_max_steps": "64 "}, "rollout_max_steps must be an int, got str '64 '"),
        ({"rollout_max_steps": 1.5}, "rollout_max_steps must be an int, got float 1.5"),
        ({"rollout_max_steps": 0}, "rollout_max_steps must be in [1, 100000], got 0"),
        (
            {"rollout_backend": "art", "rollout_group_size": 5000},
            "rollout_group_size must be in [1, 1024], got 5000",
        ),
        ({"rollout_backend": 3}, "rollout_backend must be a string, got int"),
        (
            {"rollout_backend": "verl"},
            "rollout_backend='verl' is not supported; valid: art, nemo_gym, openenv, ruler",
        ),
    ],
)
@pytest.mark.parametrize("model", [StrictHost, AxolotlStyleConfig, RolloutSettings])
def test_every_error_on_our_keys_uses_our_wording(
    model: type[BaseModel], section: dict[str, Any], message: str
) -> None:
    data = {"base_model": "m", **section} if model is AxolotlStyleConfig else section
    errors = errors_of(model, data)
    assert [msg for _, _, msg in errors] == [message]
    assert all(kind.startswith("rollout_") for _, kind, _ in errors)


def test_host_errors_keep_the_hosts_wording() -> None:
    errors = errors_of(AxolotlStyleConfig, {"base_model": 3, "rollout_max_steps": 0})
    by_key = {loc: (kind, msg) for loc, kind, msg in errors}
    assert by_key == {
        ("base_model",): ("string_type", "Input should be a valid string"),
        ("rollout_max_steps",): (
            "rollout_value",
            "rollout_max_steps must be in [1, 100000], got 0",
        ),
    }


# ------------------------------------------------------------ warnings and nesting


def test_warnings_reach_the_host_instance() -> None:
    config = AxolotlStyleConfig.model_validate({"base_model": "m", "rollout_backend": "ruler"})
    assert [w.key for w in config.rollout_warnings] == ["rollout_func", "rollout_judge_model"]
    nested = NestedHost.model_validate({"agent": {"rollout_backend": "art"}})
    assert [w.key for w in nested.agent.rollout_warnings] == ["rollout_func"]
    assert RolloutSettings().rollout_warnings == ()


def test_nested_field_pattern() -> None:
    errors = errors_of(
        NestedHost, {"learning_rate": 1, "agent": {"rollout_backend": "art", "rollout_fucn": 1}}
    )
    assert errors == [
        (
            ("agent", "rollout_fucn"),
            "rollout_unknown_key",
            "unknown key 'rollout_fucn'; did you mean 'rollout_func'?",
        )
    ]
    host = NestedHost.model_validate(
        {"agent": {"rollout_backend": "openenv", "rollout_func": "m:f"}}
    )
    assert host.agent.to_launch_kwargs()["rollout_func"] == "m:f"
    # The host's forbid policy is its own: our nested model ignores other keys.
    assert [e[1] for e in errors_of(NestedHost, {"x": 1})] == ["extra_forbidden"]


class AssigningHost(RolloutFields):
    """A host that validates assignments (pydantic's validate_assignment=True)."""

    model_config = ConfigDict(validate_assignment=True)
    learning_rate: float = 1e-5


def test_assignment_on_a_validating_host_keeps_our_rules_and_wording() -> None:
    host = AssigningHost.model_validate({"rollout_backend": "nemo_gym"})
    # A key of another backend: refused, in our words, and the host is unchanged.
    with pytest.raises(ValidationError) as caught:
        host.rollout_judge_model = "openai/o4-mini"
    assert [(e["loc"], e["msg"]) for e in caught.value.errors()] == [
        (
            ("rollout_judge_model",),
            "rollout_judge_model needs rollout_backend 'ruler', but rollout_backend is 'nemo_gym'",
        )
    ]
    assert host.rollout_judge_model is None
    assert "rollout_judge_model" not in host.model_fields_set
    # A wrong type reads in our words too (not "Input should be a valid integer").
    with pytest.raises(ValidationError) as caught:
        host.rollout_max_steps = "three"  # type: ignore[assignment]
    assert [e["msg"] for e in caught.value.errors()] == [
        "rollout_max_steps must be an int, got str 'three'"
    ]
    assert host.rollout_max_steps == 64
    # A good assignment goes through, and the warnings follow the new values.
    host.rollout_backend = "ruler"
    assert [w.key for w in host.rollout_warnings] == ["rollout_func", "rollout_judge_model"]
    host.rollout_judge_model = "openai/o4-mini"
    assert [w.key for w in host.rollout_warnings] == ["rollout_func"]
    host.learning_rate = 1e-4  # the host's own fields are its business
    assert host.learning_rate == 1e-4


def test_host_aliases_of_every_kind_are_the_hosts() -> None:
    from pydantic import AliasChoices, AliasPath

    class Host(RolloutFields):
        funcs: list[int] = Field(
            default_factory=list, validation_alias=AliasChoices("rollout_funcs", "funcs")
        )
        first_source: str = Field("", validation_alias=AliasPath("rollout_sources", 0))

    host = Host.model_validate({"rollout_funcs": [1], "rollout_sources": ["a"]})
    assert (host.funcs, host.first_source) == ([1], "a")
    # A real typo of ours is still one.
    assert [e[2] for e in errors_of(Host, {"rollout_fucn": "m:f"})] == [
        "unknown key 'rollout_fucn'; did you mean 'rollout_func'?"
    ]


def test_a_host_alias_generator_applies_to_our_keys_and_rules() -> None:
    class KebabHost(RolloutFields):
        model_config = ConfigDict(alias_generator=lambda name: name.replace("_", "-"))
        learning_rate: float = 1e-5

    config = KebabHost.model_validate({"rollout-backend": "ruler", "learning-rate": 1.0})
    assert config.rollout_backend == "ruler"
    assert [w.key for w in config.rollout_warnings] == ["rollout_func", "rollout_judge_model"]
    errors = errors_of(KebabHost, {"rollout-backend": "nemo_gym", "rollout-judge-model": "j"})
    assert [(loc, msg) for loc, _, msg in errors] == [
        (
            ("rollout-judge-model",),
            "rollout-judge-model needs rollout-backend 'ruler', but rollout-backend is 'nemo_gym'",
        )
    ]
