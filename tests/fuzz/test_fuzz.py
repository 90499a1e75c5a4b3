"""The fuzzer itself, on a fixed seed and a fixed number of inputs (the CI run is time-boxed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from support import ENGINES

HERE = Path(__file__).resolve().parent


def load_fuzzer():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("agent_rollout_fuzz", HERE / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_corpus_is_there() -> None:
    assert len(list((HERE / "corpus" / "rows").glob("*.json"))) >= 5
    assert len(list((HERE / "corpus" / "jsonl").glob("*.jsonl"))) >= 8


@pytest.mark.skipif("rust" not in ENGINES, reason="needs the Rust engine")
def test_fixed_seed_run_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    assert load_fuzzer().main(["--count", "200", "--seed", "20261130"]) == 0
    assert "engines agreed on all" in capsys.readouterr().out
