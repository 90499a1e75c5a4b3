"""Helpers shared by the tests (and by ``fuzz/fuzz.py``, run as a script too).

- Engines: ``ENGINES``, ``use_engine(name)``, ``on_engine(name, call)``; the
  ``engine`` fixture of ``conftest.py`` is built on them. Nothing else in the
  tests switches engines.
- Comparing results: ``typed`` and its variants tag every node with its exact
  type; the ``*outcome*`` helpers turn a call into a value two engines can be
  compared on (each keeps the semantics of the copy it replaces: they differ
  in what an error is reduced to, and in how results are typed).
- Hostile types used by several files (``Image``, ``Count``), and the checks
  every returned row must pass (``check_rows``).
- Files: ``temp_files`` (the writers' leftovers), ``canonical`` (the bytes the
  writers produce).
- The command line: ``run_cli`` runs ``agent_rollout.cli.main`` in this
  process with its output captured at the file-descriptor level;
  ``cli_process``, ``cli_argv``, ``cli_env`` and ``run_in_pty`` run a real
  ``python -m agent_rollout``, for the tests where the process is the point
  (signals, a terminal, standard input, a crash, the entry point itself);
  ``started`` is ``subprocess.Popen`` for a ``with`` block that leaves no
  process or pipe behind (the suite fails on a ``ResourceWarning``);
  ``UserModules`` makes user code written to a temp folder importable for one
  test (the ``user_modules`` fixture of ``conftest.py``).
- Messages: ``facts(*parts)``, the ``pytest.raises(match=...)`` pattern of a message's
  key facts; a message's whole text is pinned in ``test_messages.py`` only.

This module may use the package's private names (the house checker allows it
here and in ``conftest.py`` only); test modules go through it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from hypothesis import strategies as st

import agent_rollout
from agent_rollout import _engine, _launch, normalise_rollout_rows

# ---- engines ---------------------------------------------------------------------------------

ENGINES: list[str] = ["python", "rust"] if _engine.native_available() else ["python"]
"""The engines this session can run: the Rust one only when it was imported."""


@contextmanager
def use_engine(name: str) -> Iterator[str]:
    """Run the block with engine ``name`` active; the one active before is restored."""
    previous = _engine.set_engine(name)  # type: ignore[arg-type]
    try:
        yield name
    finally:
        _engine.set_engine(previous)


def on_engine(name: str, call: Callable[[], Any]) -> Any:
    """``call()`` with engine ``name`` active."""
    with use_engine(name):
        return call()


def native_module() -> Any:
    """The Rust engine's module (``agent_rollout._native``), None where it was not imported:
    for the tests that read or patch a constant of it (``BUILD_PROFILE``)."""
    return _engine.native


# ---- type-tagged values ----------------------------------------------------------------------


def typed(value: Any) -> Any:
    """The value with every node tagged by its exact type, so ``1 != True != 1.0``.

    Dict key order counts; floats compare by value (``0.0 == -0.0``) except
    that NaN equals NaN. Subclasses of dict, list and tuple are tagged by
    ``isinstance``; other values by their own type's name.
    """
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def typed_bits(value: Any) -> Any:
    """As ``typed``, but floats compare by their bits (``float.hex``): ``0.0 != -0.0``."""
    if isinstance(value, dict):
        return ("dict", [(typed_bits(k), typed_bits(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed_bits(v) for v in value])
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


def typed_unordered(value: Any) -> Any:
    """As ``typed``, but the key order of dicts is ignored.

    A message comes back from Arrow with ``role`` and ``content`` first; the
    rows are equal, and ``typed`` would see the order.
    """
    if isinstance(value, dict):
        return (
            "dict",
            sorted((repr(typed_unordered(k)), typed_unordered(v)) for k, v in value.items()),
        )
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed_unordered(v) for v in value])
    return typed(value)


def typed_json(value: Any) -> Any:
    """As ``typed_bits``, for exact JSON-like types only: anything else is an AssertionError.

    A dict, list or tuple subclass, or any other type, fails: what the
    engines return holds exact built-in types.
    """
    kind = type(value)
    if kind is dict:
        return ("dict", [(typed_json(k), typed_json(v)) for k, v in value.items()])
    if kind is list or kind is tuple:
        return (kind.__name__, [typed_json(v) for v in value])
    if kind is float:
        return ("float", value.hex())
    if kind in (str, int, bool, type(None)):
        return (kind.__name__, value)
    raise AssertionError(f"a result holds a {kind.__name__}")


# ---- the rules every returned row obeys ------------------------------------------------------


def check_clean(value: Any, level: int = 0) -> None:
    """Every value in an output row is of an exact JSON-like type; dict keys are exact str."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            assert type(key) is str, key
            check_clean(item, level + 1)
    elif kind is list:
        for item in value:
            check_clean(item, level + 1)
    else:
        assert kind in (str, int, float, bool, type(None)), kind


def check_rows(rows: Any) -> None:
    """The rules hold for every row of a result (a non-empty tuple of exact dicts)."""
    assert type(rows) is tuple and rows, type(rows)
    for row in rows:
        assert type(row) is dict and set(row) <= {"prompt", "answer"}, row
        prompt = row["prompt"]
        if type(prompt) is str:
            assert prompt
        else:
            assert type(prompt) is list and prompt, type(prompt)
            for message in prompt:
                assert type(message) is dict, type(message)
                role = message.get("role")
                assert type(role) is str and role, role
                check_clean(message)
        if "answer" in row:
            assert type(row["answer"]) is str and row["answer"]
        typed_json(row)  # only JSON-like exact types inside, keys included


# ---- the arrow package's module globals -------------------------------------------------------


def arrow_modules(name: str) -> list[Any]:
    """``agent_rollout.arrow``, its modules and ``agent_rollout._engine.arrow``, those that
    hold ``name``: a test changing a bound or a function changes it in each, wherever the
    package reads it."""
    import importlib
    import pkgutil

    package = importlib.import_module("agent_rollout.arrow")
    modules = [package, importlib.import_module("agent_rollout._engine.arrow")] + [
        importlib.import_module(f"agent_rollout.arrow.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
    ]
    return [module for module in modules if hasattr(module, name)]


def patch_arrow(patch: Any, name: str, value: Any, **options: Any) -> None:
    """``patch.setattr`` (a pytest ``MonkeyPatch``) of ``name`` in every ``arrow_modules(name)``."""
    for module in arrow_modules(name):
        patch.setattr(module, name, value, **options)


# ---- outcomes: what a call did, comparable across engines ------------------------------------

ERROR_FACTS = ("line", "column", "index", "path", "code", "source")
"""The attributes of the package's errors that say where and why."""

OS_ERROR_FACTS = (*ERROR_FACTS, "errno", "filename")


def error_facts(exc: BaseException, names: Iterable[str] = ERROR_FACTS) -> tuple[Any, ...]:
    """``((name, value), ...)`` of ``exc``'s attributes ``names`` (``None`` where missing)."""
    return tuple((name, getattr(exc, name, None)) for name in names)


def outcome_on(engine: str, fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """``fn(*args, **kwargs)`` on ``engine``: ``("ok", result)`` or
    ``("error", (type name, text))``."""
    with use_engine(engine):
        try:
            return "ok", fn(*args, **kwargs)
        except Exception as exc:
            return "error", (type(exc).__name__, str(exc))


def indexed_outcome_on(engine: str, fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """As ``outcome_on``; an error is ``(type name, text, its .index or None)``."""
    with use_engine(engine):
        try:
            return "ok", fn(*args, **kwargs)
        except Exception as exc:
            return "error", (type(exc).__name__, str(exc), getattr(exc, "index", None))


def rows_outcome_on(engine: str, data: Any, max_rows: int) -> tuple[str, Any]:
    """``normalise_rollout_rows(data, max_rows=...)`` on ``engine``: ``("ok", rows)`` or
    ``("error", (type name, text, .index, .path))``."""
    with use_engine(engine):
        try:
            return "ok", normalise_rollout_rows(data, max_rows=max_rows)
        except Exception as exc:
            return "error", (
                type(exc).__name__,
                str(exc),
                getattr(exc, "index", None),
                getattr(exc, "path", None),
            )


def typed_outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What ``call`` did: ``("ok", typed_bits(result))``, or its exception's type name,
    text and facts (``OS_ERROR_FACTS``: errno and filename too)."""
    try:
        return ("ok", typed_bits(call()))
    except Exception as exc:  # a PanicException (BaseException) escapes
        return ("error", type(exc).__name__, str(exc), error_facts(exc, OS_ERROR_FACTS))


def checked_outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """What ``call`` did, the rows checked: a tuple result must pass ``check_rows`` and
    is ``("ok", typed_json(rows))``; another result is ``("ok", result)``; an
    exception is its type name, text and facts (``ERROR_FACTS``)."""
    try:
        result = call()
    except Exception as exc:  # a PanicException (BaseException) escapes: a bug
        return ("error", type(exc).__name__, str(exc), error_facts(exc))
    if isinstance(result, tuple):
        check_rows(result)
        return ("ok", typed_json(result))
    return ("ok", result)


def row_outcome(rows: Any) -> tuple[str, Any, Any]:
    """``normalise_rollout_rows(rows)`` on the active engine: ``("rows", result, None)``
    (the result passing ``check_rows``) or ``("error", exception type, text)``."""
    try:
        result = normalise_rollout_rows(rows)
    except Exception as err:  # the type is part of the outcome
        return ("error", type(err), str(err))
    check_rows(result)
    return ("rows", result, None)


def compare_engines(call: Callable[[], Any]) -> tuple[Any, ...]:
    """``("same",)`` when both engines return equal values or raise the same error
    (type name and text); else what each did, Python's first."""
    seen = []
    for name in ("python", "rust"):
        with use_engine(name):
            try:
                seen.append(("ok", call()))
            except Exception as exc:  # the error itself is compared
                seen.append((type(exc).__name__, str(exc)))
    return ("same",) if seen[0] == seen[1] else tuple(seen)


# ---- gzip members written by hand -----------------------------------------------------------


def gzip_member(
    data: bytes,
    flags: int = 0,
    *,
    method: int = 8,
    rest: bytes = b"\0\0\0\0\0\xff",
    extra: bytes = b"n",
    name: bytes = b"n",
    comment: bytes = b"n",
    header_crc_xor: int = 0,
    crc_xor: int = 0,
    size_add: int = 0,
) -> bytes:
    """One gzip member written by hand (RFC 1952). ``flags`` picks the optional header
    fields (extra 0x04, name 0x08, comment 0x10, header CRC 0x02) and may set the
    reserved bits; ``rest`` is the mtime, XFL and OS bytes. The ``_xor``/``_add``
    arguments damage the header CRC, the data's CRC-32 and its length."""
    head = b"\x1f\x8b" + bytes([method, flags]) + rest
    if flags & 0x04:
        head += len(extra).to_bytes(2, "little") + extra
    for flag, field in ((0x08, name), (0x10, comment)):
        if flags & flag:
            head += field + b"\0"
    if flags & 0x02:
        head += ((zlib.crc32(head) & 0xFFFF) ^ header_crc_xor).to_bytes(2, "little")
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    crc = zlib.crc32(data) ^ crc_xor
    return head + body + crc.to_bytes(4, "little") + (len(data) + size_add).to_bytes(4, "little")


# ---- hostile types used by more than one file ------------------------------------------------


class Image:
    """A value of no JSON-like type."""


class Count(int):
    """An int subclass: rows come back with a plain ``int``."""


# ---- random rows (hypothesis) ----------------------------------------------------------------


class Label(str):
    """A str subclass: as a value or a key, rows come back with a plain ``str``."""


scalars = st.one_of(
    st.text(max_size=6),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
json_scalars = st.one_of(
    st.text(max_size=6),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
odd_scalars = st.one_of(
    st.builds(Image),
    st.binary(max_size=3),
    st.frozensets(st.integers(), max_size=2),
    st.complex_numbers(allow_nan=False, allow_infinity=False),
    st.text(max_size=4).map(Label),
    st.integers().map(Count),
)
keys = st.one_of(st.text(max_size=5), st.sampled_from(["role", "content", "a b", 'q"']))
odd_keys = st.one_of(keys, st.integers(), st.text(max_size=3).map(Label))


def row_values(odd: bool) -> st.SearchStrategy[Any]:
    leaves = st.one_of(scalars, odd_scalars) if odd else json_scalars
    key_strategy = odd_keys if odd else keys
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(key_strategy, inner, max_size=3),
            st.dictionaries(key_strategy, inner, max_size=3).map(OrderedDict),
        ),
        max_leaves=8,
    )


def row_messages(odd: bool) -> st.SearchStrategy[Any]:
    roles = (
        st.one_of(st.sampled_from(["system", "user", "assistant", ""]), st.integers(), st.none())
        if odd
        else st.sampled_from(["system", "user", "assistant"])
    )
    message = st.builds(
        lambda role, extra, drop_role: extra | ({} if drop_role else {"role": role}),
        roles,
        st.dictionaries(odd_keys if odd else keys, row_values(odd), max_size=3),
        st.booleans() if odd else st.just(False),
    )
    if odd:
        message = st.one_of(message, scalars, st.lists(scalars, max_size=2))
    return message


def row_strategy(odd: bool) -> st.SearchStrategy[Any]:
    """Random rollout rows: JSON-like ones, or (``odd``) anything a caller may pass."""
    prompt = st.one_of(st.text(max_size=8), st.lists(row_messages(odd), max_size=3))
    answer = st.one_of(st.none(), st.text(max_size=5))
    if odd:
        prompt = st.one_of(prompt, scalars, st.tuples(row_messages(odd)))
        answer = st.one_of(answer, scalars)
    row = st.builds(
        lambda p, a, extra: {"prompt": p, "answer": a} | extra,
        prompt,
        answer,
        st.dictionaries(st.sampled_from(["reward", "id", "meta"]), row_values(odd), max_size=2),
    )
    if odd:
        row = st.one_of(row, st.dictionaries(keys, row_values(odd), max_size=2), scalars)
    return row


# ---- files -----------------------------------------------------------------------------------


def temp_files(folder: Path) -> list[str]:
    """The writers' temporary files left in ``folder`` (sorted names ending in ``.tmp``)."""
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


def write_jsonl(path: Path, rows: list[Any], compact: bool = False) -> Path:
    """``rows`` written to ``path`` one a line, with ``json.dumps``' defaults or
    (``compact``) with no whitespace and no ``\\u`` escape of a printable character, as
    compact writers (orjson, serde_json, our own output) spell JSON; returns ``path``."""
    if compact:
        lines = (json.dumps(row, separators=(",", ":"), ensure_ascii=False) for row in rows)
    else:
        lines = (json.dumps(row) for row in rows)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def without_null_keys(row: dict) -> dict:
    """A row as it reads back from Arrow: message keys whose value is None are absent."""
    if isinstance(row["prompt"], str):
        return row
    prompt = [{k: v for k, v in message.items() if v is not None} for message in row["prompt"]]
    return {**row, "prompt": prompt}


def canonical(rows: Iterable[Any]) -> bytes:
    """``rows`` as the writers write them: compact JSON, UTF-8, one line each."""
    return b"".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for row in rows
    )


# ---- the command line, in this process -------------------------------------------------------

PACKAGE_ROOT = Path(agent_rollout.__file__).resolve().parent.parent
"""The folder ``agent_rollout`` is imported from (``python/`` in a clone)."""

EXAMPLES = Path(__file__).resolve().parent.parent / "python" / "agent_rollout" / "examples"
if not EXAMPLES.is_dir():  # an installed package: use its copy of the examples
    import agent_rollout.examples

    EXAMPLES = Path(agent_rollout.examples.__file__).resolve().parent
BUNDLED_CONFIG = EXAMPLES / "grpo.yaml"
BUNDLED_PROMPTS = EXAMPLES / "prompts.jsonl"
BUNDLED_ANSWERS: tuple[str, ...] = ("42", "108", "-7", "10", "1000", "9")
"""The right answer to each bundled seed prompt (``prompts.jsonl``), in file order:
17 + 25, 12 * 9, 4 - 11, the words of a 10-word sentence, 250 + 750, the words of a
9-word sentence. Written by hand, not computed: every bundled backend that runs on
these prompts must write exactly these answers."""
OFFLINE = "agent_rollout.examples.openenv_rollout:offline_rollout"

DEBUG_ENV = "AGENT_ROLLOUT_DEBUG"
PURE_PYTHON_ENV = "AGENT_ROLLOUT_PURE_PYTHON"


@dataclass(frozen=True)
class CliResult:
    """One in-process run: the exit code and what went to standard output and error
    (``str`` under ``capfd``, ``bytes`` under ``capfdbinary``)."""

    code: int
    out: Any
    err: Any


Cli = Callable[..., CliResult]
"""The type of the ``cli`` / ``cli_bytes`` fixtures: ``run_cli`` bound to a capture."""


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


_WATCHED_SIGNALS = [
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
]


def _process_state() -> dict[str, Any]:
    """What a command run in this process must leave as it found it."""
    return {
        "environment": dict(os.environ),
        "working directory": os.getcwd(),
        "import path": list(sys.path),
        "signal handlers": {signum: signal.getsignal(signum) for signum in _WATCHED_SIGNALS},
        "registered runners": dict(_launch._runners),
    }


def _restore(state: dict[str, Any]) -> None:
    os.environ.clear()
    os.environ.update(state["environment"])
    os.chdir(state["working directory"])
    sys.path[:] = state["import path"]
    for signum, handler in state["signal handlers"].items():
        if handler is not None:
            signal.signal(signum, handler)
    _launch._runners.clear()
    _launch._runners.update(state["registered runners"])


def run_cli(capture: Any, *argv: str) -> CliResult:
    """``agent-rollout ARGV...`` in this process: ``agent_rollout.cli.main([...])``.

    ``capture`` is pytest's ``capfd`` (text) or ``capfdbinary`` (bytes): the
    output is taken at the file-descriptor level, as the Rust engine writes
    ``-o -`` straight to descriptor 1. Output printed before the call is
    dropped; the result holds this call's only. An argparse usage error
    (``SystemExit``) becomes its exit code, as in a real process. The engine
    is the active one (the ``engine`` fixture or ``use_engine``).
    ``AGENT_ROLLOUT_DEBUG`` is unset for the call, as ``cli_env`` does for a
    process. The command must leave the environment, the working directory,
    ``sys.path``, the SIGINT/SIGTERM/SIGHUP handlers and the registered
    rollout runners as it found them: a leak is restored, then fails the test.
    """
    from agent_rollout.cli import main

    sys.stdout.flush()
    sys.stderr.flush()
    capture.readouterr()
    debug = os.environ.pop(DEBUG_ENV, None)
    try:
        before = _process_state()
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse: a usage error (2), --help or --version (0)
            code = _exit_code(exc)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        after = _process_state()
    finally:
        if debug is not None:
            os.environ[DEBUG_ENV] = debug
    captured = capture.readouterr()
    leaked = [what for what in before if before[what] != after[what]]
    if leaked:
        _restore(before)
        raise AssertionError(
            f"agent-rollout {' '.join(argv)} changed the process's {', '.join(leaked)}\n"
            f"stderr: {captured.err!r}"
        )
    return CliResult(code, captured.out, captured.err)


class UserModules:
    """Folders of user code (rollout functions...) importable for one test only.

    ``add(folder)`` puts the folder first on ``sys.path`` (``monkeypatch``
    takes it off again); ``forget()`` removes every module imported from
    these folders from ``sys.modules``, so the next test imports its own
    copy, as a fresh process would. The ``user_modules`` fixture calls it.
    """

    def __init__(self, monkeypatch: Any) -> None:
        self.monkeypatch = monkeypatch
        self.folders: list[Path] = []

    def add(self, folder: Path) -> Path:
        self.monkeypatch.syspath_prepend(str(folder))
        self.folders.append(Path(folder).resolve())
        return folder

    def forget(self) -> None:
        for name, module in list(sys.modules.items()):
            where = getattr(module, "__file__", None)
            if where and any(Path(where).resolve().is_relative_to(f) for f in self.folders):
                del sys.modules[name]


def write_config(folder: Path, rollout_func: str, name: str = "config.yaml") -> Path:
    """The bundled example config (``grpo.yaml``) with another rollout_func."""
    text = BUNDLED_CONFIG.read_text(encoding="utf-8")
    original = "rollout_func: agent_rollout.examples.openenv_rollout:rollout"
    assert original in text
    path = folder / name
    path.write_text(text.replace(original, f"rollout_func: {rollout_func}"), encoding="utf-8")
    return path


def bundled_seeds() -> list[Any]:
    lines = BUNDLED_PROMPTS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def expected_offline_bytes() -> bytes:
    """What ``run`` writes for the bundled prompts with the offline OpenEnv rollout."""
    from agent_rollout.examples.openenv_rollout import offline_rollout

    return canonical(normalise_rollout_rows(offline_rollout(bundled_seeds())))


# ---- the command line, as a real process -----------------------------------------------------


def cli_env(engine: Optional[str] = None, extra_path: Optional[Path] = None) -> dict[str, str]:
    """The environment of a ``python -m agent_rollout`` process.

    The package (and ``extra_path``) on ``PYTHONPATH``; ``AGENT_ROLLOUT_DEBUG``
    unset; ``engine="python"`` sets ``AGENT_ROLLOUT_PURE_PYTHON=1``, any other
    value (``None`` included) unsets it: the default engine.
    """
    env = dict(os.environ)
    paths = [str(extra_path) if extra_path else "", str(PACKAGE_ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    env.pop(DEBUG_ENV, None)
    env.pop(PURE_PYTHON_ENV, None)
    if engine == "python":
        env[PURE_PYTHON_ENV] = "1"
    return env


def cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent_rollout", *args]


def cli_process(
    *args: str,
    stdin: bytes = b"",
    engine: Optional[str] = None,
    extra_path: Optional[Path] = None,
    env: Optional[dict[str, str]] = None,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m agent_rollout ARGS...`` run to its end; output as bytes."""
    return subprocess.run(
        cli_argv(*args),
        input=stdin,
        capture_output=True,
        env=env or cli_env(engine, extra_path),
        timeout=60,
        check=False,
    )


@contextmanager
def started(argv: list[str], **options: Any) -> Iterator[subprocess.Popen[Any]]:
    """``subprocess.Popen(argv, **options)`` for the block: when it ends, however it
    ends, the process is killed if still running, its pipes are closed and it is
    waited for. ``Popen``'s own ``with`` waits for a process that may never end,
    and raises ``BrokenPipeError`` closing a standard input it could not write."""
    proc = subprocess.Popen(argv, **options)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass  # input left unwritten (the file is closed all the same)
        proc.wait()


def run_in_pty(argv: list[str], env: dict[str, str]) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with standard error on a pseudo-terminal; (exit code, stdout, stderr)."""
    import pty  # POSIX only: imported here so that this module imports on Windows too
    import select

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    seen: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # EIO: every writer of the terminal has gone
                    break
                if not data:
                    break
                seen.append(data)
            elif proc.poll() is not None:
                break
        assert proc.stdout is not None
        with proc.stdout:
            out = proc.stdout.read()
        code = proc.wait(timeout=10)
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    return code, out, b"".join(seen)


SMALL_ROW = b'{"prompt":"q","answer":"a","id":7}\n'


class FifoFeeder:
    """Writes rollout rows into a named pipe from a thread, the way a producer would."""

    def __init__(self, path: Path, keep_writing: bool) -> None:
        self.path = path
        self.keep_writing = keep_writing
        self.started = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def _feed(self) -> None:
        block = SMALL_ROW * 30_000  # about 1 MB
        try:
            with open(self.path, "wb") as pipe:
                for _ in range(4):
                    pipe.write(block)
                pipe.flush()
                self.started.set()
                for _ in range(500):
                    if self.stop.wait(0.02):
                        break
                    if self.keep_writing:
                        pipe.write(block)
                        pipe.flush()
        except BrokenPipeError:
            pass
        finally:
            self.started.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=20)


# ---- messages: their facts here, their wording in test_messages.py ---------------------------


def facts(*parts: object) -> str:
    """A ``pytest.raises(match=...)`` (or ``re.search``) pattern: the text holds every part.

    Each part is a fact of the message: the key, the bad value or its type name,
    the limit, the backend (``str(part)``, matched literally, in any order, each
    as a whole word where it starts or ends with a letter, digit or ``_``: ``0``
    does not match inside ``100000``, ``register`` not inside ``unregister``).
    The wording around the facts is pinned in one place, ``test_messages.py``,
    so that rewording a message changes that file only.
    """
    import re

    assert parts, "facts() needs at least one fact"
    looks = []
    for part in parts:
        text = str(part)
        assert text, "an empty fact matches anything"
        start = r"(?<!\w)" if re.match(r"\w", text[0]) else ""
        end = r"(?!\w)" if re.match(r"\w", text[-1]) else ""
        looks.append(f"(?=.*?{start}{re.escape(text)}{end})")
    return "(?s)^" + "".join(looks)
