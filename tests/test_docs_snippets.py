"""Every Python snippet in README.md and docs/ runs.

The snippets of one Markdown file run in order, in one namespace (a later
snippet may use what an earlier one defined, as a reader would), in a fresh
working directory. What a snippet needs is given to it here, not faked:

- the JSONL files it names and does not write (rollout rows; Gym task rows
  for ``gym*.jsonl``) are created first;
- a snippet naming ``http://127.0.0.1:8000/v1`` (an LLM judge, as `vllm
  serve` would give) runs against a local OpenAI-compatible judge server
  started for it on a free port (the URL is rewritten to that port);
- a snippet using OpenEnv or ART needs those packages (skipped with the
  reason when they are not installed).

A snippet that cannot run here is marked in the Markdown with a comment line
``<!-- snippet: skip <reason> -->`` just before its fence; the skipped ones
are counted in ``test_snippet_inventory``.

The README's first tour (the ``bash`` block after ``<!-- tour: ... -->``) runs as
a user pastes it: in bash, in an empty folder whose ``.venv`` is the virtual
environment these tests run in (``make test``'s own ``.venv``), with no
``agent-rollout`` on ``PATH`` until the block's ``source .venv/bin/activate``
puts the installed command there. Each command exits 0 but those whose comment
says ``# exit N``, which must exit N.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from support import ENGINES, PURE_PYTHON_ENV

REPO = Path(__file__).resolve().parent.parent
FENCE = re.compile(
    r"(?:<!--\s*snippet:\s*skip\s+(?P<skip>.*?)\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S
)
FILE_NAME = re.compile(r"""["']([\w./-]+\.jsonl(?:\.gz)?)["']""")
JUDGE_URL = "http://127.0.0.1:8000/v1"


@dataclass
class Snippet:
    path: Path
    line: int
    code: str
    skip: str | None


def snippets_of(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start("code"))
        found.append(Snippet(path, line, match.group("code"), match.group("skip")))
    return found


MARKDOWN = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BY_FILE = {path: snippets_of(path) for path in MARKDOWN}
ALL = [snippet for snippets in BY_FILE.values() for snippet in snippets]


def test_snippet_inventory() -> None:
    skipped = [s for s in ALL if s.skip]
    # Reported, so a reader of the test output sees how many did not run.
    print(f"{len(ALL)} Python snippets in {len(MARKDOWN)} Markdown files; {len(skipped)} skipped")
    for snippet in skipped:
        print(f"  skipped {snippet.path.name}:{snippet.line}: {snippet.skip}")
    assert len(ALL) >= 9
    assert len(skipped) == 0, "every snippet runs here today; a new skip needs a real reason"


ROLLOUT_ROWS = [
    {"prompt": "What is 2 + 2?", "answer": "4"},
    {"prompt": [{"role": "user", "content": "Capital of France?"}], "answer": "Paris"},
]
GYM_ROWS = [
    {
        "responses_create_params": {"input": [{"role": "user", "content": "What is 7 * 6?"}]},
        "expected_answer": "42",
    }
]


def make_inputs(code: str, where: Path) -> None:
    for name in FILE_NAME.findall(code):
        target = where / name
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        rows = GYM_ROWS if Path(name).name.startswith("gym") else ROLLOUT_ROWS
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
        target.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)


@pytest.fixture
def judge_url() -> Iterator[str]:
    # The fake judge of the RULER backend tests: a real HTTP server on loopback.
    from test_backend_ruler import _JudgeHandler

    server = ThreadingHTTPServer(("127.0.0.1", 0), _JudgeHandler)
    server.seen = []  # type: ignore[attr-defined]
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _needs(code: str) -> list[str]:
    needs = []
    if "openenv_rollout:rollout" in code or "serve_drill_env" in code:
        needs.append("openenv")
    if "art_rollout" in code or JUDGE_URL in code or '"ruler"' in code or '"art"' in code:
        needs.append("art")
    return needs


@pytest.mark.parametrize(
    "path", [p for p in MARKDOWN if BY_FILE[p]], ids=lambda p: str(p.relative_to(REPO))
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_snippets_run(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: Any
) -> None:
    snippets = [s for s in BY_FILE[path] if not s.skip]
    for module in {need for s in snippets for need in _needs(s.code)}:
        pytest.importorskip(module, reason=f"a snippet of {path.name} uses {module}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list download
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    saved_environ = dict(os.environ)
    namespace: dict[str, Any] = {"__name__": f"snippets_{path.stem}"}
    try:
        for snippet in snippets:
            code = snippet.code
            if JUDGE_URL in code:
                code = code.replace(JUDGE_URL, request.getfixturevalue("judge_url"))
            make_inputs(code, tmp_path)
            compiled = compile(code, f"{path.relative_to(REPO)}:{snippet.line}", "exec")
            try:
                exec(compiled, namespace)
            except Exception as exc:
                pytest.fail(f"{path.name}:{snippet.line}: {type(exc).__name__}: {exc}")
    finally:
        # A snippet may set variables (the OpenEnv URL): leave the process as it was.
        os.environ.clear()
        os.environ.update(saved_environ)


TOUR = re.compile(r"<!--\s*tour:.*?-->\s*\n```bash\n(?P<code>.*?)```", re.S)
EXPECTED_EXIT = re.compile(r"#\s*exit (\d+)\b")


def readme_tour() -> str:
    readme = REPO / "README.md"
    if not readme.exists():
        pytest.skip("needs the source tree")
    found = TOUR.findall(readme.read_text(encoding="utf-8"))
    assert len(found) == 1, "README.md has one first tour, marked <!-- tour: ... -->"
    return str(found[0])


def tour_exits(tour: str) -> dict[int, int]:
    """The exit code each line of the tour announces (``# exit N``), by line number."""
    return {
        number: int(match.group(1))
        for number, line in enumerate(tour.splitlines(), start=1)
        if (match := EXPECTED_EXIT.search(line))
    }


def without_the_command(path: str) -> str:
    """``PATH`` less every folder holding an ``agent-rollout``: the tour must find it itself."""
    return os.pathsep.join(
        folder
        for folder in path.split(os.pathsep)
        if folder and not Path(folder, "agent-rollout").exists()
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="the tour is a bash block")
@pytest.mark.parametrize("engine", ENGINES)
def test_the_readme_tour_runs_as_pasted(engine: str, tmp_path: Path) -> None:
    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix) or not (venv / "bin" / "agent-rollout").exists():
        pytest.skip("needs a virtual environment with the agent-rollout command installed")
    tour = readme_tour()
    (tmp_path / ".venv").symlink_to(venv, target_is_directory=True)
    codes = tmp_path / "exit-codes"
    # Line 1 of the script is the trap, so the tour's line N is the script's line N + 1.
    script = f"trap 'echo \"$((LINENO - 1)) $?\" >> {codes}' ERR\n{tour}"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", PURE_PYTHON_ENV)}
    env["PATH"] = without_the_command(env.get("PATH", ""))
    if engine == "python":
        env[PURE_PYTHON_ENV] = "1"
    ran = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    seen = codes.read_text().split("\n") if codes.exists() else []
    exits = {int(line.split()[0]): int(line.split()[1]) for line in seen if line}
    assert "command not found" not in ran.stderr, ran.stderr
    assert exits == tour_exits(tour), (exits, ran.stdout, ran.stderr)
    # What the comments promise: the config fixed, the good rows written and looked at.
    assert "rollout_func: pkg.mod:fn" in (tmp_path / "train.yaml").read_text()
    assert len((tmp_path / "rows.jsonl").read_text().splitlines()) == 2
    assert "rows.jsonl: 2 rows" in ran.stdout and f"engine {engine}" in ran.stdout, ran.stdout


def test_the_readme_reads_in_five_minutes() -> None:
    # The front door: what it is, the two commands and a first tour, install, the API, the
    # CLI, links; the depth lives in docs/ (250 lines, the tour included).
    readme = REPO / "README.md"
    if not readme.exists():
        pytest.skip("needs the source tree")
    text = readme.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[:2] for line in first_block] == [["make", "demo"], ["make", "test"]]


DOC_BOUNDS = {"CHANGELOG.md": 150, "docs/benchmarks.md": 250, "docs/development.md": 150}
"""Docs that hold the current state, not its history: each within its bound in lines."""


def test_docs_that_document_stay_within_their_bounds() -> None:
    found = {name: REPO / name for name in DOC_BOUNDS if (REPO / name).exists()}
    if not found:
        pytest.skip("needs the source tree")
    over = {
        name: lines
        for name, path in found.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > DOC_BOUNDS[name]
    }
    assert over == {}, f"over their bounds ({DOC_BOUNDS}): {over}"
