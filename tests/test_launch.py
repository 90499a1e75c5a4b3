"""``launch_rollout``, the runner registry and ``RolloutResult``."""

from __future__ import annotations

import dataclasses
import itertools
import re
import sys
import types
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_rollout import (
    MAX_ROWS_LIMIT,
    RolloutDrop,
    RolloutResult,
    RolloutRowError,
    launch_rollout,
    register_rollout_runner,
    unregister_rollout_runner,
)
from agent_rollout.backends.nemo_gym import GymRowError
from support import facts

VALID = ("art", "nemo_gym", "openenv", "ruler")
EXTERNAL = ("art", "nemo_gym", "ruler")
SPEC_FORM = "module.path:function_name"

ROLLOUT_SOURCE = """
CALLS = []

def rollout(prompts):
    CALLS.append(prompts)
    rows = [{"prompt": p, "answer": p.upper(), "reward": 1.0, "id": i}
            for i, p in enumerate(prompts)]
    return rows or [{"prompt": "no seeds"}]

def chat(prompts):
    for p in prompts:
        yield {"prompt": [{"role": "system", "content": "be brief"},
                          {"role": "user", "content": p, "meta": {"n": 1}}],
               "answer": None}

def returns_none(prompts):
    return None

def returns_empty(prompts):
    return []

def endless(prompts):
    for n in itertools.count():
        PULLED.append(n)
        yield {"prompt": f"p{n}"}

def explodes(prompts):
    raise RuntimeError("rollout blew up")

import itertools
PULLED = []
"""


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh rollout module (``ROLLOUT_SOURCE``) importable from ``tmp_path``."""
    name = f"rollout_mod_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(ROLLOUT_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def calls(mod: str) -> list[Any]:
    """What the module's ``rollout`` was called with (empty if never imported)."""
    module = sys.modules.get(mod)
    return [] if module is None else module.CALLS


# ---- openenv, end to end ----------------------------------------------------------


def test_openenv_end_to_end(engine: str, mod: str) -> None:
    result = launch_rollout("OpenEnv", prompts=["a", "b"], rollout_func=f"{mod}:rollout")
    assert isinstance(result, RolloutResult)
    assert result.backend == "openenv"
    assert result.rows == ({"prompt": "a", "answer": "A"}, {"prompt": "b", "answer": "B"})
    assert isinstance(result.rows, tuple)
    assert calls(mod) == [["a", "b"]]


def test_openenv_message_rows_from_a_generator(engine: str, mod: str) -> None:
    result = launch_rollout("openenv", prompts=("hi",), rollout_func=f"{mod}:chat")
    assert result.rows == (
        {
            "prompt": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi", "meta": {"n": 1}},
            ]
        },
    )


def test_openenv_requires_rollout_func() -> None:
    with pytest.raises(ValueError, match=facts("'openenv'", "training.rollout_func", SPEC_FORM)):
        launch_rollout("openenv", prompts=["a"])


def test_openenv_bad_rollout_func_refused_before_import(mod: str) -> None:
    with pytest.raises(ValueError, match=facts(repr(f"{mod}:rollout\n"), SPEC_FORM)):
        launch_rollout("openenv", rollout_func=f"{mod}:rollout\n")
    assert mod not in sys.modules


def test_unknown_backend_refused() -> None:
    with pytest.raises(ValueError, match=facts("'gym'", *VALID)):
        launch_rollout("gym")


def test_rollout_function_errors_propagate(mod: str) -> None:
    with pytest.raises(RuntimeError) as info:
        launch_rollout("openenv", rollout_func=f"{mod}:explodes")
    assert info.value.args == ("rollout blew up",)  # the function's own error, untouched


# ---- argument checks --------------------------------------------------------------


@pytest.mark.parametrize(("steps", "type_name"), [(True, "bool"), (2.0, "float"), ("8", "str")])
def test_max_steps_type(mod: str, steps: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=facts("max_steps", type_name)):
        launch_rollout("openenv", rollout_func=f"{mod}:rollout", max_steps=steps)  # type: ignore[arg-type]
    assert calls(mod) == []


@pytest.mark.parametrize("steps", [0, -1, 100_001])
def test_max_steps_range(mod: str, steps: int) -> None:
    with pytest.raises(ValueError, match=facts("max_steps", 100_000, steps)):
        launch_rollout("openenv", rollout_func=f"{mod}:rollout", max_steps=steps)
    assert calls(mod) == []


@pytest.mark.parametrize("steps", [1, 100_000])
def test_max_steps_bounds_accepted(mod: str, steps: int) -> None:
    result = launch_rollout(
        "openenv", prompts=["x"], rollout_func=f"{mod}:rollout", max_steps=steps
    )
    assert result.rows == ({"prompt": "x", "answer": "X"},)


@pytest.mark.parametrize(
    ("prompts", "type_name"),
    [
        ("abc", "str"),
        (b"abc", "bytes"),
        ({"a": 1}, "dict"),
        ({"a"}, "set"),
        (iter(["a"]), "list_iterator"),
        (5, "int"),
    ],
)
def test_prompts_must_be_a_sequence(mod: str, prompts: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=facts("prompts", type_name)):
        launch_rollout("openenv", prompts=prompts, rollout_func=f"{mod}:rollout")  # type: ignore[arg-type]
    assert calls(mod) == []


def test_prompts_none_gives_the_function_an_empty_list(mod: str) -> None:
    result = launch_rollout("openenv", rollout_func=f"{mod}:rollout")
    assert calls(mod) == [[]]
    assert type(calls(mod)[0]) is list
    assert result.rows == ({"prompt": "no seeds"},)


def test_prompts_are_passed_as_a_fresh_list(mod: str) -> None:
    seeds = ["a"]
    launch_rollout("openenv", prompts=seeds, rollout_func=f"{mod}:rollout")
    received = calls(mod)[0]
    assert received == ["a"]
    assert received is not seeds
    launch_rollout("openenv", prompts=("t",), rollout_func=f"{mod}:rollout")
    assert calls(mod)[1] == ["t"]
    assert type(calls(mod)[1]) is list


@pytest.mark.parametrize(
    ("options", "type_name"), [([("a", 1)], "list"), ("k=v", "str"), (3, "int")]
)
def test_options_must_be_a_mapping(mod: str, options: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=facts("options", type_name)):
        launch_rollout("openenv", rollout_func=f"{mod}:rollout", options=options)  # type: ignore[arg-type]
    assert calls(mod) == []


def test_options_any_mapping_accepted(mod: str) -> None:
    options = types.MappingProxyType({"group_size": 2})
    result = launch_rollout(
        "openenv", prompts=["q"], rollout_func=f"{mod}:rollout", options=options
    )
    assert result.rows == ({"prompt": "q", "answer": "Q"},)


# ---- rows from the rollout function ----------------------------------------------


def _inline_rollout(monkeypatch: pytest.MonkeyPatch, rows: Callable[[list], Any]) -> str:
    """Register an in-memory module whose ``fn`` returns ``rows(prompts)``; return its spec."""
    name = f"inline_rollout_{uuid.uuid4().hex}"
    module = types.ModuleType(name)
    module.fn = rows  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    return f"{name}:fn"


def test_rows_extra_keys_dropped(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _inline_rollout(
        monkeypatch, lambda p: [{"prompt": "a", "answer": "", "score": 0.5, "meta": object()}]
    )
    assert launch_rollout("openenv", rollout_func=spec).rows == ({"prompt": "a"},)


def test_rows_bad_row_raises_row_error(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _inline_rollout(
        monkeypatch,
        lambda p: [{"prompt": "ok"}, {"prompt": [{"role": "user", "content": object()}]}],
    )
    with pytest.raises(RolloutRowError, match=facts("prompt[0].content", "'object'")) as info:
        launch_rollout("openenv", rollout_func=spec)
    assert (info.value.index, info.value.path, info.value.code) == (
        1,
        "prompt[0].content",
        "value_type",
    )


def test_rows_missing_prompt(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _inline_rollout(monkeypatch, lambda p: [{"answer": "4"}])
    with pytest.raises(RolloutRowError) as info:
        launch_rollout("openenv", rollout_func=spec)
    assert (info.value.index, info.value.path, info.value.code) == (0, "prompt", "prompt_missing")


def test_rows_none_refused(engine: str, mod: str) -> None:
    with pytest.raises(ValueError, match=facts("'openenv'", "NoneType")):
        launch_rollout("openenv", rollout_func=f"{mod}:returns_none")


def test_rows_empty_refused(engine: str, mod: str) -> None:
    with pytest.raises(ValueError, match=facts("'openenv'", "no rows")):
        launch_rollout("openenv", rollout_func=f"{mod}:returns_empty")


def test_max_rows_honoured(engine: str, mod: str) -> None:
    spec = f"{mod}:rollout"
    assert (
        len(launch_rollout("openenv", prompts=["a", "b", "c"], rollout_func=spec, max_rows=3).rows)
        == 3
    )
    with pytest.raises(ValueError, match=facts("'openenv'", "max_rows=2")):
        launch_rollout("openenv", prompts=["a", "b", "c"], rollout_func=spec, max_rows=2)


def test_max_rows_stops_an_endless_rollout(engine: str, mod: str) -> None:
    with pytest.raises(ValueError, match=facts("'openenv'", "max_rows=5")):
        launch_rollout("openenv", rollout_func=f"{mod}:endless", max_rows=5)
    assert sys.modules[mod].PULLED == list(range(6))


@pytest.mark.parametrize(
    ("max_rows", "error", "shown"),
    [
        (True, TypeError, ("bool",)),
        (2.0, TypeError, ("float",)),
        (0, ValueError, (MAX_ROWS_LIMIT, 0)),
        (MAX_ROWS_LIMIT + 1, ValueError, (MAX_ROWS_LIMIT, 10_000_001)),
    ],
)
def test_max_rows_checked(
    mod: str, max_rows: object, error: type[Exception], shown: tuple[object, ...]
) -> None:
    with pytest.raises(error, match=facts("max_rows", *shown)):
        launch_rollout("openenv", rollout_func=f"{mod}:rollout", max_rows=max_rows)  # type: ignore[arg-type]


def test_max_rows_checked_before_the_rollout_runs(mod: str) -> None:
    with pytest.raises(ValueError, match=facts("max_rows", 0)):
        launch_rollout("openenv", rollout_func=f"{mod}:rollout", max_rows=0)
    assert calls(mod) == []


# ---- the runner registry ----------------------------------------------------------


@pytest.fixture
def runners() -> Iterator[None]:
    """Leave no registered runner behind, whatever the test does."""
    try:
        yield
    finally:
        for name in EXTERNAL:
            unregister_rollout_runner(name)


class Recorder:
    """A runner that records its keyword arguments and returns fixed rows."""

    def __init__(self, rows: Any = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.rows = (
            [{"prompt": "from runner", "answer": "ok", "extra": 1}] if rows is None else rows
        )

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self.rows


def assert_builtin_gym_refuses_a_str_seed() -> None:
    """The built-in nemo_gym adapter refuses a bare string seed: a Gym row is an object."""
    with pytest.raises(GymRowError, match=facts("str")) as info:
        launch_rollout("nemo_gym", prompts=["seed"])
    assert (info.value.where, info.value.field) == ("row 0", "row")


@pytest.mark.parametrize(
    ("name", "canonical"),
    [("art", "art"), ("ART", "art"), ("Nemo_Gym", "nemo_gym"), ("RULER", "ruler")],
)
def test_registered_runner_is_used(runners: None, engine: str, name: str, canonical: str) -> None:
    runner = Recorder()
    register_rollout_runner(name, runner)
    result = launch_rollout(canonical.upper(), prompts=["seed"])
    assert result.backend == canonical
    assert result.rows == ({"prompt": "from runner", "answer": "ok"},)
    assert len(runner.calls) == 1


def test_runner_gets_the_documented_keyword_arguments(runners: None, mod: str) -> None:
    runner = Recorder()
    model, tokenizer, reward_fn = object(), object(), object()
    options = {"group_size": 2, "judge_model": "judge"}
    register_rollout_runner("art", runner)
    launch_rollout(
        "art",
        prompts=("p1", "p2"),
        rollout_func=f"{mod}:rollout",
        model=model,
        tokenizer=tokenizer,
        reward_fn=reward_fn,
        max_steps=7,
        options=options,
    )
    (kwargs,) = runner.calls
    assert set(kwargs) == {
        "prompts",
        "model",
        "tokenizer",
        "reward_fn",
        "max_steps",
        "rollout_func",
        "options",
    }
    assert kwargs["prompts"] == ["p1", "p2"]
    assert type(kwargs["prompts"]) is list
    assert kwargs["model"] is model
    assert kwargs["tokenizer"] is tokenizer
    assert kwargs["reward_fn"] is reward_fn
    assert kwargs["max_steps"] == 7
    assert kwargs["rollout_func"] == f"{mod}:rollout"
    assert kwargs["options"] == options
    # The runner gets the spec, not the function: nothing was imported on its behalf.
    assert mod not in sys.modules


def test_runner_defaults(runners: None) -> None:
    runner = Recorder()
    register_rollout_runner("ruler", runner)
    launch_rollout("ruler")
    assert runner.calls == [
        {
            "prompts": [],
            "model": None,
            "tokenizer": None,
            "reward_fn": None,
            "max_steps": 64,
            "rollout_func": None,
            "options": {},
        }
    ]


def test_runner_takes_precedence_over_the_builtin_adapter(runners: None) -> None:
    # The built-in nemo_gym adapter refuses a bare string seed; a runner is free to accept it.
    assert_builtin_gym_refuses_a_str_seed()
    runner = Recorder()
    register_rollout_runner("nemo_gym", runner)
    assert launch_rollout("nemo_gym", prompts=["seed"]).rows == (
        {"prompt": "from runner", "answer": "ok"},
    )
    unregister_rollout_runner("NEMO_GYM")
    assert_builtin_gym_refuses_a_str_seed()
    assert len(runner.calls) == 1


def test_registering_again_replaces_the_runner(runners: None) -> None:
    first, second = Recorder(), Recorder([{"prompt": "second"}])
    register_rollout_runner("art", first)
    register_rollout_runner("Art", second)
    assert launch_rollout("art").rows == ({"prompt": "second"},)
    assert first.calls == []


def test_runner_rows_are_normalised(runners: None, engine: str) -> None:
    register_rollout_runner("art", Recorder([{"prompt": "ok"}, {"prompt": ""}]))
    with pytest.raises(RolloutRowError) as info:
        launch_rollout("art")
    assert (info.value.index, info.value.path, info.value.code) == (1, "prompt", "prompt_empty")


def test_runner_rows_capped_by_max_rows(runners: None, engine: str) -> None:
    register_rollout_runner("ruler", Recorder({"prompt": str(n)} for n in itertools.count()))
    with pytest.raises(ValueError, match=facts("'ruler'", "max_rows=3")):
        launch_rollout("ruler", max_rows=3)


def test_runner_bad_rollout_func_refused_before_the_runner(runners: None) -> None:
    runner = Recorder()
    register_rollout_runner("art", runner)
    with pytest.raises(ValueError, match=facts(repr("mod:fn\n"), SPEC_FORM)):
        launch_rollout("art", rollout_func="mod:fn\n")
    assert runner.calls == []


@pytest.mark.parametrize("name", ["openenv", "OpenEnv"])
def test_register_refuses_openenv(runners: None, name: str) -> None:
    with pytest.raises(ValueError, match=facts("register", "'openenv'", *EXTERNAL)):
        register_rollout_runner(name, Recorder())


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("gym", ("'gym'", *VALID)),
        ("", ("rollout_backend", "non-empty")),
        (None, ("rollout_backend", "NoneType")),
    ],
)
def test_register_refuses_unknown_names(
    runners: None, name: object, shown: tuple[str, ...]
) -> None:
    with pytest.raises(ValueError, match=facts(*shown)):
        register_rollout_runner(name, Recorder())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("runner", "type_name"), [(None, "NoneType"), ("mod:fn", "str"), (3, "int")]
)
def test_register_refuses_non_callables(runners: None, runner: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=facts("runner", "callable", type_name)):
        register_rollout_runner("art", runner)  # type: ignore[arg-type]


def test_unregister_absent_is_a_noop(runners: None) -> None:
    for name in (*EXTERNAL, "Art", "RULER"):
        unregister_rollout_runner(name)  # must not raise
    runner = Recorder()
    register_rollout_runner("nemo_gym", runner)
    unregister_rollout_runner("nemo_gym")
    unregister_rollout_runner("nemo_gym")
    assert_builtin_gym_refuses_a_str_seed()  # back to the built-in adapter
    assert runner.calls == []


def test_unregister_refuses_openenv_and_unknown_names() -> None:
    with pytest.raises(ValueError, match=facts("unregister", "'openenv'", *EXTERNAL)):
        unregister_rollout_runner("OPENENV")
    with pytest.raises(ValueError, match=facts("'gym'", *VALID)):
        unregister_rollout_runner("gym")


# ---- RolloutResult ----------------------------------------------------------------


def test_result_revalidates_and_canonicalises(engine: str) -> None:
    result = RolloutResult("OpenEnv", ({"prompt": "a", "answer": "b", "extra": [1]},))
    assert result.backend == "openenv"
    assert result.rows == ({"prompt": "a", "answer": "b"},)


def test_result_rows_do_not_alias_the_input(engine: str) -> None:
    content = ["part"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    row: dict[str, Any] = {"prompt": messages}
    result = RolloutResult("art", (row,))
    content.append("later")
    messages.append({"role": "user", "content": "more"})
    row["prompt"] = "changed"
    assert result.rows == ({"prompt": [{"role": "user", "content": ["part"]}]},)


def test_result_refuses_bad_rows(engine: str) -> None:
    with pytest.raises(RolloutRowError, match=facts("prompt[0]", "'role'")) as info:
        RolloutResult("ruler", ({"prompt": "ok"}, {"prompt": [{"content": "no role"}]}))
    assert (info.value.index, info.value.path, info.value.code) == (1, "prompt[0]", "role_missing")


def test_result_refuses_empty_rows(engine: str) -> None:
    with pytest.raises(ValueError, match=facts("'openenv'", "no rows")):
        RolloutResult("openenv", ())


@pytest.mark.parametrize(("rows", "type_name"), [([{"prompt": "a"}], "list"), (None, "NoneType")])
def test_result_rows_must_be_a_tuple(rows: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=facts("rows", "tuple", type_name)):
        RolloutResult("openenv", rows)  # type: ignore[arg-type]


def test_result_refuses_unknown_backend() -> None:
    with pytest.raises(ValueError, match=facts("'x'", *VALID)):
        RolloutResult("x", ({"prompt": "a"},))


def test_result_accepts_more_than_the_default_cap(engine: str) -> None:
    rows = tuple({"prompt": f"p{n}"} for n in range(100_001))
    result = RolloutResult("openenv", rows)
    assert len(result.rows) == 100_001
    assert result.rows[-1] == {"prompt": "p100000"}


def test_result_is_frozen() -> None:
    result = RolloutResult("art", ({"prompt": "a"},))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.rows = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.backend = "ruler"  # type: ignore[misc]
    assert (result.backend, result.rows) == ("art", ({"prompt": "a"},))


def test_launch_result_equals_a_hand_built_one(engine: str, mod: str) -> None:
    launched = launch_rollout("openenv", prompts=["z"], rollout_func=f"{mod}:rollout")
    assert launched == RolloutResult("openenv", ({"prompt": "z", "answer": "Z", "id": 0},))


# ---- rollout_func as a callable; openenv functions that ask for more --------------------------


def test_openenv_takes_a_callable(engine: str) -> None:
    def rollout(prompts: list[Any]) -> list[dict[str, Any]]:
        return [{"prompt": p, "answer": "yes", "extra": 1} for p in prompts]

    result = launch_rollout("openenv", prompts=["a", "b"], rollout_func=rollout)
    assert result.rows == ({"prompt": "a", "answer": "yes"}, {"prompt": "b", "answer": "yes"})


@pytest.mark.parametrize(("value", "type_name"), [(3, "int"), (b"m:f", "bytes"), (["m:f"], "list")])
def test_rollout_func_neither_spec_nor_callable_is_refused(value: object, type_name: str) -> None:
    with pytest.raises(ValueError, match=facts("rollout_func", "callable", type_name)):
        launch_rollout("openenv", prompts=["a"], rollout_func=value)  # type: ignore[arg-type]


def test_runners_receive_a_callable_as_given(runners: None) -> None:
    seen: list[Any] = []

    def fn(model: Any, prompt: Any) -> None:
        raise AssertionError("not called by this runner")

    def runner(**kwargs: Any) -> list[dict[str, Any]]:
        seen.append(kwargs["rollout_func"])
        return [{"prompt": "p"}]

    register_rollout_runner("art", runner)
    launch_rollout("art", prompts=["x"], rollout_func=fn)
    assert seen == [fn]


def test_openenv_passes_model_tokenizer_and_max_steps_when_the_signature_asks() -> None:
    model, tokenizer = object(), object()
    calls: dict[str, Any] = {}

    def plain(prompts: list[Any]) -> list[dict[str, Any]]:
        calls["plain"] = prompts
        return [{"prompt": "p"}]

    def some(prompts: list[Any], model: Any, *, max_steps: int) -> list[dict[str, Any]]:
        calls["some"] = (model, max_steps)
        return [{"prompt": "p"}]

    def every(prompts: list[Any], **kwargs: Any) -> list[dict[str, Any]]:
        calls["every"] = kwargs
        return [{"prompt": "p"}]

    for fn in (plain, some, every):
        launch_rollout(
            "openenv",
            prompts=["s"],
            rollout_func=fn,
            model=model,
            tokenizer=tokenizer,
            max_steps=7,
        )
    assert calls == {
        "plain": ["s"],
        "some": (model, 7),
        "every": {"model": model, "tokenizer": tokenizer, "max_steps": 7},
    }


def test_openenv_keeps_a_parameter_default_when_no_model_or_tokenizer_was_given() -> None:
    # A seed-style fn(prompts, model="...") was called as fn(prompts): its default held.
    seen: dict[str, Any] = {}

    def rollout(prompts: list[Any], model: str = "mine", tokenizer: Any = "tok") -> list[Any]:
        seen.update(model=model, tokenizer=tokenizer)
        return [{"prompt": "p"}]

    launch_rollout("openenv", prompts=["s"], rollout_func=rollout)
    assert seen == {"model": "mine", "tokenizer": "tok"}
    launch_rollout("openenv", prompts=["s"], rollout_func=rollout, model="given")
    assert seen == {"model": "given", "tokenizer": "tok"}


# ---- drops and unused fields on the result -----------------------------------------------------


def test_result_carries_drops_and_unused_fields(runners: None) -> None:
    from agent_rollout.backends._ranking import BackendRows

    drop = RolloutDrop(1, "tie", "rollouts 0, 1 share the best reward 1.0 with different answers")

    def runner(**kwargs: Any) -> BackendRows:
        return BackendRows([{"prompt": "p", "answer": "a"}], [drop], {"tools": 2})

    register_rollout_runner("art", runner)
    result = launch_rollout("art", prompts=["x"])
    assert result.drops == (drop,)
    assert result.drop_counts() == {"tie": 1}
    assert result.unused_fields == {"tools": 2}
    assert re.search(facts(1, "tie", drop.detail), str(drop))
    plain = RolloutResult("art", ({"prompt": "p"},))
    assert (plain.drops, plain.unused_fields, plain.drop_counts()) == ((), {}, {})
    with pytest.raises(TypeError, match=facts("drops", "RolloutDrop", "str")):
        RolloutResult("art", ({"prompt": "p"},), drops=("tie",))  # type: ignore[arg-type]
