"""``agent-rollout lsp`` in a real editor: a headless Neovim (Debian's 0.7.2 and later).

Neovim starts the server (``vim.lsp.start_client``), attaches it to a config
with mistakes (``buf_attach_client``), and its own diagnostics
(``vim.diagnostic.get``: byte columns, converted by Neovim from the UTF-16
positions the server sent) are compared with ``check``'s on the same text;
then an edit by hand, fix-all by the command docs/editors.md gives for Neovim
0.7 (run as typed; the one action it lists chosen), and a hover. The Lua
side is ``tests/data/neovim_lsp.lua`` (the benchmark runs it too). Without
``nvim`` on PATH the test skips, unless ``AGENT_ROLLOUT_REQUIRE_NEOVIM=1``
(CI installs Neovim and sets it): then it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_rollout.config import check_bytes
from support import cli_argv, cli_env

pytest.importorskip("pygls")

from agent_rollout.lsp._diagnostics import short_message

LUA = Path(__file__).resolve().parent / "data" / "neovim_lsp.lua"
EDITORS = Path(__file__).resolve().parent.parent / "docs" / "editors.md"
REQUIRED = os.environ.get("AGENT_ROLLOUT_REQUIRE_NEOVIM") == "1"

CONFIG = (
    "# GRPO run 😀\n"
    "training:\n"
    "  rollout_fucn: pkg.mod:play  # 😀 a typo\n"
    "  note: '😀 é'\n"
    "  rollout_backend: Open-Env\n"
    "  rollout_max_steps: 010\n"
    "  rollout_judge_model: j\n"
)


def nvim() -> str:
    found = shutil.which("nvim")
    if found is None:
        if REQUIRED:
            pytest.fail("AGENT_ROLLOUT_REQUIRE_NEOVIM=1 but nvim is not on PATH")
        pytest.skip("nvim is not on PATH (apt-get install neovim; CI installs it)")
    return found


def documented_fix_all() -> str:
    """The fix-all command docs/editors.md gives for Neovim 0.7."""
    text = EDITORS.read_text(encoding="utf-8")
    found = re.search(r"on Neovim 0\.7 \(tested\),\s+`:(lua [^`]+)`", text)
    assert found is not None, "docs/editors.md: no fix-all command for Neovim 0.7"
    return found.group(1)


def run_neovim(tmp_path: Path, text: str, mode: str = "test", **env: str) -> dict[str, Any]:
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "report.json"
    environment = cli_env()
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        environment[name] = str(tmp_path / name.lower())
    environment.update(
        AR_FILE=str(config),
        AR_CMD=json.dumps(cli_argv("lsp")),
        AR_OUT=str(out),
        AR_MODE=mode,
        AR_FIX_ALL=documented_fix_all(),
        **env,
    )
    done = subprocess.run(
        [nvim(), "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {LUA}"],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert out.exists(), done.stderr.decode(errors="replace")[-2000:]
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in report, report.get("error")
    return report


def as_neovim_sees(text: str) -> list[tuple[Any, ...]]:
    """check's issues as Neovim shows them: 0-based lines, byte columns."""
    lines = text.split("\n")
    result = check_bytes(text, skip_unrelated=True)
    found = []
    for issue in [*result.issues, *result.warnings]:
        assert issue.end_line is not None and issue.end_col is not None
        start = len(lines[issue.line - 1][: issue.col - 1].encode("utf-8"))
        end = len(lines[issue.end_line - 1][: issue.end_col - 1].encode("utf-8"))
        message = short_message(issue.message)  # the key path is the range's
        severity = 1 if issue.severity == "error" else 2
        where = (issue.line - 1, start, issue.end_line - 1, end)
        found.append((*where, severity, issue.kind, message))
    return sorted(found)


def shown(diagnostics: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    assert all(d["source"] == "agent-rollout" for d in diagnostics)
    return sorted(
        (d["lnum"], d["col"], d["end_lnum"], d["end_col"], d["severity"], d["code"], d["message"])
        for d in diagnostics
    )


def test_neovim_shows_what_check_says_and_applies_the_fixes(tmp_path: Path) -> None:
    report = run_neovim(tmp_path, CONFIG)
    assert shown(report["opened"]) == as_neovim_sees(CONFIG)
    assert {d["code"] for d in report["opened"]} >= {"unknown_key", "value", "yaml_version"}
    edited = CONFIG.replace("rollout_fucn", "rollout_func")
    assert shown(report["edited"]) == as_neovim_sees(edited)
    assert len(report["fix_all_items"]) == 1  # fix-all alone, not the quick fixes too
    assert report["fix_all"].startswith("Fix all agent-rollout issues")
    fixed = "\n".join(report["fixed_lines"]) + "\n"
    assert "  rollout_backend: openenv\n" in fixed
    assert "  rollout_max_steps: 010\n" in fixed  # 8 or 10: an unsafe fix, not for fix-all
    assert "  rollout_func: pkg.mod:play  # 😀 a typo\n" in fixed  # comments stay
    assert shown(report["fixed"]) == as_neovim_sees(fixed)
    # the judge needs ruler; 010 is left for the user to choose
    assert sorted(d["code"] for d in report["fixed"]) == ["cross_field", "yaml_version"]
    assert "**rollout_func**" in report["hover"]
