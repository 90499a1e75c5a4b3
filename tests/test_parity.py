"""Parity: both engines return equal rows, or raise the same error with the same text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import ENGINES, row_strategy, rows_outcome_on, typed

pytestmark = pytest.mark.skipif("rust" not in ENGINES, reason="the Rust engine is not built")


def assert_same(data: list, max_rows: int = 100) -> None:
    rust = rows_outcome_on("rust", data, max_rows)
    python = rows_outcome_on("python", data, max_rows)
    assert typed(rust) == typed(python)


@given(st.lists(row_strategy(odd=False), max_size=6))
def test_parity_json_like_rows(data: list) -> None:
    assert_same(data)


@given(st.lists(row_strategy(odd=True), max_size=6), st.integers(min_value=1, max_value=8))
def test_parity_any_rows(data: list, max_rows: int) -> None:
    assert_same(data, max_rows)


@given(st.lists(row_strategy(odd=False), min_size=1, max_size=6))
def test_json_like_rows_always_normalise(data: list) -> None:
    kind, result = rows_outcome_on("rust", data, 100)
    if kind == "error":
        # Only empty prompts can fail on JSON-like input built from valid roles.
        assert "empty prompt" in result[1], result
    else:
        assert len(result) == len(data)
