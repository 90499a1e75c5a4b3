"""Parity: both engines return equal rows, or raise the same error with the same text."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_rollout import _engine, normalise_rollout_rows

pytestmark = pytest.mark.skipif(
    not _engine.native_available(), reason="the Rust engine is not built"
)


class Image:
    pass


class Label(str):
    pass


class Count(int):
    pass


scalars = st.one_of(
    st.text(max_size=6),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
json_scalars = st.one_of(
    st.text(max_size=6),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
odd_scalars = st.one_of(
    st.builds(Image),
    st.binary(max_size=3),
    st.frozensets(st.integers(), max_size=2),
    st.complex_numbers(allow_nan=False, allow_infinity=False),
    st.text(max_size=4).map(Label),
    st.integers().map(Count),
)
keys = st.one_of(st.text(max_size=5), st.sampled_from(["role", "content", "a b", 'q"']))
odd_keys = st.one_of(keys, st.integers(), st.text(max_size=3).map(Label))


def values(odd: bool) -> st.SearchStrategy[Any]:
    leaves = st.one_of(scalars, odd_scalars) if odd else json_scalars
    key_strategy = odd_keys if odd else keys
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(key_strategy, inner, max_size=3),
            st.dictionaries(key_strategy, inner, max_size=3).map(OrderedDict),
        ),
        max_leaves=8,
    )


def messages(odd: bool) -> st.SearchStrategy[Any]:
    roles = (
        st.one_of(st.sampled_from(["system", "user", "assistant", ""]), st.integers(), st.none())
        if odd
        else st.sampled_from(["system", "user", "assistant"])
    )
    message = st.builds(
        lambda role, extra, drop_role: extra | ({} if drop_role else {"role": role}),
        roles,
        st.dictionaries(odd_keys if odd else keys, values(odd), max_size=3),
        st.booleans() if odd else st.just(False),
    )
    if odd:
        message = st.one_of(message, scalars, st.lists(scalars, max_size=2))
    return message


def rows(odd: bool) -> st.SearchStrategy[Any]:
    prompt = st.one_of(st.text(max_size=8), st.lists(messages(odd), max_size=3))
    answer = st.one_of(st.none(), st.text(max_size=5))
    if odd:
        prompt = st.one_of(prompt, scalars, st.tuples(messages(odd)))
        answer = st.one_of(answer, scalars)
    row = st.builds(
        lambda p, a, extra: {"prompt": p, "answer": a} | extra,
        prompt,
        answer,
        st.dictionaries(st.sampled_from(["reward", "id", "meta"]), values(odd), max_size=2),
    )
    if odd:
        row = st.one_of(row, st.dictionaries(keys, values(odd), max_size=2), scalars)
    return row


def run(engine: str, data: Any, max_rows: int) -> tuple[str, Any]:
    previous = _engine.set_engine(engine)  # type: ignore[arg-type]
    try:
        return "ok", normalise_rollout_rows(data, max_rows=max_rows)
    except Exception as exc:
        return "error", (
            type(exc).__name__,
            str(exc),
            getattr(exc, "index", None),
            getattr(exc, "path", None),
        )
    finally:
        _engine.set_engine(previous)


def typed(value: Any) -> Any:
    """The value with every node tagged by its exact type, so 1 != True != 1.0."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def assert_same(data: list, max_rows: int = 100) -> None:
    rust = run("rust", data, max_rows)
    python = run("python", data, max_rows)
    assert typed(rust) == typed(python)


@given(st.lists(rows(odd=False), max_size=6))
def test_parity_json_like_rows(data: list) -> None:
    assert_same(data)


@given(st.lists(rows(odd=True), max_size=6), st.integers(min_value=1, max_value=8))
def test_parity_any_rows(data: list, max_rows: int) -> None:
    assert_same(data, max_rows)


@given(st.lists(rows(odd=False), min_size=1, max_size=6))
def test_json_like_rows_always_normalise(data: list) -> None:
    kind, result = run("rust", data, 100)
    if kind == "error":
        # Only empty prompts can fail on JSON-like input built from valid roles.
        assert "empty prompt" in result[1], result
    else:
        assert len(result) == len(data)
