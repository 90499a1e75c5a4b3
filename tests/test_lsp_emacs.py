"""``agent-rollout lsp`` in a second real editor: a headless Emacs with eglot.

Debian's Emacs 28 and its ``elpa-eglot`` (1.9), or an Emacs 29 and later with
eglot built in, in batch mode. The Emacs side, ``tests/data/eglot_lsp.el``,
loads the set-up docs/editors.md gives for eglot (its elisp block, the server
command replaced by this checkout's), opens a config with mistakes and reads
what Flymake holds (buffer positions: lines and characters as Emacs counts
them, converted by eglot from the UTF-16 the server sent); those are compared
with ``check``'s on the same text. Then a quick fix through
``eglot-code-actions``, the documented ``agent-rollout-fix-all`` (the buffer
must be what ``check --fix`` writes), a hover through eglot's eldoc function,
the documented settings sent as eglot sends them, and a TOML config (on the
same server, which eglot tells it is YAML: its name says TOML). Without ``emacs`` on PATH, or
without eglot, the test skips, unless ``AGENT_ROLLOUT_REQUIRE_EMACS=1`` (CI
installs both and sets it): then it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_rollout.config import check_bytes, fix_text
from support import cli_argv, cli_env

pytest.importorskip("pygls")

from agent_rollout.lsp._diagnostics import short_message

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "data" / "eglot_lsp.el"
EDITORS = HERE.parent / "docs" / "editors.md"
REQUIRED = os.environ.get("AGENT_ROLLOUT_REQUIRE_EMACS") == "1"
TIMEOUT = 120  # seconds for the whole Emacs session; it takes a few

# Flow style on line 2: a diagnostic after an astral character (two UTF-16
# units, one Emacs character) on its line.
CONFIG = (
    "# GRPO run 😀\n"
    "training: {note: '😀 é', rollout_backend: Open-Env, rollout_max_steps: 010,\n"
    "  rollout_fucn: pkg.mod:play, rollout_judge_model: j}  # 😀 a typo\n"
)
TOML = (
    '[training]\nnote = "😀"\nrollout_fucn = "pkg.mod:play"  # 😀\nrollout_backend = "Open-Env"\n'
)


def emacs() -> str:
    found = shutil.which("emacs")
    if found is None:
        if REQUIRED:
            pytest.fail("AGENT_ROLLOUT_REQUIRE_EMACS=1 but emacs is not on PATH")
        pytest.skip("emacs is not on PATH (apt-get install emacs-nox elpa-eglot; CI installs it)")
    return found


def documented_setup() -> str:
    """The elisp block of docs/editors.md's eglot section, run on this checkout's code."""
    text = EDITORS.read_text(encoding="utf-8")
    section = text[text.index("## Emacs (eglot)") :]
    block = re.search(r"```elisp\n(.*?)```", section, re.S)
    assert block is not None, "docs/editors.md: no elisp block under 'Emacs (eglot)'"
    command = '("agent-rollout" "lsp")'
    assert command in block.group(1), f"docs/editors.md: the eglot set-up runs no {command}"
    ours = "(" + " ".join(json.dumps(part) for part in cli_argv("lsp")) + ")"
    return block.group(1).replace(command, ours)


def run_emacs(tmp_path: Path) -> dict[str, Any]:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    toml = tmp_path / "train.toml"
    toml.write_text(TOML, encoding="utf-8")
    setup = tmp_path / "setup.el"
    setup.write_text(documented_setup(), encoding="utf-8")
    out = tmp_path / "report.json"
    environment = cli_env()
    home = tmp_path / "home"
    home.mkdir()
    environment["HOME"] = str(home)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        environment[name] = str(tmp_path / name.lower())
    environment.update(AR_SETUP=str(setup), AR_FILE=str(config), AR_TOML=str(toml), AR_OUT=str(out))
    process = subprocess.Popen(
        [emacs(), "--batch", "-Q", "-l", str(DRIVER)],
        env=environment,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the server too, on a timeout
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"Emacs did not finish within {TIMEOUT} s:\n" + output.decode()[-3000:])
    said = output.decode(errors="replace")[-3000:]
    assert out.exists(), f"Emacs wrote no report (exit {process.returncode}):\n{said}"
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if report.get("missing") == "eglot":
        if REQUIRED:
            pytest.fail("AGENT_ROLLOUT_REQUIRE_EMACS=1 but eglot cannot be loaded")
        pytest.skip("eglot is not installed (apt-get install elpa-eglot; CI installs it)")
    assert "error" not in report, (
        f"{report['error']}\n--- Emacs:\n{said}\n--- the server's stderr:\n"
        f"{report.get('server_stderr', '')[-3000:]}\n--- eglot's events:\n"
        f"{report.get('events', '')[-6000:]}"
    )
    return report


def as_emacs_sees(text: str, fmt: str = "yaml", strict: bool = False) -> list[tuple[Any, ...]]:
    """check's issues as Flymake holds them: 0-based lines, characters (code points)."""
    result = check_bytes(text, format=fmt, skip_unrelated=True)
    found = []
    for issue in [*result.issues, *result.warnings]:
        assert issue.end_line is not None and issue.end_col is not None
        message = short_message(issue.message)  # the key path is the range's
        error = strict or issue.severity == "error"
        where = (issue.line - 1, issue.col - 1, issue.end_line - 1, issue.end_col - 1)
        kind = "eglot-error" if error else "eglot-warning"
        found.append((*where, kind, f"agent-rollout [{issue.kind}]: {message}"))
    return sorted(found)


def shown(diagnostics: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (d["line"], d["col"], d["end_line"], d["end_col"], d["type"], d["text"])
        for d in diagnostics
    )


def kinds(diagnostics: list[dict[str, Any]]) -> set[str]:
    """The issue kinds in Flymake's texts (``agent-rollout [kind]: message``)."""
    found = [re.match(r"agent-rollout \[(\w+)\]: ", d["text"]) for d in diagnostics]
    return {match.group(1) for match in found if match is not None}


def test_emacs_eglot_shows_what_check_says_and_applies_the_fixes(tmp_path: Path) -> None:
    report = run_emacs(tmp_path)
    assert report["mode"] == "yaml-mode" and report["toml_mode"] == "conf-toml-mode"
    assert shown(report["opened"]) == as_emacs_sees(CONFIG)
    assert kinds(report["opened"]) >= {"unknown_key", "value", "yaml_version"}
    # strict (the documented setting) turns the warning into an error; unset, it is back.
    assert shown(report["strict"]) == as_emacs_sees(CONFIG, strict=True) != shown(report["opened"])
    assert shown(report["not_strict"]) == shown(report["opened"])

    # The quick fix at the typo: that one key renamed, nothing else.
    assert report["quickfix_titles"] and all("rollout_func" in t for t in report["quickfix_titles"])
    quick_fixed = CONFIG.replace("rollout_fucn", "rollout_func")
    assert report["quick_fixed"] == quick_fixed
    assert shown(report["after_quickfix"]) == as_emacs_sees(quick_fixed)

    # Fix all: what `check --fix` writes for the file as it was opened.
    fixed = fix_text(CONFIG, format="yaml", skip_unrelated=True)
    assert fixed.changed and report["fixed"] == fixed.text
    # 010 may be 8 or 10: an unsafe fix, not for fix-all
    assert "rollout_backend: openenv, rollout_max_steps: 010," in report["fixed"]
    assert "# 😀 a typo\n" in report["fixed"]  # comments stay
    assert shown(report["after_fix_all"]) == as_emacs_sees(fixed.text)
    assert kinds(report["after_fix_all"]) == {"cross_field", "yaml_version"}  # judge: ruler

    assert "rollout_func" in report["hover"]
    assert "**" not in report["hover"]  # eglot 1.9 without markdown-mode asks for plain text

    assert shown(report["toml"]) == as_emacs_sees(TOML, "toml")
    assert kinds(report["toml"]) >= {"unknown_key", "value"}
    assert report["servers"] == 1  # one for both formats, as the set-up says
