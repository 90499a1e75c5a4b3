"""The session with one client: every message it sends, and the answers that need no pygls.

pygls is built on lsprotocol, and importing the two takes most of the
server's start (``lsprotocol.types`` alone is about a thousand attrs
classes: 0.3-0.5 s of CPU). Nothing the client needs at each keystroke
uses them, so the session answers it in the protocol's JSON: ``initialize``
and ``shutdown``, the document notifications, diagnostics (pushed on open,
change and save, or, to a client that pulls them, answered on pull and not
pushed, so no client sees them twice), hover and completion, settings.
What is left (code actions, ``workspace/executeCommand``, ``$/setTrace``
...: ``PYGLS_METHODS``) goes to pygls (``_server``), which is loaded on a
thread of its own once the first diagnostics are out and no message has
come for ``_IDLE_SECONDS``, or at once when a message needs it; such a
message waits until it is loaded, in order, and nothing else waits for it.

Messages are read on a thread of their own (``_wire.read_into``) and
handled on the event loop (``dispatch``), one at a time; a small
document's check runs there too, once no message waits (``_documents``).
``dispatch`` keeps the protocol's rules:

- a message ``_wire`` refused is logged, and answered when it was a request
  whose id is known;
- before ``initialize``, a request is answered ``ServerNotInitialized``
  (-32002) and a notification dropped, ``exit`` aside;
- after ``shutdown``, a request is answered ``InvalidRequest`` (-32600); a
  request still waiting for pygls then is answered ``RequestCancelled``
  (-32800), so ``shutdown`` never waits for pygls;
- an unknown request is answered ``MethodNotFound`` (-32601), one whose
  params the protocol does not take (``_params``) ``InvalidParams`` (-32602);
- ``exit`` ends the session with 1 unless ``shutdown`` came first.

Settings come from ``pyproject.toml`` per document (``_documents``) with
the client's ``initializationOptions`` on top, then its
``workspace/configuration`` for the section ``agent-rollout``, asked for
once after ``initialized`` and again on a ``workspace/didChangeConfiguration``
that does not carry the section itself, never twice at once (an answer
still to come is given after the change, so it holds it). Until the first
answer (or ``_SETTLE_SECONDS``), diagnostics are held, so the first ones
published are those of the client's settings; after it, a document is
published again only when its text or its settings changed. Saving a
``pyproject.toml`` checks every open document again.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, Optional, Protocol, Union

from agent_rollout._limits import (
    LSP_CHECK_THREADS,
    LSP_HELD_MESSAGES,
    LSP_QUEUED_MESSAGES,
    LSP_UNOPENED_NAMED,
)
from agent_rollout.lsp._diagnostics import cut_messages, diagnostics
from agent_rollout.lsp._documents import (
    SETTINGS_SECTION,
    Checked,
    Document,
    Documents,
    client_values,
)
from agent_rollout.lsp._help import (
    completion_items,
    completion_sections,
    completions,
    hover_reply,
)
from agent_rollout.lsp._params import BadParams, change, position, take
from agent_rollout.lsp._start import Client, capabilities, read_client
from agent_rollout.lsp._text import Lines, uri_path
from agent_rollout.lsp._wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    REQUEST_FAILED,
    SERVER_NOT_INITIALIZED,
    Incoming,
    Refused,
    error_reply,
    frame,
    read_into,
)

__all__ = ["PYGLS_METHODS", "SESSION_METHODS", "Delegate", "Loader", "Session"]

logger = logging.getLogger(__name__)

SESSION_METHODS = frozenset(
    """initialize initialized shutdown exit $/cancelRequest textDocument/didOpen
    textDocument/didChange textDocument/didSave textDocument/didClose textDocument/diagnostic
    textDocument/hover textDocument/completion workspace/didChangeConfiguration""".split()
)
"""The methods the session answers itself."""

PYGLS_METHODS = frozenset(
    """textDocument/codeAction workspace/executeCommand $/setTrace
    workspace/didChangeWorkspaceFolders window/workDoneProgress/cancel
    notebookDocument/didOpen notebookDocument/didChange notebookDocument/didClose""".split()
)
"""The methods left to pygls (``_server``); any other is unknown."""


_IDLE_SECONDS = 1.0
"""pygls is loaded once no message has come for this long, after the first diagnostics
(or after ``initialized``): while the user pauses, not while they type."""

_SETTLE_SECONDS = 1.0
"""How long diagnostics are held for the client's first answer to ``workspace/configuration``."""

_ANSWER_SECONDS = 10.0
"""How long an unanswered ``workspace/configuration`` stops the session asking again."""

_LOADING_SWITCH_SECONDS = 0.001
"""Python's thread switch interval while pygls loads (5 ms otherwise): a message that
comes meanwhile waits at most this long for the interpreter, not the import's 5 ms turns."""


class Delegate(Protocol):
    """What answers the messages the session leaves to pygls (``_server``)."""

    def dispatch(self, item: dict[str, Any]) -> None:
        """Handle one message: a request or notification of ``PYGLS_METHODS``, a
        ``$/cancelRequest`` for one, or a response to a request of pygls's."""

    def closed(self, uri: str) -> None:
        """A document was closed: drop what was kept for it."""

    def close(self) -> None:
        """The session ends."""


Loader = Callable[[str, Documents, Client, dict[str, Any], Callable[[bytes], None]], Delegate]
"""Builds the delegate, on a thread of its own: given the server's version, the open
documents, the client, ``initialize``'s message and the writer of framed bytes."""


class Session:
    """One client's session over ``stdout``; ``run(stdin)`` until ``exit`` or the input ends.
    ``own_process``: the session is the process's (``agent-rollout lsp``), so it may tune
    the interpreter's garbage collector and thread switching for itself."""

    def __init__(
        self, version: str, stdout: BinaryIO, load: Loader, own_process: bool = False
    ) -> None:
        self.version = version
        self.stdout = stdout
        self.load = load
        self.own_process = own_process
        self.client: Optional[Client] = None
        self.initialize_message: dict[str, Any] = {}
        self.documents = Documents(self.publish, self.report)
        self.shut = False
        self.status: Optional[int] = None
        self.delegate: Optional[Delegate] = None
        self.loading = False
        self.load_failed = False
        self.held: list[dict[str, Any]] = []
        self.init_values: dict[str, Any] = {}
        self.reported: set[str] = set()
        self.unopened: set[str] = set()
        self.asked: dict[Union[int, str], Callable[[dict[str, Any]], None]] = {}
        self.next_id = 0
        self.configuring: Optional[float] = None
        """When the ``workspace/configuration`` still to be answered was sent."""
        self.settled = asyncio.Event()
        self.pulls: dict[Union[int, str], asyncio.Task[None]] = {}
        self.published_once = False
        self.last_message = 0.0
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.handlers: dict[str, Callable[[Optional[Union[int, str]], Any], None]] = {
            "initialized": self.initialized,
            "shutdown": self.shutdown,
            "$/cancelRequest": self.cancel,
            "textDocument/didOpen": self.did_open,
            "textDocument/didChange": self.did_change,
            "textDocument/didSave": self.did_save,
            "textDocument/didClose": self.did_close,
            "textDocument/diagnostic": self.pull,
            "textDocument/hover": self.hover,
            "textDocument/completion": self.complete,
            "workspace/didChangeConfiguration": self.configuration_changed,
        }

    # ---- the loop

    def run(self, stdin: BinaryIO) -> int:
        """Serve until ``exit`` (its status: 0 after ``shutdown``, else 1) or the end of
        the input (0)."""
        try:
            return asyncio.run(self._run(stdin))
        except BrokenPipeError:
            logger.error("agent-rollout lsp: the client went away")
            return 0
        except KeyboardInterrupt:
            return 130
        finally:
            self.close()

    async def _run(self, stdin: BinaryIO) -> int:
        loop = self.loop = asyncio.get_running_loop()
        loop.set_exception_handler(_quiet_cancellations)
        self.documents.executor = ThreadPoolExecutor(
            max_workers=LSP_CHECK_THREADS, thread_name_prefix="agent-rollout-check"
        )
        self.documents.deferred = True
        queue: asyncio.Queue[Optional[Incoming]] = asyncio.Queue()
        room = threading.Semaphore(LSP_QUEUED_MESSAGES)
        reader = threading.Thread(
            target=read_into,
            args=(stdin, loop, queue, room),
            name="agent-rollout-read",
            daemon=True,
        )
        reader.start()
        self.documents.warm_up()  # while the client starts: the first check pays nothing more
        while self.status is None:
            if self.documents.due and queue.empty():
                self.documents.run_due()  # no message waits: a small document's check
                await asyncio.sleep(0)
                continue
            item = await queue.get()
            room.release()
            if item is None:
                return 0
            self.last_message = loop.time()
            self.dispatch(item)
            await asyncio.sleep(0)  # handlers under way take a step before the next message
        return self.status

    def close(self) -> None:
        executor = self.documents.executor
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if self.delegate is not None:
            self.delegate.close()

    def dispatch(self, item: Incoming) -> None:
        """Handle one message ``_wire.receive`` gave, keeping the protocol's rules (see
        the module's docstring); a bug of ours in one is logged, and the server goes on."""
        try:
            self._dispatch(item)
        except (BrokenPipeError, SystemExit, KeyboardInterrupt):
            raise
        except Exception:
            logger.exception("agent-rollout lsp: a message could not be handled")

    def _dispatch(self, item: Incoming) -> None:
        if isinstance(item, Refused):
            logger.warning("agent-rollout lsp: %s", item.reason)
            if item.id is not None:
                self.answer_error(item.id, item.code, item.reason)
            return
        method = item.get("method")
        ident: Optional[Union[int, str]] = item.get("id")  # checked by _wire: a request's
        if method is None:
            self.response(item)
        elif method == "exit":
            self.status = 0 if self.shut else 1
        elif self.client is None and method != "initialize":
            if ident is not None:  # a notification is dropped, as the protocol says
                self.answer_error(
                    ident, SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized yet"
                )
        elif self.shut:
            if ident is not None:
                self.answer_error(ident, INVALID_REQUEST, f"{method}: the server is shutting down")
        elif method == "initialize":
            if ident is None:
                logger.warning("agent-rollout lsp: initialize sent as a notification, skipped")
            elif self.client is not None:
                self.answer_error(ident, INVALID_REQUEST, "initialize: sent once already")
            else:
                self.initialize(item, ident)
        elif method in self.handlers:
            try:
                self.handlers[method](ident, item.get("params"))
            except BadParams as exc:
                reason = f"{method}: params the protocol does not take ({exc})"
                if ident is not None:
                    self.answer_error(ident, INVALID_PARAMS, reason)
                else:
                    logger.warning("agent-rollout lsp: a message was skipped: %s", reason)
        elif method in PYGLS_METHODS:
            self.to_pygls(item)
        elif ident is not None:  # an unknown notification is left alone
            self.answer_error(ident, METHOD_NOT_FOUND, f"{method}: no such method")

    # ---- writing

    def write_bytes(self, data: bytes) -> None:
        self.stdout.write(data)
        self.stdout.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write_bytes(frame(message))

    def answer(self, ident: Union[int, str], result: Any) -> None:
        self.send({"id": ident, "result": result})

    def answer_error(self, ident: Union[int, str], code: int, message: str) -> None:
        self.write_bytes(frame(error_reply(ident, code, message)))

    def request(
        self, method: str, params: Any, then: Callable[[dict[str, Any]], None]
    ) -> Union[int, str]:
        """Send a request of ours; ``then`` is given the client's response."""
        self.next_id += 1
        ident = f"agent-rollout-{self.next_id}"
        self.asked[ident] = then
        message: dict[str, Any] = {"id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return ident

    def response(self, item: dict[str, Any]) -> None:
        """A response of the client's: to a request of ours, or of pygls's."""
        then = self.asked.pop(item.get("id"), None)  # type: ignore[arg-type]
        if then is not None:
            then(item)
        elif self.delegate is not None:
            self.delegate.dispatch(item)
        else:
            logger.warning(
                "agent-rollout lsp: a response to no request of ours (id %r) was skipped",
                item.get("id"),
            )

    def encoding(self) -> str:
        return self.client.encoding if self.client is not None else "utf-16"

    def lines_of(self, checked: Checked, document: Optional[Document] = None) -> Lines:
        """A check's text for positions; the document's line starts where it is its text."""
        same = document is not None and document.text is checked.text
        starts = document.starts if same and document is not None else None
        return Lines(checked.text, self.encoding(), checked.format, starts)

    def publish(self, document: Document, checked: Optional[Checked]) -> None:
        if self.client is None or self.client.pulls:
            return
        related = document.uri if self.client.related_information else None
        found: list[dict[str, Any]] = []
        if checked is not None:
            found = diagnostics(checked, self.lines_of(checked, document), related)
        version = document.version if checked is None else checked.version
        params: dict[str, Any] = {"uri": document.uri, "diagnostics": found}
        if version is not None:  # the protocol's version is an integer, or left out
            params["version"] = version
        self.send({"method": "textDocument/publishDiagnostics", "params": params})
        self.first_answer()

    def report(self, message: str) -> None:
        """A problem that is not a document's (a bad setting, met at every check until it
        is mended): logged and shown, once."""
        if message in self.reported:
            return
        self.reported.add(message)
        if self.client is None:
            logger.warning("%s", message)
            return
        for method in ("window/logMessage", "window/showMessage"):
            self.send({"method": method, "params": {"type": 2, "message": message}})

    # ---- pygls, loaded on a thread

    def first_answer(self) -> None:
        """The first diagnostics are out: load pygls once the client is idle."""
        if not self.published_once:
            self.published_once = True
            self.settle_heap()
            self.load_when_idle()

    def settle_heap(self) -> None:
        """In a process of its own, what is loaded so far is kept out of Python's full
        garbage collections (``gc.freeze``): with pygls loaded, each walked about a
        million objects (over 100 ms, once every hundred edits or so); a check's
        objects are collected as before."""
        if self.own_process:
            gc.freeze()

    def load_when_idle(self) -> None:
        loop = self.loop
        if self.loading or loop is None:
            return
        idle = loop.time() - self.last_message
        if idle >= _IDLE_SECONDS and not self.documents.due:
            self.start_loading()
        else:
            loop.call_later(max(_IDLE_SECONDS - idle, 0.01), self.load_when_idle)

    def start_loading(self) -> None:
        if self.loading or self.client is None:
            return
        self.loading = True
        threading.Thread(target=self._load, name="agent-rollout-load", daemon=True).start()

    def _load(self) -> None:
        """The loader thread: pygls imported and its server built, then handed to the loop."""
        assert self.client is not None
        switch = sys.getswitchinterval()
        if self.own_process:  # a setting of the process's: not where the session is a guest
            sys.setswitchinterval(min(switch, _LOADING_SWITCH_SECONDS))
        delegate: Optional[Delegate] = None
        try:
            delegate = self.load(
                self.version, self.documents, self.client, self.initialize_message, self.write_bytes
            )
        except Exception:
            logger.exception("agent-rollout lsp: pygls could not be loaded")
        finally:
            if self.own_process:
                sys.setswitchinterval(switch)
        loop = self.loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self.attach, delegate)
        except RuntimeError:
            pass  # the session has ended

    def attach(self, delegate: Optional[Delegate]) -> None:
        """pygls is loaded: the messages kept for it, in order."""
        held, self.held = self.held, []
        if delegate is None:
            self.load_failed = True
            for item in held:
                self.refuse(item, REQUEST_FAILED, "the server's pygls part could not be loaded")
            return
        self.delegate = delegate
        self.settle_heap()
        if self.status is not None:
            return
        for item in held:
            self.dispatch_to(delegate, item)

    def dispatch_to(self, delegate: Delegate, item: dict[str, Any]) -> None:
        try:
            delegate.dispatch(item)
        except (BrokenPipeError, SystemExit, KeyboardInterrupt):
            raise
        except Exception:
            logger.exception("agent-rollout lsp: a message could not be handled")

    def to_pygls(self, item: dict[str, Any]) -> None:
        if self.delegate is not None:
            self.dispatch_to(self.delegate, item)
        elif self.load_failed:
            self.refuse(item, REQUEST_FAILED, "the server's pygls part could not be loaded")
        elif len(self.held) >= LSP_HELD_MESSAGES:
            self.refuse(item, REQUEST_FAILED, "too many messages while the server starts")
        else:
            self.held.append(item)
            self.start_loading()

    def refuse(self, item: dict[str, Any], code: int, why: str) -> None:
        ident = item.get("id")
        if ident is not None:
            self.answer_error(ident, code, f"{item.get('method')}: {why}")
        else:
            logger.warning("agent-rollout lsp: %s: %s, skipped", item.get("method"), why)

    # ---- the session's own methods

    def initialize(self, item: dict[str, Any], ident: Union[int, str]) -> None:
        params = item.get("params")
        client = self.client = read_client(params)
        self.initialize_message = item
        result = {
            "capabilities": capabilities(params, client.encoding),
            "serverInfo": {"name": "agent-rollout", "version": self.version},
        }
        self.answer(ident, result)
        if client.root is not None:
            self.documents.root = uri_path(client.root)
        options = client.options
        self.init_values = dict(options) if isinstance(options, Mapping) else {}
        self.use_values(options)
        if not client.configuration:
            self.settled.set()
        elif self.loop is not None:
            self.loop.call_later(_SETTLE_SECONDS, self.settle)

    def initialized(self, ident: Optional[Union[int, str]], params: Any) -> None:
        client = self.client
        assert client is not None
        if client.configuration:
            if not self.settled.is_set():  # the first diagnostics wait for the client's settings
                self.documents.holding = True
            self.ask_configuration()
        if self.loop is not None:
            self.loop.call_later(_IDLE_SECONDS, self.load_when_idle)

    def shutdown(self, ident: Optional[Union[int, str]], params: Any) -> None:
        if ident is None:
            return  # a notification: nothing to answer, nothing to do
        self.shut = True
        while self.documents.due:  # the checks still due go out first, as sent before
            self.documents.run_due()
        held, self.held = self.held, []
        for waiting in held:
            self.refuse(waiting, REQUEST_CANCELLED, "the server is shutting down")
        self.answer(ident, None)

    def cancel(self, ident: Optional[Union[int, str]], params: Any) -> None:
        if ident is not None:  # a notification sent as a request: answered, not acted on
            reason = "$/cancelRequest: a notification, sent as a request"
            self.answer_error(ident, INVALID_REQUEST, reason)
            return
        target = take(params, "id", "id")
        task = self.pulls.pop(target, None)
        if task is not None:
            task.cancel()
            self.answer_error(target, REQUEST_CANCELLED, "cancelled")
        elif self.delegate is not None:
            cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": params}
            self.dispatch_to(self.delegate, cancel)
        else:
            for index, waiting in enumerate(self.held):
                if waiting.get("id") == target and "method" in waiting:
                    del self.held[index]
                    self.answer_error(target, REQUEST_CANCELLED, "cancelled")
                    return

    def did_open(self, ident: Optional[Union[int, str]], params: Any) -> None:
        uri = take(params, "textDocument.uri", "string")
        text = take(params, "textDocument.text", "string")
        version = take(params, "textDocument.version", "integer")
        language = take(params, "textDocument.languageId", "string")
        self.documents.opened(uri, text, version, language)

    def did_change(self, ident: Optional[Union[int, str]], params: Any) -> None:
        uri = take(params, "textDocument.uri", "string")
        version = take(params, "textDocument.version", "integer", optional=True)
        changes = [change(item) for item in take(params, "contentChanges", "array")]
        if self.documents.changed(uri, changes, version, self.encoding()):
            return
        if len(self.unopened) < LSP_UNOPENED_NAMED and uri not in self.unopened:
            self.unopened.add(uri)  # named once: a file too large to open is edited often
            logger.warning("agent-rollout lsp: edits of %s, which is not open, are skipped", uri)

    def did_save(self, ident: Optional[Union[int, str]], params: Any) -> None:
        uri = take(params, "textDocument.uri", "string")
        if uri.endswith("/pyproject.toml"):
            self.settings_changed()
            return
        document = self.documents.open.get(uri)
        if document is not None:
            self.documents.schedule(document)

    def did_close(self, ident: Optional[Union[int, str]], params: Any) -> None:
        uri = take(params, "textDocument.uri", "string")
        self.documents.closed(uri)
        if self.delegate is not None:
            self.delegate.closed(uri)
        if self.client is not None and not self.client.pulls:
            params = {"uri": uri, "diagnostics": []}
            self.send({"method": "textDocument/publishDiagnostics", "params": params})

    def pull(self, ident: Optional[Union[int, str]], params: Any) -> None:
        uri = take(params, "textDocument.uri", "string")
        if ident is None:
            return
        task = asyncio.ensure_future(self._pull(ident, uri))
        self.pulls[ident] = task

    async def _pull(self, ident: Union[int, str], uri: str) -> None:
        try:
            await self.settled.wait()
            checked = await self.documents.current(uri)
        finally:
            self.pulls.pop(ident, None)
        related = uri if self.client is not None and self.client.related_information else None
        found = [] if checked is None else diagnostics(checked, self.lines_of(checked), related)
        self.answer(ident, {"kind": "full", "items": found})
        self.first_answer()

    def hover(self, ident: Optional[Union[int, str]], params: Any) -> None:
        uri, line, character = position(params)
        if ident is None:
            return
        document = self.documents.open.get(uri)
        if document is None or not document.readable:
            self.answer(ident, None)
            return
        lines = self.documents.lines(document, self.encoding())
        checked = document.checked
        notes: list[str] = []
        if checked is not None and checked.edit == document.edits:
            notes = cut_messages(checked, lines, line, character)
        assert self.client is not None
        self.answer(ident, hover_reply(lines, line, character, notes, self.client.hover_formats))

    def complete(self, ident: Optional[Union[int, str]], params: Any) -> None:
        uri, line, character = position(params)
        if ident is None:
            return
        document = self.documents.open.get(uri)
        if document is None or document.format is None or not document.readable:
            self.answer(ident, None)
            return
        lines = self.documents.lines(document, self.encoding())
        row, character = lines.clamp(line, character)
        at_line, col = lines.from_client(row, character)
        settings = self.documents.settings_for(document)
        read = document.checked.result.section if document.checked is not None else None
        upto = lines.text[: lines.offset(row, character)] if document.format == "json" else None
        found = completions(
            lines.rows(),
            at_line - 1,
            col - 1,
            document.format,
            completion_sections(settings.section, read),
            document.text,
            upto,
        )
        if not found:
            self.answer(ident, None)
            return
        client = self.client
        assert client is not None
        items = completion_items(found, client.item_formats, client.item_tags)
        self.answer(ident, {"isIncomplete": False, "items": items})

    # ---- settings

    def configuration_changed(self, ident: Optional[Union[int, str]], params: Any) -> None:
        if not isinstance(params, dict):
            raise BadParams("params: an object expected")
        settings = params.get("settings")
        client = self.client
        assert client is not None
        if isinstance(settings, Mapping) and SETTINGS_SECTION in settings:
            self.use_values(self.init_values, settings[SETTINGS_SECTION])
        elif client.configuration:
            self.ask_configuration()

    def ask_configuration(self) -> None:
        """Ask the client for our section, unless an answer is still to come: the client
        gives it after the change that made us ask again, so it holds that change."""
        now = self.loop.time() if self.loop is not None else 0.0
        if self.configuring is not None and now - self.configuring < _ANSWER_SECONDS:
            return
        self.configuring = now
        self.request(
            "workspace/configuration", {"items": [{"section": SETTINGS_SECTION}]}, self.configured
        )

    def configured(self, response: dict[str, Any]) -> None:
        self.configuring = None
        if "error" in response:  # a client that fails the request: keep what we have
            logger.warning(
                "agent-rollout lsp: workspace/configuration failed: %s", response["error"]
            )
        else:
            answer = response.get("result")
            section = answer[0] if isinstance(answer, list) and answer else None
            self.use_values(self.init_values, section)
        self.settle()

    def settle(self) -> None:
        """The client's settings are known (or waited for long enough): publish what waits."""
        if not self.settled.is_set():
            self.settled.set()
            self.documents.release()

    def use_values(self, *layers: Any) -> None:
        merged: dict[str, Any] = {}
        for layer in layers:
            values, problems = client_values(layer)
            for problem in problems:
                self.report(f"agent-rollout: client setting ignored: {problem}")
            merged.update(values)
        if merged != self.documents.client_values:
            self.documents.client_values = merged
            self.settings_changed()

    def settings_changed(self) -> None:
        self.documents.recheck_all()
        client = self.client
        if client is not None and client.pulls and client.refresh and self.documents.open:
            self.request("workspace/diagnostic/refresh", None, lambda response: None)


def _quiet_cancellations(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler of errors no one awaited, less a handler cancelled as the
    server ends (``exit`` before an async handler ran: its callback then raises
    ``CancelledError``, which says nothing wrong)."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)
