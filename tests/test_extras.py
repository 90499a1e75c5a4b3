"""What to install: every hint names packages that exist today, from one table.

``agent_rollout._extras.EXTRAS`` holds the requirements of each extra of
``pyproject.toml``; every message about a missing optional package is built
from it (``install_hint``). A missing one on the command line is a usage
error: exit 2 and one line saying what to install, never "internal error".
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import agent_rollout
from agent_rollout._extras import EXTRAS, install_hint, pip_command
from agent_rollout.backends import BACKEND_NAMES, get_rollout_backend_spec
from support import Cli, cli_env, write_jsonl

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "python" / "agent_rollout"
WORKING_SETS = ("test", "bench", "dev")
"""The extras of pyproject.toml that are for working on the package, not features."""


def _pyproject_extras() -> dict[str, tuple[list[str], str]]:
    """Each feature extra of pyproject.toml: its requirements (the package's own extras
    expanded) and its environment marker (``""``: none)."""
    tomllib = pytest.importorskip("tomllib")
    pyproject = REPO / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("needs the source tree (not an installed wheel)")
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]

    def expand(name: str) -> list[tuple[str, str]]:
        found = []
        for entry in declared[name]:
            requirement, _, marker = (part.strip() for part in entry.partition(";"))
            own = re.fullmatch(r"agent-rollout\[([a-z-]+)\]", requirement)
            found.extend(expand(own.group(1)) if own else [(requirement, marker)])
        return found

    extras = {}
    for name in declared:
        if name not in WORKING_SETS:
            pairs = expand(name)
            extras[name] = ([req for req, _ in pairs], next((m for _, m in pairs if m), ""))
    return extras


def test_the_table_holds_pyprojects_extras() -> None:
    declared = _pyproject_extras()
    assert set(EXTRAS) == set(declared)
    for name, spec in EXTRAS.items():
        requires, marker = declared[name]
        assert list(spec.requires) == requires, name
        if spec.python is None:
            assert marker == "", name
        else:
            assert marker == f"python_full_version >= '{spec.python[0]}.{spec.python[1]}'", name


def test_every_backend_package_is_installed_by_its_extra() -> None:
    for name in BACKEND_NAMES:
        spec = get_rollout_backend_spec(name)
        assert spec.extra in EXTRAS, name
        names = [re.split(r"[<>=\[]", req)[0] for req in EXTRAS[spec.extra].requires]
        for package in (spec.required_package, spec.live_package):
            assert package is None or package in names, (name, package)


def test_hints_name_the_packages_not_the_unpublished_extra() -> None:
    # Nothing is on PyPI under agent-rollout: `pip install 'agent-rollout[art]'` finds nothing.
    assert pip_command("art") == "pip install 'openpipe-art>=0.5.18,<0.6' 'openai>=2.14,<3'"
    assert pip_command("arrow") == "pip install 'pyarrow>=19'"
    assert pip_command("openenv") == "pip install 'openenv-core>=0.3.0,<0.4'"
    assert pip_command("ray") == "pip install 'pyarrow>=19' 'ray[data]>=2.40'"
    assert pip_command("lsp") == "pip install 'pygls>=2,<3' 'lsprotocol>=2025.0.0'"
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted(PACKAGE.rglob("*"))
        if path.suffix in {".py", ".yaml"} and path.name != "_extras.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "agent-rollout[" in line
    ]
    assert offenders == []


@pytest.mark.parametrize(("version", "said"), [((3, 11), True), ((3, 12), False)])
def test_the_gym_hint_says_which_python_it_needs(
    version: tuple[int, int], said: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "version_info", (*version, 7, "final", 0))
    hint = install_hint("nemo-gym")
    assert hint.startswith("pip install 'nemo-gym>=0.4,<0.5'")
    assert ("needs Python 3.12+ (this is Python 3.11)" in hint) == said


def test_the_live_gym_backend_on_an_older_python_says_it_needs_312(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent_rollout.backends import require_backend_package

    monkeypatch.setattr(sys, "version_info", (3, 11, 7, "final", 0))
    monkeypatch.setitem(sys.modules, "nemo_gym", None)
    with pytest.raises(ImportError) as caught:
        require_backend_package("nemo_gym", live=True)
    text = str(caught.value)
    assert "'nemo-gym'" in text and "pip install 'nemo-gym>=0.4,<0.5'" in text
    assert "needs Python 3.12+" in text


# ---- the command line: a missing package is a usage error ----------------------------------


@pytest.fixture
def without_pyarrow(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``import pyarrow`` fails (a ``None`` in ``sys.modules``), and ``agent_rollout.arrow``
    is imported afresh, for this test only."""
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    for name in list(sys.modules):
        if name == "agent_rollout.arrow" or name.startswith("agent_rollout.arrow."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(agent_rollout, "arrow", raising=False)
    yield


def test_parquet_without_pyarrow_is_a_usage_error(
    tmp_path: Path, engine: str, without_pyarrow: None, cli: Cli
) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", [{"prompt": "hi", "answer": "x"}])
    out = tmp_path / "out.parquet"
    result = cli("normalise", str(src), "-o", str(out))
    assert result.code == 2
    assert "internal error" not in result.err
    assert result.err.count("\n") == 1, result.err
    assert (
        result.err
        == f"agent-rollout normalise: pyarrow is not installed: {install_hint('arrow')}\n"
    )
    assert not out.exists()


def test_a_half_installed_extra_is_a_usage_error_too() -> None:
    """pygls is there but its lsprotocol is not: the server, which answers its first
    messages before it loads pygls, does not start; the line names the module missing
    and what installs the extra. (A process: the test replaces a third-party package
    for the whole import.)"""
    messages = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}',
        b'{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}',
    )
    code = (
        "import sys; sys.modules['lsprotocol'] = None\n"
        "from agent_rollout.cli import main\n"
        "sys.exit(main(['lsp']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(m), m) for m in messages),
        capture_output=True,
        env=cli_env(),
        timeout=60,
    )
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "internal error" not in err and "Traceback" not in err
    assert err == f"agent-rollout lsp: lsprotocol is not installed: {install_hint('lsp')}\n"
    assert done.stdout == b""  # not one answer: nothing started
