"""The Rust engine's error codes are the Python message tables' keys, one for one.

Rust reports a broken rule as a ``Code`` (``rust/errors.rs``) and a JSON syntax
error as a ``Reason``; Python formats every text from ``agent_rollout._errors``.
A code without a message (or a message no engine can raise) fails here.
"""

from __future__ import annotations

import pytest

from agent_rollout import _engine, _errors, _limits
from agent_rollout._engine.jsonl import file_limits
from agent_rollout._jsonl import FileLimits

pytestmark = pytest.mark.skipif(not _engine.native_available(), reason="needs the Rust engine")


def test_codes_equal_the_message_tables() -> None:
    native = _engine.native
    tables = [*_errors.ROW_MESSAGES, *_errors.INPUT_MESSAGES, *_errors.FILE_MESSAGES]
    python_side = [code for code in tables if code not in _errors.PYTHON_ONLY_CODES]
    assert list(native.CODES) == [*python_side, *_errors.IO_CODES]
    assert len(set(native.CODES)) == len(native.CODES)


def test_json_reasons_equal_the_reason_table() -> None:
    assert list(_engine.native.JSON_REASONS) == list(_errors.JSON_REASONS)


def test_python_only_codes_are_in_the_tables() -> None:
    assert _errors.PYTHON_ONLY_CODES <= set(_errors.ROW_MESSAGES)
    assert not _errors.PYTHON_ONLY_CODES & set(_engine.native.CODES)


def test_file_limits_carry_every_limit_from_python() -> None:
    limits = file_limits(FileLimits(5, 7))
    assert (limits.max_rows, limits.max_bytes) == (5, 7)
    assert limits.max_line_bytes == _limits.MAX_LINE_BYTES
    assert limits.json_depth == _limits.MAX_JSON_DEPTH
    assert limits.max_depth == _limits.MAX_MESSAGE_DEPTH
