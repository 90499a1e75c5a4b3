"""``agent-rollout demo`` with its live rollout: the progress line while the OpenEnv drill
server starts and serves (several seconds, which were silent), on a terminal only; the
server's start and the rollout timed apart (the rollout's figure was mostly the start)."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest

from support import cli_argv, cli_env, run_in_pty

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal: POSIX"),
    pytest.mark.skipif(
        importlib.util.find_spec("openenv") is None, reason="openenv-core is not installed"
    ),
]


def test_the_live_rollout_draws_a_progress_line() -> None:
    code, out, err = run_in_pty(cli_argv("demo", "--rows", "1000"), cli_env())
    assert code == 0, err
    assert b"2. rollout  starting the OpenEnv drill server on 127.0.0.1  " in err, err
    two = (
        rb"^2\. rollout 6 rows from 6 seed prompts, live, OpenEnv drill server at http://127\.0\.0"
    )
    two += rb"\.1:\d+: server started in \d+\.\d\d s; 6 rows in \d+\.\d\d s\r?$"
    assert re.search(two, out, re.M), out
