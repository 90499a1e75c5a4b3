"""The row rules, on both engines (the ``engine`` fixture runs each test twice)."""

from __future__ import annotations

import gc
import itertools
from collections import OrderedDict, UserDict
from collections.abc import Iterator, Mapping

import pytest

from agent_rollout import MAX_MESSAGE_DEPTH, RolloutRowError, normalise_rollout_rows
from support import Count, Image

JSON_LIKE = "str, int, float, bool, None, list, dict with str keys"


def rows_error(rows: object, **kwargs: object) -> RolloutRowError:
    with pytest.raises(RolloutRowError) as info:
        normalise_rollout_rows(rows, **kwargs)  # type: ignore[arg-type]
    return info.value


class Text(str):
    def __len__(self) -> int:  # lies: the rules must not trust it
        return 0


class Score(float):
    pass


class Frozen(Mapping):
    def __init__(self, data: dict) -> None:
        self._data = data

    def __getitem__(self, key: object) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[object]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


# ---- the reference's behaviours ---------------------------------------------------


def test_string_prompt_and_answer_kept_extra_keys_dropped(engine: str) -> None:
    rows = normalise_rollout_rows([{"prompt": "2+2?", "answer": "4", "reward": 1.0, "id": 7}])
    assert rows == ({"prompt": "2+2?", "answer": "4"},)
    assert isinstance(rows, tuple)


def test_empty_or_none_answer_is_left_out(engine: str) -> None:
    rows = normalise_rollout_rows([{"prompt": "a", "answer": ""}, {"prompt": "b", "answer": None}])
    assert rows == ({"prompt": "a"}, {"prompt": "b"})


def test_message_prompt_kept(engine: str) -> None:
    prompt = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert normalise_rollout_rows([{"prompt": prompt}]) == ({"prompt": prompt},)


@pytest.mark.parametrize(
    ("raw", "fact"),
    [
        (None, "NoneType"),
        ("rows", "str"),
        (b"rows", "bytes"),
        (bytearray(b"x"), "bytearray"),
        (42, "int"),
    ],
)
def test_whole_input_not_iterable(engine: str, raw: object, fact: str) -> None:
    with pytest.raises(ValueError) as info:
        normalise_rollout_rows(raw, "art")
    assert not isinstance(info.value, RolloutRowError)
    assert str(info.value) == (
        f"rollout backend 'art' must return an iterable of row mappings, got {fact}"
    )


def test_single_mapping_is_refused_not_iterated(engine: str) -> None:
    with pytest.raises(ValueError, match=r"got a single dict \(wrap one row in a list\)"):
        normalise_rollout_rows({"prompt": "x"})


def test_empty_input_is_an_error(engine: str) -> None:
    with pytest.raises(ValueError) as info:
        normalise_rollout_rows([], "nemo_gym")
    assert str(info.value) == (
        "rollout backend 'nemo_gym' produced no rows; refusing to train on an empty prompt set"
    )


def test_row_must_be_mapping(engine: str) -> None:
    err = rows_error([{"prompt": "ok"}, ["prompt", "x"]])
    assert (err.index, err.path, err.code) == (1, "", "row_not_mapping")
    assert str(err) == "row 1: a rollout row must be a mapping with a 'prompt' key, got 'list'"


@pytest.mark.parametrize(
    ("row", "code", "text"),
    [
        (
            {},
            "prompt_missing",
            "row 0: prompt: missing (every row needs a 'prompt': a str or a list of chat messages)",
        ),
        ({"prompt": None}, "prompt_missing", None),
        (
            {"prompt": ""},
            "prompt_empty",
            "row 0: prompt: empty prompt (a non-empty str or at least one message is required)",
        ),
        ({"prompt": []}, "prompt_empty", None),
        (
            {"prompt": 3},
            "prompt_type",
            "row 0: prompt: must be a str or a list of chat messages, got 'int'",
        ),
        ({"prompt": ({"role": "user"},)}, "prompt_type", None),
        ({"prompt": Text("")}, "prompt_empty", None),
    ],
)
def test_prompt_rules(engine: str, row: dict, code: str, text: str | None) -> None:
    err = rows_error([row])
    assert (err.index, err.path, err.code) == (0, "prompt", code)
    if text is not None:
        assert str(err) == text


def test_answer_must_be_str(engine: str) -> None:
    err = rows_error([{"prompt": "a"}, {"prompt": "b", "answer": 4}])
    assert (err.index, err.path) == (1, "answer")
    assert str(err) == "row 1: answer: must be a str or None, got 'int'"


# ---- messages -----------------------------------------------------------------------


def test_message_must_be_mapping(engine: str) -> None:
    err = rows_error([{"prompt": [{"role": "user", "content": "a"}, "hello"]}])
    assert (err.path, err.code) == ("prompt[1]", "message_not_mapping")
    assert str(err) == (
        "row 0: prompt[1]: a chat message must be a mapping with str keys, got 'str'"
    )


@pytest.mark.parametrize(
    ("message", "path", "code", "tail"),
    [
        (
            {"content": "x"},
            "prompt[0]",
            "role_missing",
            "a chat message needs a 'role' (a non-empty str)",
        ),
        ({"role": None}, "prompt[0].role", "role_type", "must be a non-empty str, got 'NoneType'"),
        ({"role": 1}, "prompt[0].role", "role_type", "must be a non-empty str, got 'int'"),
        ({"role": ""}, "prompt[0].role", "role_empty", "must be a non-empty str, got ''"),
        (
            {"role": "u", 3: "x"},
            "prompt[0]",
            "key_not_str",
            "keys must be str, got a key of type 'int'",
        ),
    ],
)
def test_role_and_key_rules(engine: str, message: dict, path: str, code: str, tail: str) -> None:
    err = rows_error([{"prompt": [message]}])
    assert (err.path, err.code) == (path, code)
    assert str(err) == f"row 0: {path}: {tail}"


def test_unsupported_value_names_path_and_type(engine: str) -> None:
    row = {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": [Image()]}]}
    err = rows_error([{"prompt": "fine"}] * 12 + [row])
    assert (err.index, err.path, err.code) == (12, "prompt[1].content[0]", "value_type")
    assert str(err) == (
        "row 12: prompt[1].content[0]: unsupported value of type 'support.Image' "
        f"(message values must be JSON-like: {JSON_LIKE})"
    )


@pytest.mark.parametrize("bad", [b"bytes", {1, 2}, object(), 1j])
def test_other_values_refused(engine: str, bad: object) -> None:
    err = rows_error([{"prompt": [{"role": "user", "meta": {"x": [1, bad]}}]}])
    assert err.path == "prompt[0].meta.x[1]"
    assert f"unsupported value of type '{type(bad).__name__}'" in str(err)


# ---- how a type is named ---------------------------------------------------------------


def test_a_type_that_shares_a_builtins_name_is_named_by_its_module(engine: str) -> None:
    np = pytest.importorskip("numpy")
    flag = np.bool_(True)
    shown = f"'numpy.{type(flag).__name__}'"  # numpy.bool (numpy 2), numpy.bool_ (1.x)
    err = rows_error([{"prompt": [{"role": "user", "flag": flag}]}])
    assert (err.path, err.code) == ("prompt[0].flag", "value_type")
    assert f"unsupported value of type {shown} (" in str(err)
    err = rows_error([{"prompt": "p", "answer": flag}])
    assert (err.path, err.code) == ("answer", "answer_type")
    assert str(err).endswith(f"got {shown}")
    err = rows_error([{"prompt": flag}])
    assert (err.path, err.code) == ("prompt", "prompt_type")
    assert str(err).endswith(f"got {shown}")
    err = rows_error([{"prompt": [{"role": "user", "n": np.int64(3)}]}])
    assert "unsupported value of type 'numpy.int64' (" in str(err)


def test_a_str_or_float_subclass_from_numpy_is_still_taken(engine: str) -> None:
    np = pytest.importorskip("numpy")
    text, number = np.str_("hi"), np.float64(0.5)
    message = {np.str_("role"): np.str_("user"), "content": text, "score": number}
    rows = normalise_rollout_rows([{"prompt": [message], "answer": text}])
    assert rows == ({"prompt": [{"role": "user", "content": "hi", "score": 0.5}], "answer": "hi"},)
    message = rows[0]["prompt"][0]
    assert [type(key) for key in message] == [str, str, str]
    assert type(message["role"]) is str
    assert (type(message["content"]), type(message["score"])) == (str, float)
    (row,) = normalise_rollout_rows([{"prompt": text}])
    assert type(row["prompt"]) is str


def test_a_class_of_ours_named_like_a_builtin_is_named_in_full(engine: str) -> None:
    class int:  # the point: a name that is a builtin's
        pass

    err = rows_error([{"prompt": [{"role": "user", "n": int()}]}])
    assert f"of type '{__name__}.{int.__qualname__}' (" in str(err)
    assert "<locals>.int'" in str(err)


@pytest.mark.parametrize("module", [42, None, Text("not exactly a str")])
def test_a_module_that_is_not_a_str_leaves_the_name_alone(engine: str, module: object) -> None:
    odd = type("Odd", (), {"__module__": module})
    err = rows_error([{"prompt": [{"role": "user", "v": odd()}]}])
    assert "unsupported value of type 'Odd' (" in str(err)


@pytest.mark.parametrize("bad", [b"bytes", {1, 2}, object(), 1j, None.__class__])
def test_builtin_types_are_named_alone(engine: str, bad: object) -> None:
    err = rows_error([{"prompt": "p", "answer": bad}])
    assert str(err).endswith(f"got '{type(bad).__name__}'")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), Score("inf")])
def test_non_finite_float(engine: str, value: float) -> None:
    err = rows_error([{"prompt": [{"role": "user", "score": value}]}])
    assert err.path == "prompt[0].score"
    assert str(err) == (
        f"row 0: prompt[0].score: non-finite float {float(value)!r} "
        "(message values must be JSON-like: NaN and infinities are not)"
    )


def test_odd_keys_are_quoted_in_paths(engine: str) -> None:
    err = rows_error([{"prompt": [{"role": "u", "a b": {'q"\n': [None, Image()]}}]}])
    assert err.path == 'prompt[0]["a b"]["q\\"\\u000a"][1]'


def test_nested_key_not_str(engine: str) -> None:
    err = rows_error([{"prompt": [{"role": "u", "meta": {(1, 2): "x"}}]}])
    assert (err.path, err.code) == ("prompt[0].meta", "key_not_str")
    assert "got a key of type 'tuple'" in str(err)


# ---- depth --------------------------------------------------------------------------


def nested(levels: int) -> dict:
    """A message whose containers nest ``levels`` deep (the message is level 1)."""
    value: object = "leaf"
    for _ in range(levels - 1):
        value = [value]
    return {"role": "user", "content": value}


def test_depth_limit_exact(engine: str) -> None:
    assert normalise_rollout_rows([{"prompt": [nested(MAX_MESSAGE_DEPTH)]}])
    err = rows_error([{"prompt": [nested(MAX_MESSAGE_DEPTH + 1)]}])
    assert err.code == "too_deep"
    assert err.path == "prompt[0].content" + "[0]" * (MAX_MESSAGE_DEPTH - 1)
    assert str(err).endswith(
        f"nested deeper than {MAX_MESSAGE_DEPTH} levels (MAX_MESSAGE_DEPTH), "
        "or a container that holds itself"
    )


def test_self_referencing_container_is_refused(engine: str) -> None:
    loop: list = []
    loop.append(loop)
    err = rows_error([{"prompt": [{"role": "user", "content": loop}]}])
    assert err.code == "too_deep"
    looped: dict = {"role": "user"}
    looped["self"] = looped
    assert rows_error([{"prompt": [looped]}]).code == "too_deep"


# ---- copies and exact types ---------------------------------------------------------


def test_output_is_a_deep_copy(engine: str) -> None:
    content = [{"type": "text", "text": "hi", "tags": ["a"]}]
    message = {"role": "user", "content": content}
    prompt = [message]
    (row,) = normalise_rollout_rows([{"prompt": prompt}])
    assert row["prompt"] == prompt
    assert row["prompt"] is not prompt
    assert row["prompt"][0] is not message
    assert row["prompt"][0]["content"] is not content
    assert row["prompt"][0]["content"][0] is not content[0]
    content[0]["tags"].append("mutated")
    message["role"] = "assistant"
    assert row["prompt"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "hi", "tags": ["a"]}],
    }


def exact_types(value: object) -> set[type]:
    found = {type(value)}
    if isinstance(value, dict):
        for k, v in value.items():
            found |= exact_types(k) | exact_types(v)
    elif isinstance(value, list):
        for v in value:
            found |= exact_types(v)
    return found


def test_subclasses_become_builtin_types(engine: str) -> None:
    class Role(str):
        pass

    class Items(list):
        pass

    class Pair(tuple):
        pass

    row = UserDict(
        prompt=Items(
            [
                OrderedDict(
                    role=Role("user"),
                    n=Count(3),
                    x=Score(1.5),
                    parts=Pair((Text("t"), Frozen({"k": Items([True, None])}))),
                ),
            ]
        ),
        answer=Role("yes"),
    )
    (out,) = normalise_rollout_rows([row])
    assert out == {
        "prompt": [{"role": "user", "n": 3, "x": 1.5, "parts": ["t", {"k": [True, None]}]}],
        "answer": "yes",
    }
    assert exact_types(out) <= {dict, list, str, int, float, bool, type(None)}
    assert type(out["answer"]) is str


def test_big_ints_and_bools_survive(engine: str) -> None:
    (out,) = normalise_rollout_rows([{"prompt": [{"role": "u", "n": 10**40, "b": False}]}])
    assert out["prompt"][0]["n"] == 10**40
    assert out["prompt"][0]["b"] is False


def test_any_iterable_of_mappings(engine: str) -> None:
    gen = ({"prompt": f"p{i}"} for i in range(3))
    assert normalise_rollout_rows(gen) == ({"prompt": "p0"}, {"prompt": "p1"}, {"prompt": "p2"})
    assert normalise_rollout_rows(({"prompt": "t"},)) == ({"prompt": "t"},)
    assert normalise_rollout_rows([Frozen({"prompt": "m", "answer": "a"})]) == (
        {"prompt": "m", "answer": "a"},
    )


# ---- the row cap ----------------------------------------------------------------------


def test_endless_generator_stops_at_cap_plus_one(engine: str) -> None:
    pulled = itertools.count()

    def endless() -> Iterator[dict]:
        while True:
            next(pulled)
            yield {"prompt": "again"}

    with pytest.raises(ValueError) as info:
        normalise_rollout_rows(endless(), "openenv", max_rows=5)
    assert (
        str(info.value) == "rollout backend 'openenv' produced more than 5 rows (max_rows=5; "
        "raise the limit with max_rows= or --max-rows)"
    )
    assert next(pulled) == 6  # six rows pulled: the cap, plus the one that proves it is over


def test_exactly_the_cap_is_fine(engine: str) -> None:
    assert len(normalise_rollout_rows([{"prompt": "x"}] * 3, max_rows=3)) == 3


@pytest.mark.parametrize("bad", [True, 1.0, "10", None])
def test_max_rows_type(engine: str, bad: object) -> None:
    with pytest.raises(TypeError, match="max_rows must be an int"):
        normalise_rollout_rows([{"prompt": "x"}], max_rows=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -1, 10_000_001])
def test_max_rows_range(engine: str, bad: int) -> None:
    with pytest.raises(ValueError, match=r"max_rows must be in \[1, 10000000\]"):
        normalise_rollout_rows([{"prompt": "x"}], max_rows=bad)


def test_unknown_backend_name(engine: str) -> None:
    with pytest.raises(ValueError, match="valid: art, nemo_gym, openenv, ruler"):
        normalise_rollout_rows([{"prompt": "x"}], "verl")


def test_user_exceptions_pass_through(engine: str) -> None:
    def broken() -> Iterator[dict]:
        yield {"prompt": "x"}
        raise KeyError("from the rollout function")

    with pytest.raises(KeyError, match="from the rollout function"):
        normalise_rollout_rows(broken())


def test_dict_resized_during_walk_is_an_error_not_a_crash(engine: str) -> None:
    outer: dict = {"role": "user"}

    class Sneaky(Mapping):
        def __getitem__(self, key: object) -> object:
            raise KeyError(key)

        def __iter__(self) -> Iterator[object]:
            return iter(())

        def __len__(self) -> int:
            return 0

        def items(self):  # type: ignore[override]
            outer["added"] = 1
            return []

    outer["sneaky"] = Sneaky()
    outer["after"] = 1
    with pytest.raises(RuntimeError, match="changed size during iteration"):
        normalise_rollout_rows([{"prompt": [outer]}])


# ---- the garbage collector --------------------------------------------------------------


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("fail", [False, True])
def test_collector_state_is_restored(engine: str, enabled: bool, fail: bool) -> None:
    in_generator: list[bool] = []
    in_build: list[bool] = []

    class Row(Frozen):
        def get(self, key: object, default: object = None) -> object:
            in_build.append(gc.isenabled())
            return super().get(key, default)

    def rows() -> Iterator[object]:
        in_generator.append(gc.isenabled())
        yield Row({"prompt": "x"})
        if fail:
            yield {"prompt": 5}

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        if fail:
            with pytest.raises(RolloutRowError):
                normalise_rollout_rows(rows())
        else:
            normalise_rollout_rows(rows())
        assert gc.isenabled() is enabled
        # The caller's generator runs with the caller's setting; the rows are
        # built with the collector paused.
        assert in_generator == [enabled]
        assert in_build and not any(in_build)
    finally:
        (gc.enable if was else gc.disable)()


def test_a_generator_is_pulled_before_rows_are_checked(engine: str) -> None:
    """Rows come out of a generator (at most one past the cap) before any is checked."""

    def rows() -> Iterator[dict]:
        yield {"prompt": 5}
        raise KeyError("from the rollout function")

    with pytest.raises(KeyError, match="from the rollout function"):
        normalise_rollout_rows(rows())
