"""Edge cases found in review: each once broke one engine or the two disagreed."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from agent_rollout import (
    RolloutFileError,
    RolloutRowError,
    normalise_rollout_file,
    normalise_rollout_rows,
    read_rollout_jsonl,
)


class AlwaysEqual:
    """An answer that claims to equal everything (as some array types do)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class EqualsEverything(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def test_a_non_str_answer_is_refused_even_if_it_equals_the_empty_string(engine: str) -> None:
    with pytest.raises(RolloutRowError) as info:
        normalise_rollout_rows([{"prompt": "p", "answer": AlwaysEqual()}])
    assert str(info.value) == f"row 0: answer: must be a str or None, got '{__name__}.AlwaysEqual'"


def test_a_str_subclass_answer_is_kept_by_its_length_not_its_eq(engine: str) -> None:
    (row,) = normalise_rollout_rows([{"prompt": "p", "answer": EqualsEverything("yes")}])
    assert row == {"prompt": "p", "answer": "yes"}
    assert type(row["answer"]) is str


class Collides:
    """A key whose hash is that of "prompt" and whose comparison fails."""

    def __hash__(self) -> int:
        return hash("prompt")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("comparison failed")


def test_a_failing_key_comparison_propagates(engine: str) -> None:
    with pytest.raises(RuntimeError, match="comparison failed"):
        normalise_rollout_rows([{Collides(): 1, "prompt": "p"}])


class ListItems(Mapping):
    def __getitem__(self, key: object) -> object:
        return "user"

    def __iter__(self) -> Iterator[object]:
        return iter(["role"])

    def __len__(self) -> int:
        return 1

    def items(self):  # type: ignore[override]
        return [["role", "user"]]


def test_items_must_yield_pairs(engine: str) -> None:
    with pytest.raises(TypeError) as info:
        normalise_rollout_rows([{"prompt": [ListItems()]}])
    assert str(info.value) == (
        f"{__name__}.ListItems.items() must yield (key, value) tuples, got list"
    )


@pytest.fixture
def int_limit() -> Iterator[None]:
    before = sys.get_int_max_str_digits()
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.parametrize(("limit", "ok"), [(640, False), (0, True), (4300, True)])
def test_the_interpreters_int_digit_limit_is_the_one_applied(
    engine: str, tmp_path: Path, int_limit: None, limit: int, ok: bool
) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text('{"prompt":"x","n":' + "1" * 700 + "}\n", encoding="utf-8")
    sys.set_int_max_str_digits(limit)
    if ok:
        assert read_rollout_jsonl(src) == ({"prompt": "x"},)
    else:
        with pytest.raises(RolloutFileError) as info:
            read_rollout_jsonl(src)
        assert str(info.value) == (
            f"{src}:1:19: invalid JSON: integer has more than 640 digits "
            "(sys.get_int_max_str_digits())"
        )


def test_a_symlinked_destination_keeps_its_link_and_mode(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"prompt":"p","x":1}\n', encoding="utf-8")
    target = tmp_path / "real.jsonl"
    target.write_text("old\n", encoding="utf-8")
    os.chmod(target, 0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    normalise_rollout_file(src, link)
    assert link.is_symlink()
    assert target.read_text(encoding="utf-8") == '{"prompt":"p"}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_progress_must_be_callable_and_paths_not_empty(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"prompt":"p"}\n', encoding="utf-8")
    with pytest.raises(TypeError, match="progress must be callable, got int"):
        normalise_rollout_file(src, tmp_path / "out.jsonl", progress=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dst must not be empty"):
        normalise_rollout_file(src, "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_progress_gets_rows_lines_and_bytes(engine: str, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    line = '{"prompt":"p"}\n'
    src.write_text(line * 20_000, encoding="utf-8")
    calls: list[tuple[int, int, int]] = []
    normalise_rollout_file(src, tmp_path / "out.jsonl", progress=lambda *a: calls.append(a))
    assert calls
    rows, lines, read = calls[-1]
    assert 0 < rows == lines <= 20_000
    assert read == rows * len(line)
