"""The language server's latency beside ruff's server: edit -> diagnostics, start, first edit.

    python benches/bench_lsp.py [--edits N] [--large-edits M] [--starts K] [--no-neovim]

Edits toggle a look-alike key (``rollout_func`` <-> ``rollout_fucn``) on one
line, as an incremental change, so every edit changes the diagnostics; the
time runs from the edit until its ``publishDiagnostics`` (for that version)
arrives.

- Over stdio, three servers side by side, each edit of each in turn (so a
  busy machine's noise falls on the three alike): ``agent-rollout lsp`` on a
  300-line config; ruff's server (``ruff server``, from the venv) on a
  300-line Python file, the same edit (a name toggled to an undefined one);
  and ours again with the pure-Python YAML parser forced
  (``AGENT_ROLLOUT_PURE_YAML=1``: no libyaml). Each driven by a small
  JSON-RPC client of this script (a reader thread timestamps what arrives),
  once a code action was answered (every part of the server loaded); each
  server's CPU time per edit beside. Goal (issue 44): our p95 within 3x
  ruff's, in the same run.
- The first edit after start: ``initialize``, ``initialized``, ``didOpen``
  and at once a ``didChange``, timed to its diagnostics; and an edit sent
  once the first diagnostics are out, right after a code action (the server
  then loads pygls at once, on its thread: the edit meets the load). Each
  beside the p50 of 9 edits of the same server after it, once a code action
  was answered (pygls loaded). Goal: within 5x.
- Start -> first diagnostics (of the document opened right after
  ``initialize``), with the server's CPU time at that moment
  (``/proc/<pid>/stat``), a figure a busy machine inflates far less than the
  wall time; ruff's beside.

Our servers import from cached bytecode (``PYTHONPYCACHEPREFIX`` in a scratch
folder, written by a first start not timed), as an installed package does,
even where the environment sets ``PYTHONDONTWRITEBYTECODE``.
- In process: the session (``agent_rollout.lsp._session``) on a thread over a
  pipe, its output caught at its writer: everything the server does per
  edit, nothing of a client; CPU time beside (all the process's threads). On
  the 300-line config and on one at the size limit (just under
  ``MAX_CONFIG_BYTES``, checked on a worker thread).
- ``check_bytes`` alone (the floor), as the server calls it, then with the
  pure-Python YAML parser, then ``yaml.safe_load`` of the same text, in turn;
  their ratio (goal, issue 44: ``check_bytes`` at most 0.3x
  ``yaml.safe_load``).
- Through Neovim (``nvim --headless``, ``tests/data/neovim_lsp.lua``,
  didChange debounce 0): ``nvim_buf_set_lines`` until ``DiagnosticChanged``;
  skipped where ``nvim`` is not on PATH or with ``--no-neovim``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parent.parent
LUA = REPO / "tests" / "data" / "neovim_lsp.lua"
SERVER = [sys.executable, "-m", "agent_rollout", "lsp"]
TYPO_LINE = 2  # 0-based: the line the edits toggle (rollout_func)


SECTION = """\
# The training run: the trainer's keys and the rollout keys agent-rollout checks.
training:
  rollout_func: my_project.rollouts:play_episode  # one episode per call
  rollout_backend: art
  rollout_max_steps: 64
  rollout_group_size: 8
  rollout_policy_model: Qwen/Qwen2.5-0.5B-Instruct
  rollout_policy_base_url: http://127.0.0.1:8000/v1
  epochs: 1
  learning_rate: 1.0e-6
  per_device_batch_size: 4
  gradient_accumulation_steps: 8
  warmup_ratio: 0.05
  lr_scheduler: cosine
  seed: 42
  logging_steps: 10
  save_steps: 500
  beta: 0.04
  num_generations: 8
  max_new_tokens: 512
"""

BLOCK = """\
# ---- {name}: as a verl-style trainer config lays it out
{name}:
  model:
    path: Qwen/Qwen2.5-0.5B-Instruct
    # the tokenizer defaults to the model's
    tokenizer_path: null
    trust_remote_code: false
    enable_gradient_checkpointing: true
  optim:
    lr: 1.0e-6
    weight_decay: 0.01
    betas: [0.9, 0.999]
    warmup_steps_ratio: 0.0  # no warmup
  data:
    train_files: ~/data/gsm8k/train.parquet
    val_files: ~/data/gsm8k/test.parquet
    prompt_key: prompt
    max_prompt_length: 512
    max_response_length: 512
    shuffle: true
  fsdp:
    param_offload: false
    optimizer_offload: false
    wrap_policy:
      min_num_params: 0
  checkpoint:
    contents: [model, optimizer, extra]
    save_freq: -1
    # where the run writes
    default_local_dir: checkpoints/${{trainer.project_name}}/${{trainer.experiment_name}}
"""


def config_text(target_bytes: int) -> str:
    """A training config: the rollout section first, then verl-style sections up to the size."""
    parts = [SECTION]
    size = len(SECTION)
    index = 0
    while True:
        block = BLOCK.format(name=f"stage_{index}")
        if size + len(block) > target_bytes:
            return "".join(parts)
        parts.append(block)
        size += len(block)
        index += 1


def lines_config(lines: int) -> str:
    text = config_text(200 * lines)
    return "\n".join(text.split("\n")[:lines]) + "\n"


def python_text(lines: int) -> str:
    body = [
        "import os\n",
        "import sys\n",
        "value = os.getcwd()\n",
    ]
    index = 0
    while len(body) < lines:
        body.append(f"def handler_{index}(event, context):\n")
        body.append(f"    return {{'name': event.get('name'), 'n': {index}, 'cwd': value}}\n")
        body.append("\n")
        index += 1
    return "".join(body[:lines])


def typo_edit(text: str, version: int, word: str = "rollout_func") -> tuple[dict[str, Any], str]:
    """The didChange params that toggle ``word`` on the typo line, and the new text."""
    lines = text.split("\n")
    line = lines[TYPO_LINE]
    start = line.index(word[:-2])
    old = line[start : start + len(word)]
    new = word if old != word else word[:-2] + word[-1] + word[-2]
    lines[TYPO_LINE] = line[:start] + new + line[start + len(word) :]
    params = {
        "textDocument": {"uri": "", "version": version},
        "contentChanges": [
            {
                "range": {
                    "start": {"line": TYPO_LINE, "character": start},
                    "end": {"line": TYPO_LINE, "character": start + len(word)},
                },
                "text": new,
            }
        ],
    }
    return params, "\n".join(lines)


def percentiles(times: list[float]) -> str:
    ordered = sorted(times)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {p50:8.2f} ms  p95 {p95:8.2f} ms  (n={len(ordered)})"


# ---- a JSON-RPC client over stdio ----------------------------------------------------------


class StdioClient:
    """Just enough of an LSP client: requests, notifications, timestamped arrivals."""

    def __init__(
        self, argv: list[str], cwd: Optional[str] = None, env: Optional[dict[str, str]] = None
    ) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
        )
        self.inbox: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            body = stream.read(length)
            self.inbox.put((time.perf_counter(), json.loads(body)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            _, message = self.inbox.get(timeout=120)
            if message.get("id") == self.next_id and "method" not in message:
                return message.get("result")
            if "method" in message and "id" in message:  # a request of the server's
                self.send({"id": message["id"], "result": None})

    def published(self, uri: str, version: Optional[int] = None) -> float:
        """When diagnostics for ``uri`` (and ``version``, where the server sends it) arrived."""
        while True:
            when, message = self.inbox.get(timeout=120)
            if "method" in message and "id" in message:
                self.send({"id": message["id"], "result": [None]})
                continue
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            params = message["params"]
            if params["uri"] == uri and (
                version is None or params.get("version") in (None, version)
            ):
                return when

    def cpu_seconds(self) -> float:
        """The server's user + system CPU time so far (Linux)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()


def open_params(uri: str, text: str, language: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}


@dataclass
class Server:
    """A server to time: its command, environment, document and the word its edits toggle."""

    name: str
    argv: list[str]
    path: Path
    language: str
    word: str
    env: Optional[dict[str, str]] = None

    def start(self) -> tuple[StdioClient, str]:
        client = StdioClient(self.argv, cwd=str(self.path.parent), env=self.env)
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        client.notify("initialized", {})
        return client, self.path.as_uri()


class Editing:
    """One server, its document open and every part of it loaded (a code action
    answered): ``edit()`` times one edit to its diagnostics."""

    def __init__(self, server: Server, client: Optional[StdioClient] = None) -> None:
        self.server = server
        if client is None:
            self.client, self.uri = server.start()
            self.text = server.path.read_text(encoding="utf-8")
            self.client.notify(
                "textDocument/didOpen", open_params(self.uri, self.text, server.language)
            )
            self.client.published(self.uri, 1)
            self.version = 1
        else:  # the document open and edited to version 2 (``first_edits``)
            self.client, self.uri = client, server.path.as_uri()
            self.version = 2
            _, self.text = typo_edit(server.path.read_text(encoding="utf-8"), 2, server.word)
        where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
        context: dict[str, Any] = {"diagnostics": []}
        self.client.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": self.uri}, "range": where, "context": context},
        )

    def edit(self) -> float:
        self.version += 1
        params, self.text = typo_edit(self.text, self.version, self.server.word)
        params["textDocument"]["uri"] = self.uri
        sent = time.perf_counter()
        self.client.notify("textDocument/didChange", params)
        return (self.client.published(self.uri, self.version) - sent) * 1000


def side_by_side(
    servers: list[Server], edits: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """``edits`` edits of each server, each server's in turn (ms); and each server's CPU
    time per edit (ms, ``/proc``), from before the first edit to after the last."""
    sessions = [Editing(server) for server in servers]
    times: dict[str, list[float]] = {server.name: [] for server in servers}
    before = {session.server.name: session.client.cpu_seconds() for session in sessions}
    for _ in range(edits):
        for session in sessions:
            times[session.server.name].append(session.edit())
    cpu = {
        session.server.name: (session.client.cpu_seconds() - before[session.server.name])
        * 1000
        / edits
        for session in sessions
    }
    for session in sessions:
        session.client.close()
    return times, cpu


def first_edits(server: Server, loading: bool, steady: int = 9) -> tuple[float, float]:
    """ms from an edit to its diagnostics, the edit sent right after ``didOpen``, or, with
    ``loading``, once the first diagnostics are out, right after a code action (which
    has the server load pygls at once: the edit meets the load); and the p50 of
    ``steady`` edits of the same server after it (every part of it loaded)."""
    client, uri = server.start()
    text = server.path.read_text(encoding="utf-8")
    client.notify("textDocument/didOpen", open_params(uri, text, server.language))
    if loading:
        client.published(uri, 1)
        where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
        params = {"textDocument": {"uri": uri}, "range": where, "context": {"diagnostics": []}}
        client.send({"id": "action", "method": "textDocument/codeAction", "params": params})
    change, _ = typo_edit(text, 2, server.word)
    change["textDocument"]["uri"] = uri
    sent = time.perf_counter()
    client.notify("textDocument/didChange", change)
    took = (client.published(uri, 2) - sent) * 1000
    editing = Editing(server, client)
    after = statistics.median(editing.edit() for _ in range(steady))
    client.close()
    return took, after


def start_to_first(server: Server) -> tuple[float, float]:
    """(seconds from starting the process to the first diagnostics, the server's CPU seconds)."""
    client, uri = server.start()
    text = server.path.read_text(encoding="utf-8")
    client.notify("textDocument/didOpen", open_params(uri, text, server.language))
    arrived = client.published(uri, 1)
    cpu = client.cpu_seconds()
    client.close()
    return arrived - client.started, cpu


# ---- in process ------------------------------------------------------------------------------


def check_alone(text: str, edits: int) -> dict[str, list[float]]:
    """The floor: ``check_bytes`` of each edit's text, as the server calls it, beside
    ``yaml.safe_load`` of the same text (wall and CPU ms, a list each).

    Each edit's text is checked as the server checks it (the YAML parser of our
    choice: libyaml where it reads as the pure one), with the pure parser
    forced (``AGENT_ROLLOUT_PURE_YAML=1``), and loaded by ``yaml.safe_load``,
    in turn, so that machine noise falls on all three alike.
    """
    from agent_rollout.config._parse.yaml_events import PURE_YAML_ENV

    before = os.environ.pop(PURE_YAML_ENV, None)
    try:
        return _floor_edits(text, edits, PURE_YAML_ENV)
    finally:
        if before is not None:
            os.environ[PURE_YAML_ENV] = before


def _floor_edits(text: str, edits: int, pure_env: str) -> dict[str, list[float]]:
    """``check_alone``'s loop (the variable ``pure_env`` unset when it starts)."""
    import yaml

    from agent_rollout.config import check_bytes

    times: dict[str, list[float]] = {}

    def timed(name: str, work: Any, *args: Any, **kwargs: Any) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        work(*args, **kwargs)
        times.setdefault(f"{name} cpu", []).append((time.thread_time() - cpu) * 1000)
        times.setdefault(name, []).append((time.perf_counter() - wall) * 1000)

    options = {"format": "yaml", "source": "x.yaml", "skip_unrelated": True}
    current = text
    for version in range(2, edits + 2):
        _, current = typo_edit(current, version)
        timed("check", check_bytes, current, **options)
        os.environ[pure_env] = "1"
        timed("pure", check_bytes, current, **options)
        del os.environ[pure_env]
        timed("safe_load", yaml.safe_load, current)
    return times


def in_process_edits(path: Path, text: str, edits: int) -> tuple[list[float], list[float]]:
    """The session on a thread of this process, fed over a pipe; its output caught at its
    writer (wall ms, and the process's CPU ms, per edit)."""
    from agent_rollout.lsp import serve

    arrivals: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()

    class Writer:
        def __init__(self) -> None:
            self.pending = b""

        def write(self, data: bytes) -> int:
            when = time.perf_counter()
            self.pending += data
            while b"\r\n\r\n" in self.pending:
                header, rest = self.pending.split(b"\r\n\r\n", 1)
                length = int(header.split(b":")[1].split(b"\r\n")[0])
                if len(rest) < length:
                    return len(data)
                arrivals.put((when, json.loads(rest[:length])))
                self.pending = rest[length:]
            return len(data)

        def flush(self) -> None:
            pass

    into, feed = os.pipe()
    stdin, writer = os.fdopen(into, "rb"), os.fdopen(feed, "wb")
    server = threading.Thread(target=serve, args=(stdin, Writer()), daemon=True)
    server.start()
    uri = path.as_uri()

    def send(message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        writer.flush()

    def until_published(version: int) -> float:
        while True:
            when, message = arrivals.get(timeout=300)
            params = message.get("params") or {}
            if message.get("method") == "textDocument/publishDiagnostics" and (
                params.get("uri") == uri and params.get("version") == version
            ):
                return when

    send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
    send({"method": "initialized", "params": {}})
    send({"method": "textDocument/didOpen", "params": open_params(uri, text, "yaml")})
    until_published(1)
    current = text
    walls, cpus = [], []
    for version in range(2, edits + 2):
        params, current = typo_edit(current, version)
        params["textDocument"]["uri"] = uri
        cpu = time.process_time()  # the server's threads included (a large check's)
        sent = time.perf_counter()
        send({"method": "textDocument/didChange", "params": params})
        walls.append((until_published(version) - sent) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    send({"id": 2, "method": "shutdown"})
    send({"method": "exit"})
    server.join(60)
    writer.close()
    return walls, cpus


# ---- through Neovim --------------------------------------------------------------------------


def neovim_edits(path: Path, text: str, edits: int) -> Optional[dict[str, Any]]:
    nvim = shutil.which("nvim")
    if nvim is None:
        return None
    path.write_text(text, encoding="utf-8")
    out = path.with_suffix(".report.json")
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(path.parent / name.lower())
    env.update(
        AR_FILE=str(path),
        AR_CMD=json.dumps(SERVER),
        AR_OUT=str(out),
        AR_MODE="bench",
        AR_EDITS=str(edits),
    )
    subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {LUA}"],
        env=env,
        cwd=str(path.parent),
        capture_output=True,
        timeout=3600,
        check=False,
    )
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if "error" in report:
        raise SystemExit(f"neovim: {report['error']}")
    return report


# ---- the run ---------------------------------------------------------------------------------


def p50(times: list[float]) -> float:
    return statistics.median(times)


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=200, help="edits on the 300-line config")
    parser.add_argument("--large-edits", type=int, default=8, help="edits at the size limit")
    parser.add_argument("--starts", type=int, default=7, help="server starts timed")
    parser.add_argument("--no-neovim", action="store_true")
    args = parser.parse_args()

    from agent_rollout._limits import MAX_CONFIG_BYTES
    from agent_rollout.config._parse.yaml_events import PURE_YAML_ENV

    small = lines_config(300)
    large = config_text(MAX_CONFIG_BYTES - 1024)
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    print(f"300-line config: {len(small):,} bytes; size-limit config: {len(large):,} bytes")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs\n")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        small_path, large_path = folder / "small.yaml", folder / "large.yaml"
        small_path.write_text(small, encoding="utf-8")
        large_path.write_text(large, encoding="utf-8")
        py = folder / "module.py"
        py.write_text(python_text(300), encoding="utf-8")
        # The servers import from cached bytecode, as an installed package does (pip
        # writes it), whatever this environment says (PYTHONDONTWRITEBYTECODE): else
        # each start compiles every module it imports again.
        env = {
            name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
        }
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        ours = Server("agent-rollout lsp", SERVER, small_path, "yaml", "rollout_func", env)
        pure_env = {**env, PURE_YAML_ENV: "1"}
        pure = Server(
            "  the same, pure YAML reader", SERVER, small_path, "yaml", "rollout_func", pure_env
        )
        servers = [ours, pure]
        if ruff:
            servers.insert(
                1, Server("ruff server, 300-line .py", [ruff, "server"], py, "python", "value")
            )

        start_to_first(ours)  # the bytecode written
        print("edit -> published diagnostics over stdio, 300 lines, each server in turn")
        stdio, cpu_per_edit = side_by_side(servers, args.edits)
        width = max(len(name) for name in stdio)
        for name, times in stdio.items():
            print(
                f"  {name:<{width}}  {percentiles(times)}; "
                f"server CPU {cpu_per_edit[name]:.2f} ms an edit"
            )
        if ruff:
            reference = stdio[servers[1].name]
            print(
                f"  ours / ruff's: p50 {p50(stdio[ours.name]) / p50(reference):.1f}x, "
                f"p95 {p95(stdio[ours.name]) / p95(reference):.1f}x (goal: p95 within 3x); "
                f"pure YAML reader p50 {p50(stdio[pure.name]) / p50(reference):.1f}x, "
                f"p95 {p95(stdio[pure.name]) / p95(reference):.1f}x"
            )

        print(
            "\nthe first edit after start, ms to its diagnostics; beside it the p50 of 9 edits"
            " of the same server after it (goal: within 5x)"
        )
        for label, loading in (
            ("right after didOpen", False),
            ("while pygls loads", True),
        ):
            runs = [first_edits(ours, loading) for _ in range(args.starts)]
            times = [first for first, _ in runs]
            ratios = [first / after for first, after in runs]
            print(
                f"  {label:<34} {percentiles(times)}; first / steady p50 {p50(ratios):.1f}x, "
                f"max {max(ratios):.1f}x"
            )

        print("\nstart -> first diagnostics (the 300-line config; the .py for ruff)")
        for server in servers:
            starts = [start_to_first(server) for _ in range(args.starts)]
            walls = [wall * 1000 for wall, _ in starts]
            cpus = [cpu * 1000 for _, cpu in starts]
            print(
                f"  {server.name:<{width}}  wall {percentiles(walls)}; "
                f"server CPU p50 {statistics.median(cpus):.0f} ms"
            )

        print("\nin process and the floor (wall time; CPU time where shown)")
        floor = check_alone(small, args.edits)
        wall, cpu = in_process_edits(small_path, small, args.edits)
        large_wall, large_cpu = in_process_edits(large_path, large, args.large_edits)
        rows = [
            ("check_bytes alone, 300 lines (floor)", floor["check"]),
            ("  its CPU time", floor["check cpu"]),
            ("  the same, pure-Python YAML parser", floor["pure"]),
            ("    its CPU time", floor["pure cpu"]),
            ("yaml.safe_load of the same texts", floor["safe_load"]),
            ("  its CPU time", floor["safe_load cpu"]),
            ("in process, 300 lines", wall),
            ("  its CPU time", cpu),
            ("in process, size limit", large_wall),
            ("  its CPU time", large_cpu),
        ]
        if not args.no_neovim:
            for label, path, text, count in (
                ("through Neovim, 300 lines", folder / "nvim-small.yaml", small, args.edits),
                ("through Neovim, size limit", folder / "nvim-large.yaml", large, args.large_edits),
            ):
                report = neovim_edits(path, text, count)
                if report is not None:
                    rows.append((label, report["edit_ms"]))
        width = max(len(name) for name, _ in rows)
        for name, times in rows:
            print(f"  {name:<{width}}  {percentiles(times)}")
        load = statistics.median(floor["safe_load cpu"])
        ours_cpu, pure_cpu = (
            statistics.median(floor["check cpu"]),
            statistics.median(floor["pure cpu"]),
        )
        print(
            f"  check_bytes / yaml.safe_load, CPU p50: {ours_cpu / load:.2f}x; with the pure-Python"
            f" parser {pure_cpu / load:.2f}x (goal, issue 44: at most 0.3x)"
        )
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
