"""``agent-rollout --version`` and ``agent-rollout demo``: the first things a newcomer runs.

``--version`` names the engine in use and, for Rust, its build profile (a debug build,
left by a development install, is several times slower). The demo warns on standard
error about a debug build, draws a progress line on a terminal, and times both engines
on Python objects and file to file (JSONL to JSONL), the headline being the file-to-file
ratio. The live rollout's progress line is in ``test_cli_demo_live.py`` (a server).
"""

from __future__ import annotations

import re
import sys

import pytest

import agent_rollout
from support import ENGINES, Cli, cli_argv, cli_env, cli_process, native_module, run_in_pty

needs_rust = pytest.mark.skipif(native_module() is None, reason="the Rust engine is not built")

DEMO = ("demo", "--offline", "--rows", "3000")


def test_version_names_the_engine_and_its_build(cli: Cli, engine: str) -> None:
    result = cli("--version")
    assert result.code == 0, result.err
    assert result.out.startswith(f"agent-rollout {agent_rollout.__version__} ")
    if engine == "rust":
        assert f"(engine: rust, {native_module().BUILD_PROFILE} build)" in result.out
    else:
        assert "(engine: python)" in result.out


@needs_rust
def test_the_engine_knows_its_build_profile() -> None:
    assert native_module().BUILD_PROFILE in ("debug", "release")


@needs_rust
@pytest.mark.parametrize("profile", ["debug", "release"])
def test_version_names_a_debug_build(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, profile: str
) -> None:
    monkeypatch.setattr(native_module(), "BUILD_PROFILE", profile)
    result = cli("--version")
    assert f"(engine: rust, {profile} build)" in result.out


@pytest.mark.parametrize("engine_env", ["python", None])
def test_version_of_the_command(engine_env: str | None) -> None:
    """The real command (a process): the pure-Python switch shows in ``--version``."""
    proc = cli_process("--version", engine=engine_env)
    assert proc.returncode == 0, proc.stderr
    if engine_env == "python" or native_module() is None:
        assert proc.stdout.rstrip().endswith(b"(engine: python)")
    else:
        assert re.search(rb"\(engine: rust, (debug|release) build\)$", proc.stdout.rstrip())


@needs_rust
@pytest.mark.parametrize("profile", ["debug", "release"])
def test_demo_warns_on_a_debug_build(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, profile: str
) -> None:
    monkeypatch.setattr(native_module(), "BUILD_PROFILE", profile)
    result = cli(*DEMO)
    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if "debug build" in line]
    if profile == "debug":
        assert len(warnings) == 1, result.err
        assert "release" in warnings[0] and "make build-release" in warnings[0]
    else:
        assert warnings == [], result.err


def test_demo_times_both_engines_file_to_file(cli: Cli) -> None:
    result = cli(*DEMO)
    assert result.code == 0, result.err
    assert "3. normalise 3,000 message rows" in result.out
    rollout = (
        r"^2\. rollout 6 rows from 6 seed prompts, offline \(--offline\): 6 rows in \d+\.\d\d s$"
    )
    assert re.search(rollout, result.out, re.M), result.out
    header = next(line for line in result.out.splitlines() if "file to file" in line)
    assert header.index("file to file (JSONL)") < header.index("Python objects")
    for name in ENGINES:
        timed = re.search(rf"^   {name} .* ms .* rows/s .* ms .* rows/s$", result.out, re.M)
        assert timed, result.out
    if len(ENGINES) == 2:
        headline = re.search(
            r"rust is [\d.]+x faster than pure Python file to file "
            r"\([\d.]+x on Python objects\)",
            result.out,
        )
        assert headline, result.out
    else:
        assert re.search(r"^   rust +not built$", result.out, re.M), result.out


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal: POSIX")
def test_demo_draws_a_progress_line_on_a_terminal() -> None:
    # 20k rows: the twin's file run takes longer than the line's 0.1 s interval.
    code, out, err = run_in_pty(cli_argv("demo", "--offline", "--rows", "20000"), cli_env())
    assert code == 0, err
    assert re.search(rb"3\. normalise  python, (file to file|Python objects)", err), err
    assert err.endswith(b"\r\x1b[K"), err  # erased before the timings are printed
    assert b"faster than pure Python" in out or native_module() is None


@pytest.mark.parametrize("rows", ["0", "-1", "10000001", "many"])
def test_demo_refuses_a_row_count_out_of_range_as_a_usage_error(cli: Cli, rows: str) -> None:
    result = cli("demo", "--offline", "--rows", rows)
    assert result.code == 2
    assert "argument --rows" in result.err and "internal error" not in result.err
