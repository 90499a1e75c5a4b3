"""Ctrl-C while ``agent-rollout`` starts: exit 130 and one line, as anywhere else.

The console script and ``python -m agent_rollout`` import the package before
``agent_rollout.cli.main`` runs, and ``main`` imports the command's module
before it parses the arguments. An import made to block (a ``sitecustomize``
on ``PYTHONPATH`` whose finder waits when it is asked for one module) lets
the test send SIGINT at exactly that point, every time.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import cli_argv, cli_env, started

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child: POSIX")

BLOCKER = '''
"""Blocks the import of $BLOCK_IMPORT: writes $BLOCK_MARKER, then waits for a signal."""
import os
import sys
import time


class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name == os.environ.get("BLOCK_IMPORT"):
            with open(os.environ["BLOCK_MARKER"], "w"):
                pass
            time.sleep(30)
        return None


sys.meta_path.insert(0, _Blocker())
'''

CONSOLE_SCRIPT = """
import re
import sys
from agent_rollout.cli import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""
"""What pip writes for ``agent-rollout = "agent_rollout.cli:main"``."""


def interrupted_while_importing(
    module: str, argv: list[str], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``, send SIGINT while it imports ``module``, and wait for its end."""
    folder = tmp_path / "hook"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    marker = tmp_path / "blocked"
    env = cli_env(extra_path=folder) | {"BLOCK_IMPORT": module, "BLOCK_MARKER": str(marker)}
    with started(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, cwd=tmp_path
    ) as proc:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@pytest.mark.parametrize(
    "module",
    [
        "agent_rollout._engine",  # the package's own import, before main exists
        "agent_rollout.cli.check",  # the command's module, imported by main
    ],
)
def test_ctrl_c_during_the_imports_of_python_m(module: str, tmp_path: Path) -> None:
    done = interrupted_while_importing(module, cli_argv("check", "x.yaml"), tmp_path)
    # Before main: the package's own line; in main, the command is known and named.
    said = "agent-rollout: " if module == "agent_rollout._engine" else "agent-rollout check: "
    assert (done.returncode, done.stderr, done.stdout) == (130, f"{said}interrupted\n", "")


def test_ctrl_c_during_the_imports_of_the_console_script(tmp_path: Path) -> None:
    script = tmp_path / "agent-rollout"
    script.write_text(CONSOLE_SCRIPT, encoding="utf-8")
    argv = [sys.executable, str(script), "normalise", "in.jsonl"]
    done = interrupted_while_importing("agent_rollout._engine", argv, tmp_path)
    assert (done.returncode, done.stderr, done.stdout) == (130, "agent-rollout: interrupted\n", "")


def test_a_program_importing_the_package_gets_its_ctrl_c(tmp_path: Path) -> None:
    # Not the command line: the interrupt goes on to the program, as Python raises it.
    argv = [sys.executable, "-c", "import agent_rollout"]
    done = interrupted_while_importing("agent_rollout._engine", argv, tmp_path)
    assert done.returncode == -signal.SIGINT
    assert done.stderr.rstrip().endswith("KeyboardInterrupt")


def test_text_standard_output_cannot_encode_is_escaped_not_an_internal_error(
    tmp_path: Path,
) -> None:
    """A value the report shows (``é``) under ``PYTHONIOENCODING=ascii``: escaped as
    standard error escapes it, for every command (here check), never an internal error."""
    config = tmp_path / "e.yaml"
    config.write_text('training:\n  rollout_backend: "é"\n', encoding="utf-8")
    done = subprocess.run(
        cli_argv("check", str(config)),
        env={**cli_env(), "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert b"rollout_backend='\\xe9' is not supported" in done.stdout
    assert b"internal error" not in done.stderr
