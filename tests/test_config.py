"""The pydantic models: annotated types, RolloutSettings rules, look-alike keys."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, PrivateAttr, TypeAdapter, ValidationError

import agent_rollout
from agent_rollout._limits import MAX_ROLLOUT_FUNC_LEN, MAX_ROLLOUT_STEPS
from agent_rollout.backends import BACKEND_NAMES, validate_rollout_backend, validate_rollout_func
from agent_rollout.config import (
    ROLLOUT_KEYS,
    RolloutArguments,
    RolloutBackend,
    RolloutFields,
    RolloutFunc,
    RolloutSettings,
    load_config,
    lookalike_key,
    nearest_key,
)
from support import facts

BACKEND = TypeAdapter(RolloutBackend)
FUNC = TypeAdapter(RolloutFunc)


def errors_of(data: Any) -> list[tuple[tuple[Any, ...], str]]:
    with pytest.raises(ValidationError) as caught:
        RolloutSettings.model_validate(data)
    return [(tuple(error["loc"]), error["msg"]) for error in caught.value.errors()]


def only_message(data: Any) -> str:
    errors = errors_of(data)
    assert len(errors) == 1, errors
    return errors[0][1]


# ------------------------------------------------------------ RolloutBackend


@pytest.mark.parametrize("name", ["art", "ART", "Ruler", "NEMO_GYM", "OpenEnv"])
def test_backend_type_folds_case_to_canonical(name: str) -> None:
    assert BACKEND.validate_python(name) == name.lower()


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (True, "must be a string, got bool"),
        (3, "must be a string, got int"),
        ("", "non-empty"),
        ("art\x00", "null bytes"),
        ("x" * 33, "exceeds 32 chars"),
        ("verl", "'verl' is not supported; valid: art, nemo_gym, openenv, ruler"),
    ],
)
def test_backend_type_errors_keep_the_facts(value: object, needle: str) -> None:
    with pytest.raises(ValidationError) as caught:
        BACKEND.validate_python(value)
    assert needle in caught.value.errors()[0]["msg"]


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("open_env", "openenv"),  # a spelling check --fix also rewrites
        ("Nemo-Gym", "nemo_gym"),
        ("opnenv", "openenv"),  # close, no fix: only the hint
        ("rular", "ruler"),
        ("verl", None),
        ("bogus", None),
    ],
)
def test_backend_errors_say_which_name_was_meant(value: str, meant: Optional[str]) -> None:
    from agent_rollout.config import check_bytes

    with pytest.raises(ValueError) as caught:
        validate_rollout_backend(value)
    hint = f"; did you mean {meant!r}?"
    assert str(caught.value).endswith(hint) if meant else "did you mean" not in str(caught.value)
    # The same words where the loader and check place it (the language server's too).
    [issue] = check_bytes(f"training:\n  rollout_backend: {value}\n").issues
    assert issue.message == str(caught.value)


@given(st.one_of(st.text(max_size=40), st.sampled_from(BACKEND_NAMES).map(str.upper)))
def test_backend_type_accepts_exactly_what_the_function_accepts(value: str) -> None:
    try:
        expected: Optional[str] = validate_rollout_backend(value)
    except ValueError:
        expected = None
    try:
        got: Optional[str] = BACKEND.validate_python(value)
    except ValidationError:
        got = None
    assert got == expected


def test_backend_type_json_schema_has_enum_description_examples() -> None:
    schema = BACKEND.json_schema()
    names, any_case = schema["anyOf"]
    assert names["enum"] == list(BACKEND_NAMES)
    assert len(names["markdownEnumDescriptions"]) == len(BACKEND_NAMES)
    assert len(names["enumDescriptions"]) == len(BACKEND_NAMES)
    for name in BACKEND_NAMES:  # the schema reads case as the loader does
        for spelling in (name, name.upper(), name.title()):
            assert re.fullmatch(any_case["pattern"].strip("^$"), spelling)
    assert not re.search(any_case["pattern"], "verl")
    assert schema["description"] and "Example" in schema["markdownDescription"]
    assert set(schema["examples"]) <= set(BACKEND_NAMES)


# ------------------------------------------------------------ RolloutFunc


@given(st.text(alphabet="ab_.:1\n", max_size=12))
def test_func_type_accepts_exactly_what_the_function_accepts(value: str) -> None:
    try:
        expected = validate_rollout_func(value)
    except ValueError:
        expected = None
    try:
        got: Optional[str] = FUNC.validate_python(value)
    except ValidationError:
        got = None
    assert got == expected


def test_func_type_refuses_trailing_newline_and_keeps_value_in_message() -> None:
    with pytest.raises(ValidationError) as caught:
        FUNC.validate_python("pkg.mod:fn\n")
    assert "'pkg.mod:fn\\n' must match 'module.path:function_name'" in str(caught.value)


def test_func_type_json_schema_pattern_and_message() -> None:
    schema = FUNC.json_schema()
    assert schema["pattern"].startswith("^") and schema["pattern"].endswith("$")
    assert schema["maxLength"] == MAX_ROLLOUT_FUNC_LEN
    assert "module.path:function_name" in schema["patternErrorMessage"]
    assert schema["examples"] and schema["description"]


def test_trainer_models_embed_the_types_and_get_located_errors() -> None:
    class TrainerConfig(BaseModel):
        backend: RolloutBackend
        func: Optional[RolloutFunc] = None
        rollout: RolloutSettings = RolloutSettings()

    config = TrainerConfig.model_validate({"backend": "ART", "func": "m:f"})
    assert config.backend == "art"
    with pytest.raises(ValidationError) as caught:
        TrainerConfig.model_validate(
            {"backend": "nope", "rollout": {"rollout_backend": "art", "rollout_max_steps": 0}}
        )
    locs = {tuple(error["loc"]) for error in caught.value.errors()}
    assert locs == {("backend",), ("rollout", "rollout_max_steps")}
    # art without rollout_func or rollout_source is incomplete, not wrong: a warning.
    nested = TrainerConfig.model_validate({"backend": "art", "rollout": {"rollout_backend": "art"}})
    assert [w.key for w in nested.rollout.rollout_warnings] == ["rollout_func"]


def test_public_names_are_importable_from_config() -> None:
    from agent_rollout import config

    for name in ("RolloutSettings", "RolloutBackend", "RolloutFunc", "load_config", "ConfigError"):
        assert hasattr(config, name)
    assert issubclass(config.ConfigError, ValueError)


# ------------------------------------------------------------ RolloutSettings


def test_defaults_mean_no_rollout() -> None:
    settings = RolloutSettings()
    assert settings.rollout_backend is None
    assert settings.rollout_max_steps == 64
    assert settings.rollout_group_size == 4
    with pytest.raises(ValueError, match="rollout_backend is not set"):
        settings.to_launch_kwargs()


def test_trainer_keys_are_ignored() -> None:
    settings = RolloutSettings.model_validate(
        {"learning_rate": 1e-5, "rollouts": 3, "epochs": 2, "rollout_backend": "nemo_gym"}
    )
    assert settings.rollout_backend == "nemo_gym"


@pytest.mark.parametrize("steps", [1, 64, MAX_ROLLOUT_STEPS])
def test_max_steps_in_range(steps: int) -> None:
    assert RolloutSettings(rollout_max_steps=steps).rollout_max_steps == steps


@pytest.mark.parametrize("steps", [0, MAX_ROLLOUT_STEPS + 1, True, 5.5, "5 ", "05", "0", 1e300])
def test_max_steps_strict_int(steps: object) -> None:
    errors = errors_of({"rollout_max_steps": steps})
    assert [loc for loc, _ in errors] == [("rollout_max_steps",)]


@pytest.mark.parametrize("size", [0, 1025, False, 2.5, "+4", "1025", 1025.0])
def test_group_size_strict_int_in_range(size: object) -> None:
    errors = errors_of(
        {"rollout_backend": "art", "rollout_func": "m:f", "rollout_group_size": size}
    )
    assert [loc for loc, _ in errors] == [("rollout_group_size",)]


@pytest.mark.parametrize(
    ("key", "value"),
    [("rollout_max_steps", 5.0), ("rollout_group_size", 2.0), ("rollout_gym_head_port", 11500.0)],
)
def test_integral_floats_are_the_ints_they_are(key: str, value: float) -> None:
    # As JSON Schema's "integer" reads them (and pydantic hosts): 5.0 is 5, an int out.
    section = {"rollout_backend": "nemo_gym", key: value}
    if key != "rollout_max_steps":
        live = {"rollout_gym_config": "g.yaml", "rollout_policy_model": "p"}
        section.update(live, rollout_policy_base_url="http://h")
    settings = RolloutSettings.model_validate(section)
    assert getattr(settings, key) == int(value) and type(getattr(settings, key)) is int
    assert only_message({**section, key: 2.5}) == f"{key} must be an int, got float 2.5"


def test_openenv_without_rollout_func_loads_with_a_warning() -> None:
    # The seed's config rules accept it (its launch refuses it at run time), and
    # launch_rollout(rollout_func=callable) can complete it: a warning, not an error.
    settings = RolloutSettings.model_validate({"rollout_backend": "openenv"})
    assert [str(w) for w in settings.rollout_warnings] == [
        "rollout_func: rollout_func is not set: the built-in 'openenv' adapter needs it "
        "(launch_rollout(rollout_func=...) may pass it at run time)"
    ]


HINT = "(a runner registered with register_rollout_runner may not)"


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        (
            {"rollout_backend": "art"},
            [
                (
                    "rollout_func",
                    "neither rollout_func nor rollout_source is set: the built-in 'art' "
                    f"adapter needs one of them {HINT}",
                )
            ],
        ),
        (
            {"rollout_backend": "ruler", "rollout_judge_model": "j"},
            [
                (
                    "rollout_func",
                    f"rollout_func is not set: the built-in 'ruler' adapter needs it {HINT}",
                )
            ],
        ),
        (
            {"rollout_backend": "Ruler"},
            [
                (
                    "rollout_func",
                    f"rollout_func is not set: the built-in 'ruler' adapter needs it {HINT}",
                ),
                (
                    "rollout_judge_model",
                    f"rollout_judge_model is not set: the built-in 'ruler' adapter needs it {HINT}",
                ),
            ],
        ),
        ({"rollout_backend": "nemo_gym"}, []),
        ({"rollout_backend": "art", "rollout_source": "t.jsonl"}, []),
        ({"rollout_backend": "ruler", "rollout_func": "m:f", "rollout_judge_model": "j"}, []),
        ({}, []),
    ],
)
def test_incomplete_configs_load_with_warnings(section: Any, expected: Any) -> None:
    settings = RolloutSettings.model_validate(section)
    assert [(w.key, w.message) for w in settings.rollout_warnings] == expected
    assert [str(w) for w in settings.rollout_warnings] == [f"{k}: {m}" for k, m in expected]


@pytest.mark.parametrize(
    "section",
    [
        # What the seed (soup-cli's TrainingConfig and SoupConfig rules) accepts.
        {},
        {"rollout_backend": "art"},
        {"rollout_backend": "ruler"},
        {"rollout_backend": "nemo_gym"},
        {"rollout_backend": "openenv", "rollout_func": "pkg.mod:fn"},
        {"rollout_backend": None},
        {"rollout_backend": None, "rollout_func": None},
    ],
)
def test_every_config_the_seed_accepts_validates(section: Any) -> None:
    RolloutSettings.model_validate({"learning_rate": 1e-5, **section})


def test_art_takes_exactly_one_of_func_and_source() -> None:
    both = {"rollout_backend": "art", "rollout_func": "m:f", "rollout_source": "t.jsonl"}
    assert errors_of(both) == [
        (
            ("rollout_source",),
            "set only one of rollout_func and rollout_source when rollout_backend is 'art'",
        )
    ]
    from_file = RolloutSettings(rollout_backend="art", rollout_source="t.jsonl")
    assert from_file.to_launch_kwargs()["options"] == {"group_size": 4, "source": "t.jsonl"}


def test_func_needs_a_func_backend() -> None:
    message = only_message({"rollout_backend": "nemo_gym", "rollout_func": "m:f"})
    assert message == (
        "rollout_func needs rollout_backend 'art' or 'openenv' or 'ruler', "
        "but rollout_backend is 'nemo_gym'"
    )
    assert "rollout_backend is not set" in only_message({"rollout_func": "m:f"})


# ------------------------------------------------------------ defaults count as unset


@pytest.mark.parametrize("backend", BACKEND_NAMES)
def test_a_dump_of_a_valid_config_validates_again(backend: str) -> None:
    # The issue's example: the dump writes rollout_group_size: 4 back, which is no key
    # the user set, so openenv (and no backend at all) do not refuse it.
    section: dict[str, Any] = {"rollout_backend": backend}
    if backend in ("art", "openenv", "ruler"):
        section["rollout_func"] = "a.b:c"
    settings = RolloutSettings.model_validate(section)
    dumped = settings.model_dump()
    assert dumped["rollout_group_size"] == 4
    assert RolloutSettings.model_validate(dumped) == settings
    assert RolloutSettings.model_validate(RolloutSettings().model_dump()) == RolloutSettings()


@pytest.mark.parametrize("value", [5, 1, 1024, 4.5, True])
def test_a_group_size_the_user_set_is_still_a_key_of_another_backend(value: object) -> None:
    errors = errors_of(
        {"rollout_backend": "openenv", "rollout_func": "m:f", "rollout_group_size": value}
    )
    if isinstance(value, bool) or isinstance(value, float):
        assert [loc for loc, _ in errors] == [("rollout_group_size",)] * 2  # type and rule
    else:
        assert errors == [
            (
                ("rollout_group_size",),
                "rollout_group_size needs rollout_backend 'art' or 'ruler' or 'nemo_gym', "
                "but rollout_backend is 'openenv'",
            )
        ]
    # Its default is unset: written back by a dump or copied by a host, it is not refused.
    for default in (4, 4.0):
        RolloutSettings.model_validate(
            {"rollout_backend": "openenv", "rollout_func": "m:f", "rollout_group_size": default}
        )
    # nemo_gym without live mode: the default is left out of the launch options too.
    gym = RolloutSettings.model_validate({"rollout_backend": "nemo_gym", "rollout_group_size": 4})
    assert gym.to_launch_kwargs()["options"] == {}


# ------------------------------------------------------------ the policy pair, the head port


@pytest.mark.parametrize("backend", ["art", "ruler", "ART"])
@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ("rollout_policy_model", "rollout_policy_base_url"),
        ("rollout_policy_base_url", "rollout_policy_model"),
    ],
)
def test_a_half_set_policy_pair_is_refused(backend: str, given: str, missing: str) -> None:
    value = "http://127.0.0.1:8000/v1" if given.endswith("url") else "Qwen/Qwen2.5-0.5B-Instruct"
    section = {"rollout_backend": backend, "rollout_func": "m:f", given: value}
    if backend.lower() == "ruler":
        section["rollout_judge_model"] = "j"
    assert errors_of(section) == [
        (
            (given,),
            f"{given} needs {missing} when rollout_backend is '{backend.lower()}' "
            "(set both or neither)",
        )
    ]
    whole = {**section, missing: "http://127.0.0.1:8000/v1" if missing.endswith("url") else "m"}
    options = RolloutSettings.model_validate(whole).to_launch_kwargs()["options"]
    assert {options["policy_model"], options["policy_base_url"]} == {
        whole["rollout_policy_model"],
        whole["rollout_policy_base_url"],
    }


def test_nemo_gym_live_keeps_its_own_wording_for_the_policy_pair() -> None:
    live = {"rollout_backend": "nemo_gym", "rollout_gym_config": "g.yaml"}
    assert errors_of({**live, "rollout_policy_model": "m"}) == [
        (
            ("rollout_policy_base_url",),
            "rollout_policy_base_url is required when rollout_gym_config is set",
        )
    ]


def test_gym_head_port_is_a_live_nemo_gym_port() -> None:
    live = {
        "rollout_backend": "nemo_gym",
        "rollout_gym_config": "g.yaml",
        "rollout_policy_model": "p",
        "rollout_policy_base_url": "http://127.0.0.1:8000/v1",
    }
    settings = RolloutSettings.model_validate({**live, "rollout_gym_head_port": 11500})
    assert settings.to_launch_kwargs()["options"]["gym_head_port"] == 11500
    assert (
        RolloutSettings.model_validate(live).to_launch_kwargs()["options"].get("gym_head_port")
        is None
    )
    for port, message in (
        (0, "rollout_gym_head_port must be in [1, 65535], got 0"),
        (65536, "rollout_gym_head_port must be in [1, 65535], got 65536"),
        ("11500 ", "rollout_gym_head_port must be an int, got str '11500 '"),
        (True, "rollout_gym_head_port must be an int, got bool True"),
    ):
        assert only_message({**live, "rollout_gym_head_port": port}) == message
    assert only_message({"rollout_backend": "nemo_gym", "rollout_gym_head_port": 11500}) == (
        "rollout_gym_head_port needs rollout_gym_config when rollout_backend is 'nemo_gym'"
    )
    assert only_message(
        {"rollout_backend": "art", "rollout_func": "m:f", "rollout_gym_head_port": 11500}
    ) == ("rollout_gym_head_port needs rollout_backend 'nemo_gym', but rollout_backend is 'art'")


def test_judge_keys_are_ruler_only() -> None:
    for key, value in (("rollout_judge_model", "j"), ("rollout_judge_base_url", "http://h")):
        message = only_message({"rollout_backend": "art", "rollout_func": "m:f", key: value})
        assert message == f"{key} needs rollout_backend 'ruler', but rollout_backend is 'art'"


def test_source_is_art_or_nemo_gym_only_and_options_need_a_backend() -> None:
    assert RolloutSettings(rollout_backend="nemo_gym", rollout_source="d.jsonl").rollout_source
    assert "rollout_source needs rollout_backend 'art' or 'nemo_gym'" in only_message(
        {"rollout_backend": "openenv", "rollout_func": "m:f", "rollout_source": "d.jsonl"}
    )
    errors = errors_of({"rollout_group_size": 8, "rollout_judge_model": "j"})
    assert {loc for loc, _ in errors} == {("rollout_group_size",), ("rollout_judge_model",)}
    assert all("rollout_backend is not set" in message for _, message in errors)


def test_null_options_count_as_unset() -> None:
    settings = RolloutSettings.model_validate(
        {"rollout_backend": "nemo_gym", "rollout_func": None, "rollout_judge_model": None}
    )
    assert settings.rollout_func is None


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("rollout_judge_model", "", "non-empty"),
        ("rollout_judge_model", "a\x00b", "null bytes"),
        ("rollout_judge_model", "m" * 201, "<= 200 chars, got 201"),
        ("rollout_judge_model", 7, "must be a string, got int"),
        ("rollout_judge_base_url", "ftp://host", "'ftp://host' must be an http:// or https://"),
        ("rollout_judge_base_url", "http://", "must be an http"),
        ("rollout_judge_base_url", "http://a b", "must be an http"),
        ("rollout_judge_base_url", "http://h/\n", "must be an http"),
    ],
)
def test_text_option_errors(key: str, value: object, needle: str) -> None:
    data = {"rollout_backend": "ruler", "rollout_func": "m:f", "rollout_judge_model": "j"}
    data[key] = value
    assert needle in only_message(data)


# What argv gives for ``$'\xe9t\xe9.jsonl'`` (bytes that are not UTF-8, surrogateescape).
LATIN1_NAME = b"\xe9t\xe9.jsonl".decode("utf-8", "surrogateescape")
SURROGATE_VALUES = {
    "rollout_judge_model": "judge\ud800",
    "rollout_judge_base_url": "http://h/\udce9",
    "rollout_policy_model": "\udfffpolicy",
    "rollout_policy_base_url": "https://h\udce9/v1",
    "rollout_source": LATIN1_NAME,
    "rollout_gym_config": "a.yaml,\udce9.yaml",
}


def sections_holding(key: str, value: str) -> dict[str, Any]:
    """A section that is valid but for ``key``'s value."""
    if key in ("rollout_judge_model", "rollout_judge_base_url"):
        section = {"rollout_backend": "ruler", "rollout_func": "m:f", "rollout_judge_model": "j"}
    elif key.startswith("rollout_policy"):
        section = {"rollout_backend": "art", "rollout_func": "m:f"}
        section.update(rollout_policy_model="p", rollout_policy_base_url="http://h/v1")
    else:
        section = {"rollout_backend": "nemo_gym", "rollout_source": "s.jsonl"}
        if key == "rollout_gym_config":
            section.update(rollout_policy_model="p", rollout_policy_base_url="http://h/v1")
    return {**section, key: value}


class HostWithOurFields(RolloutFields):
    """A trainer's own model with our keys mixed in."""

    learning_rate: float = 1e-6


@pytest.mark.parametrize("key", sorted(SURROGATE_VALUES))
def test_a_text_value_utf8_cannot_encode_is_refused_by_every_reader(key: str) -> None:
    """A valid model's JSON dump never fails: such a value is refused where it comes in."""
    section = sections_holding(key, SURROGATE_VALUES[key])
    RolloutSettings.model_validate(sections_holding(key, "x" if "url" not in key else "http://h"))
    readers = (
        RolloutSettings.model_validate,
        HostWithOurFields.model_validate,
        RolloutSettings.from_section,
        HostWithOurFields.from_section,
        lambda data: RolloutSettings.from_section(RolloutArguments(**data)),
    )
    for read in readers:
        with pytest.raises(ValidationError) as caught:
            read(section)
        (error,) = caught.value.errors()
        assert (error["loc"], error["type"]) == ((key,), key)
        point = next(f"U+{ord(c):04X}" for c in SURROGATE_VALUES[key] if "\ud800" <= c <= "\udfff")
        assert re.search(facts(key, point), error["msg"])


def test_every_valid_text_value_dumps_as_json() -> None:
    for key in SURROGATE_VALUES:
        fine = "p\u00e9\U0001f600" if "url" not in key else "http://h/\u00e9"
        settings = RolloutSettings.model_validate(sections_holding(key, fine))
        assert RolloutSettings.model_validate_json(settings.model_dump_json()) == settings


def test_url_accepts_http_and_https_with_paths() -> None:
    for url in ("http://127.0.0.1:8000/v1", "https://judge.example/v1?x=1#f"):
        settings = RolloutSettings(
            rollout_backend="ruler",
            rollout_func="m:f",
            rollout_judge_model="j",
            rollout_judge_base_url=url,
        )
        assert settings.rollout_judge_base_url == url


def test_all_errors_are_reported_together() -> None:
    errors = errors_of(
        {
            "rollout_backend": "openenv",
            "rollout_fucn": "m:f",
            "rollout_max_steps": -1,
            "rollout_source": "x",
        }
    )
    assert {loc for loc, _ in errors} == {
        ("rollout_fucn",),
        ("rollout_max_steps",),
        ("rollout_source",),
    }


def test_bad_backend_skips_rules_that_need_it() -> None:
    errors = errors_of({"rollout_backend": "verl", "rollout_func": "m:f"})
    assert [loc for loc, _ in errors] == [("rollout_backend",)]


def test_messages_with_braces_are_not_formatted() -> None:
    assert "'{x}' is not supported" in only_message({"rollout_backend": "{x}"})


# ------------------------------------------------------------ look-alike keys


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("rollout_fucn", "rollout_func"),
        ("rollout-backend", "rollout_backend"),
        ("Rollout_Max_Steps", "rollout_max_steps"),
        ("ROLLOUT_GROUP_SIZ", "rollout_group_size"),
        ("rolloutbackend", "rollout_backend"),
        ("rolout_func", "rollout_func"),
        ("rolout_backend", "rollout_backend"),
        ("rollout_backed", "rollout_backend"),
        ("rollout_judge_modle", "rollout_judge_model"),
        ("rollout_sauce", "rollout_source"),
        ("rollout-max-step", "rollout_max_steps"),
    ],
)
def test_lookalike_keys_are_errors_with_a_suggestion(key: str, suggestion: str) -> None:
    assert lookalike_key(key)
    assert nearest_key(key) == suggestion
    assert only_message({key: 1}) == f"unknown key {key!r}; did you mean {suggestion!r}?"


@pytest.mark.parametrize(
    "key",
    [
        "rollouts",
        "rollout",
        "learning_rate",
        "max_steps",
        "source",
        "rollout\nfunc",
        3,
        # Other trainers' rollout keys (OpenRLHF, verl): not typos of ours.
        "rollout_batch_size",
        "rollout_n",
        "rollout_",
        "ROLLOUT_GROUP",
        "rollout_temperature",
    ],
)
def test_keys_that_do_not_look_like_ours_are_left_alone(key: object) -> None:
    assert not lookalike_key(key)
    RolloutSettings.model_validate({key: 1})


def test_every_valid_key_is_not_a_lookalike() -> None:
    assert not any(lookalike_key(key) for key in ROLLOUT_KEYS)


# ------------------------------------------------------------ launch kwargs


def test_to_launch_kwargs_carries_only_the_backend_options() -> None:
    ruler = RolloutSettings(
        rollout_backend="RULER",
        rollout_func="m:f",
        rollout_max_steps=9,
        rollout_group_size=6,
        rollout_judge_model="judge",
    )
    assert ruler.to_launch_kwargs() == {
        "name": "ruler",
        "rollout_func": "m:f",
        "max_steps": 9,
        "options": {"group_size": 6, "judge_model": "judge"},
    }
    gym = RolloutSettings(rollout_backend="nemo_gym", rollout_source="d.jsonl")
    assert gym.to_launch_kwargs()["options"] == {"source": "d.jsonl"}
    openenv = RolloutSettings(rollout_backend="openenv", rollout_func="m:f")
    assert openenv.to_launch_kwargs()["options"] == {}


def test_launch_kwargs_drive_the_real_launch(tmp_path: Path, monkeypatch: Any) -> None:
    module = tmp_path / "cfg_rollout_mod.py"
    module.write_text(
        "def rollout(prompts):\n    return [{'prompt': p, 'answer': p.upper()} for p in prompts]\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    settings = RolloutSettings(rollout_backend="openenv", rollout_func="cfg_rollout_mod:rollout")
    result = agent_rollout.launch_rollout(prompts=["hi", "yo"], **settings.to_launch_kwargs())
    assert result.backend == "openenv"
    assert [row["answer"] for row in result.rows] == ["HI", "YO"]
    sys.modules.pop("cfg_rollout_mod", None)


@pytest.mark.parametrize(
    ("section", "missing"),
    [
        ({"rollout_backend": "art"}, "rollout_func"),
        ({"rollout_backend": "ruler"}, "rollout_judge_model"),
        ({"rollout_backend": "ruler", "rollout_func": "m:f"}, "rollout_judge_model"),
    ],
)
def test_launch_refuses_at_run_time_what_a_warned_config_cannot_run(
    section: dict[str, Any], missing: str
) -> None:
    # A warning at load time; with no runner registered, the launch names the key.
    pytest.importorskip("art")  # the built-in adapters need openpipe-art
    settings = RolloutSettings.model_validate(section)
    assert settings.rollout_warnings
    with pytest.raises(ValueError, match=f"requires training.{missing}"):
        agent_rollout.launch_rollout(prompts=["p"], **settings.to_launch_kwargs())


def test_a_registered_runner_completes_a_warned_config() -> None:
    settings = RolloutSettings.model_validate({"rollout_backend": "art"})
    seen: dict[str, Any] = {}

    def runner(**kwargs: Any) -> list[dict[str, str]]:
        seen.update(kwargs)
        return [{"prompt": p} for p in kwargs["prompts"]]

    agent_rollout.register_rollout_runner("art", runner)
    try:
        result = agent_rollout.launch_rollout(prompts=["p"], **settings.to_launch_kwargs())
    finally:
        agent_rollout.unregister_rollout_runner("art")
    assert result.rows == ({"prompt": "p"},)
    assert seen["rollout_func"] is None and seen["options"] == {"group_size": 4}


def test_known_keys_given_as_one_string_is_one_key() -> None:
    # A str is an Iterable[str] of its characters: "rollout_sauce" must not
    # become {"r", "o", ...} and leave the host's key flagged.
    from agent_rollout.config import RolloutSettings, check_bytes, load_config_bytes

    text = "training:\n  rollout_backend: nemo_gym\n  rollout_sauce: 1\n"
    assert check_bytes(text, known_keys="rollout_sauce").issues == []
    assert load_config_bytes(text, known_keys="rollout_sauce").rollout_backend == "nemo_gym"
    section = {"rollout_backend": "nemo_gym", "rollout_sauce": 1}
    assert RolloutSettings.from_section(section, known_keys="rollout_sauce").rollout_backend
    assert RolloutSettings.model_validate(section, context={"known_keys": "rollout_sauce"})
    # Still flagged when not declared.
    assert [i.kind for i in check_bytes(text).issues] == ["unknown_key"]


def test_settings_compare_by_value_not_by_their_warnings(tmp_path):
    # Two files that run the same way: the quoted number is read as the number,
    # with a warning the other file does not have. The settings decide equality.
    quoted, plain = tmp_path / "quoted.yaml", tmp_path / "plain.yaml"
    quoted.write_text('training:\n  rollout_backend: art\n  rollout_max_steps: "8"\n')
    plain.write_text("training:\n  rollout_backend: art\n  rollout_max_steps: 8\n")
    first, second = load_config(str(quoted)), load_config(str(plain))
    assert first.rollout_warnings != second.rollout_warnings
    assert first == second and hash(first) == hash(second)
    assert first != load_config(str(plain)).model_copy(update={"rollout_max_steps": 9})


def test_a_hosts_own_private_attributes_still_count():
    class Host(RolloutFields):
        learning_rate: float = 0.1
        _seen: int = PrivateAttr(default=0)

    one, two = Host(), Host()
    assert one == two
    two._seen = 1
    assert one != two
    assert Host(learning_rate=0.2) != Host()
    with pytest.raises(TypeError):
        hash(one)  # not frozen: unhashable, as pydantic has it
