"""What the bundled examples need to run: their files, and the servers they talk to.

The command line reaches the examples through this module only:

- :data:`EXAMPLES` and :func:`bundled_example`: the bundled configs
  (``agent-rollout run --example NAME``) and the files of one, found in the
  installed package;
- :func:`serve_example`: for the duration of a ``with`` block, the loopback
  servers a config's launch arguments name (``agent-rollout run --serve``, and
  the live step of ``agent-rollout demo``), once the packages they and the bundled
  rollout functions need are found (:func:`require_packages`), each start said
  first (``starting``: the drill server's takes seconds): the scripted policy at
  ``policy_base_url`` and the scripted judge at ``judge_base_url``
  (:mod:`agent_rollout.examples.scripted_servers`; each must be
  ``http://127.0.0.1:PORT/...``), and the OpenEnv drill server when
  ``rollout_func`` is one of :mod:`agent_rollout.examples.openenv_rollout`
  (its URL in ``AGENT_ROLLOUT_OPENENV_URL`` for the block). Asked to start
  nothing, it first probes each address of those servers that a bundled
  config uses (one HTTP request on loopback, ``PROBE_TIMEOUT_S``: :func:`probe`)
  and raises :class:`ServeError` naming ``--serve`` when nothing answers there or
  something else does, before the backend's packages are imported (ART's import
  and its retries take seconds);
  what it yields then says whether a connection that fails later went to such
  an address (:meth:`Served.hint`).

The servers' modules are imported only when a server starts or a hint is
wanted, so that the command line's start does not pay for them.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any, Optional

from agent_rollout import AgentRolloutError
from agent_rollout._extras import install_hint

__all__ = [
    "EXAMPLES",
    "ServeError",
    "Served",
    "bundled_example",
    "require_packages",
    "serve_example",
]

EXAMPLES: tuple[str, ...] = ("art", "nemo_gym", "nemo_gym_live", "openenv", "ruler")
"""The bundled configs ``run --example`` knows (``examples/<name>.yaml``)."""

LOOPBACK = ("127.0.0.1", "localhost")
PROBE_TIMEOUT_S = 0.5
"""How long a probe of a loopback server may take, to connect and again to be answered
(a closed port refuses at once)."""
DRILL_FUNCS = "agent_rollout.examples.openenv_rollout:"
"""The prefix of the rollout functions that play against the OpenEnv drill server."""
OFFLINE_FUNC = DRILL_FUNCS + "offline_rollout"
"""The one of them that builds the same rows without a server."""

_SCRIPTED = (
    ("policy", "rollout_policy_base_url", "policy_base_url"),
    ("judge", "rollout_judge_base_url", "judge_base_url"),
)
"""Each scripted server: its kind, the config key naming its address, the launch option."""
_KEY_OF = {f"scripted {kind}": key for kind, key, _ in _SCRIPTED}
_DRILL = "OpenEnv drill server"


class ServeError(AgentRolloutError, RuntimeError):
    """A server the config needs cannot be started; the message says which and why."""


def bundled_example(name: str) -> tuple[str, str]:
    """The paths of the bundled config ``examples/<name>.yaml`` and of the bundled seed
    prompts (``examples/prompts.jsonl``), in the installed package."""
    folder = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(folder, f"{name}.yaml"), os.path.join(folder, "prompts.jsonl")


def plays_the_drill(launch: Mapping[str, Any]) -> bool:
    """The launch arguments run one of the bundled OpenEnv rollout functions."""
    func = launch.get("rollout_func")
    return launch["name"] == "openenv" and isinstance(func, str) and func.startswith(DRILL_FUNCS)


def bundled_address(url: str, port: int) -> bool:
    """``url`` is ``http://<loopback>:<port>/...``: where a bundled config puts a server."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        return parts.scheme == "http" and parts.hostname in LOOPBACK and parts.port == port
    except ValueError:
        return False


def loopback_port(key: str, url: str) -> int:
    """The port of ``url``, which must be ``http://<loopback>:PORT/...`` (else ``ServeError``)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or parts.hostname not in LOOPBACK or not port:
        raise ServeError(
            f"--serve starts servers on loopback only: {key}={url!r} must look like "
            "'http://127.0.0.1:PORT/v1'"
        )
    return port


class Served:
    """What :func:`serve_example` started (``started``: ``"scripted policy at URL"``, ...,
    in order; ``drill_url``: the OpenEnv drill server's, or ``None``), and the hint for a
    failed connection when it started nothing."""

    def __init__(self, launch: Mapping[str, Any], start: bool) -> None:
        self.launch = launch
        self.start = start
        self.started: list[str] = []
        self.drill_url: Optional[str] = None

    def hint(self, exc: BaseException) -> str:
        """For a failed connection, when nothing was asked to start, to an address a
        bundled config uses: the hint that ``--serve`` starts the bundled server there
        (``" (...)"``, else ``""``)."""
        if self.start or not isinstance(exc, ConnectionError):
            return ""
        text = str(exc)
        for what, url in bundled_servers(self.launch):
            if url in text:
                if what == _DRILL:
                    return " (--serve starts the bundled OpenEnv drill server for the run)"
                return f" (nothing serves it: --serve starts the bundled {what} there)"
        return ""

    def check_answering(self) -> None:
        """Raise :class:`ServeError` naming ``--serve`` when an address of
        :func:`bundled_servers` cannot serve the run (each probed once, :func:`probe`)."""
        problems = [
            (what, url, problem)
            for what, url in bundled_servers(self.launch)
            if (problem := probe(what, url)) is not None
        ]
        if not problems:
            return
        said = "; ".join(
            f"{problem} at {url}" + ("" if what == _DRILL else f" ({_KEY_OF[what]})")
            for what, url, problem in problems
        )
        started = " and ".join(what for what, _, _ in problems)
        free = (
            "" if all(p == "nothing answers" for _, _, p in problems) else " once the port is free"
        )
        raise ServeError(f"{said}: --serve starts the bundled {started} for the run{free}")


def bundled_servers(launch: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The servers ``--serve`` would start for ``launch`` that sit where a bundled config
    puts them, as ``(what, url)``: ``("scripted policy", "http://127.0.0.1:8791/v1")``,
    ``("OpenEnv drill server", "http://127.0.0.1:8765")`` (its URL unless
    ``AGENT_ROLLOUT_OPENENV_URL`` names another)."""
    from agent_rollout.examples.scripted_servers import BUNDLED_PORTS

    found = []
    options = launch["options"]
    for kind, _, option in _SCRIPTED:
        url = options.get(option)
        if isinstance(url, str) and bundled_address(url, BUNDLED_PORTS[kind]):
            found.append((f"scripted {kind}", url))
    if plays_the_drill(launch) and launch.get("rollout_func") != OFFLINE_FUNC:
        from agent_rollout.examples.openenv_rollout import DEFAULT_URL, server_url

        try:
            url = server_url()
        except ValueError:  # the rollout function says what is wrong with it
            url = ""
        if url == DEFAULT_URL:
            found.append((_DRILL, url))
    return found


def probe(what: str, url: str) -> Optional[str]:
    """Why the server ``what`` at ``url`` cannot serve the run, or None when it can.

    One HTTP request in ``PROBE_TIMEOUT_S`` (connect and answer): ``GET /health`` of
    the drill server must say ``healthy``; ``GET {url}/models`` of a scripted server
    (or any OpenAI-compatible one put there) must answer 200 with a JSON model list.
    A closed port says ``"nothing answers"``; a port held by something else, which
    may accept connections and never answer, says what it did.
    """
    import json
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        socket.create_connection(
            (parts.hostname or "", parts.port or 80), timeout=PROBE_TIMEOUT_S
        ).close()
    except (OSError, ValueError):
        return "nothing answers"
    target = f"{url.rstrip('/')}/health" if what == _DRILL else f"{url.rstrip('/')}/models"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(target, timeout=PROBE_TIMEOUT_S) as response:
            body = json.loads(response.read(1 << 20).decode("utf-8"))
    except urllib.error.HTTPError as exc:
        return f"something else answers (GET {target}: HTTP {exc.code})"
    except (OSError, ValueError):
        return f"something holds the port but gives no answer to GET {target}"
    if what == _DRILL:
        ok = isinstance(body, dict) and body.get("status") == "healthy"
    else:
        ok = isinstance(body, dict) and isinstance(body.get("data"), list)
    return None if ok else f"something else answers (GET {target}: not what {what} says)"


def require_packages(launch: Mapping[str, Any], *, start: bool) -> None:
    """Raise :class:`ServeError`, naming what to install, when openenv-core is missing
    and ``launch`` needs it: for the drill server (``start``) or for the bundled rollout
    function that talks to one (all but ``offline_rollout``). Looked for without
    importing it; :func:`serve_example` calls it before it starts or probes anything."""
    import importlib.util

    if not plays_the_drill(launch):
        return
    if not start and launch.get("rollout_func") == OFFLINE_FUNC:
        return
    try:
        found = importlib.util.find_spec("openenv") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return
    if start:
        raise ServeError(
            f"--serve: the OpenEnv drill server needs openenv-core: {install_hint('openenv')}"
        )
    raise ServeError(
        f"rollout_func {launch.get('rollout_func')} needs openenv-core: {install_hint('openenv')}"
    )


@contextmanager
def serve_example(
    launch: Mapping[str, Any],
    *,
    start: bool = True,
    starting: Optional[Callable[[str], object]] = None,
) -> Iterator[Served]:
    """Run, on loopback, the bundled servers that ``launch`` (``to_launch_kwargs()`` of a
    config) names, for as long as the block lasts; yield what was started.

    First the packages (:func:`require_packages`), so that a missing one starts
    nothing. ``starting(text)``, if given, is called before each server starts
    (``"starting the OpenEnv drill server on 127.0.0.1"``), for the command line to
    say what it waits for. With ``start=False`` nothing starts: the servers a bundled
    config uses must already answer (else :class:`ServeError`, naming ``--serve``),
    and the :class:`Served` yielded only gives hints. Raises :class:`ServeError` when
    an address is not loopback, a port cannot be bound, or a package is missing;
    whatever started is stopped on the way out.
    """
    require_packages(launch, start=start)
    served = Served(launch, start)
    if not start:
        served.check_answering()
        yield served
        return
    options = launch["options"]
    say = starting if starting is not None else _say_nothing
    with ExitStack() as stack:
        for kind, key, option in _SCRIPTED:
            url = options.get(option)
            if url is None:
                continue
            port = loopback_port(key, url)
            say(f"starting the scripted {kind} on 127.0.0.1:{port}")
            _serve_scripted(stack, kind, key, port)
            served.started.append(f"scripted {kind} at {url}")
        if plays_the_drill(launch):
            say(f"starting the {_DRILL} on 127.0.0.1")  # its port: a free one, once bound
            served.drill_url = _serve_drill(stack)
            served.started.append(f"{_DRILL} at {served.drill_url}")
        yield served


def _say_nothing(text: str) -> None:
    del text


def _serve_scripted(stack: ExitStack, kind: str, key: str, port: int) -> None:
    from agent_rollout.examples import scripted_servers

    try:
        stack.enter_context(scripted_servers.serve(kind, port=port))
    except OSError as exc:
        raise ServeError(
            f"--serve: cannot start the scripted {kind} on 127.0.0.1:{port} "
            f"({key}): {exc.strerror or exc}"
        ) from None


def _serve_drill(stack: ExitStack) -> str:
    from agent_rollout.examples.openenv_rollout import URL_ENV_VAR, serve_drill_env

    url = stack.enter_context(serve_drill_env())
    previous = os.environ.get(URL_ENV_VAR)
    os.environ[URL_ENV_VAR] = url

    def restore() -> None:
        if previous is None:
            os.environ.pop(URL_ENV_VAR, None)
        else:
            os.environ[URL_ENV_VAR] = previous

    stack.callback(restore)
    return str(url)
