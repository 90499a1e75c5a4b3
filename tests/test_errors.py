"""The exceptions users catch survive pickling (a Ray worker's error, multiprocessing)."""

from __future__ import annotations

import pickle

import pytest

from agent_rollout._errors import GymRowError, file_error, row_error


@pytest.mark.parametrize(
    "error",
    [
        row_error("prompt_missing", 3, ("prompt",), line=4, source="rows.jsonl"),
        row_error("value_type", 0, ("prompt", 1, "content"), "Image"),
        file_error("json_syntax", "rows.jsonl", 10, fact="expected_value", line=2, column=7),
        file_error("file_too_large", "<stdin>", 10, max_bytes=5, line=3),
        GymRowError("data.jsonl:3: row 2", "responses_create_params", "missing"),
    ],
)
def test_errors_pickle_whole(error: Exception) -> None:
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert str(again) == str(error)
    assert vars(again) == vars(error)
