"""The language server itself: pygls's ``LanguageServer`` and the handlers of each message.

Diagnostics are pushed (``textDocument/publishDiagnostics``) on open,
change and save, or, to a client that pulls them (``textDocument/diagnostic``
in its capabilities), answered on pull and not pushed, so no client sees
them twice. Settings come from ``pyproject.toml`` per document
(``_documents``) with the client's ``initializationOptions`` on top, then
its ``workspace/configuration`` for the section ``agent-rollout`` (asked for
after ``initialized`` and again on ``workspace/didChangeConfiguration``).
Saving a ``pyproject.toml`` checks every open document again.

Code actions, hover and completion are answered from the document's
current text; code actions on a large document are computed on a worker
thread, as its checks are. A document ``check`` does not read (over
``MAX_CONFIG_BYTES``, or in another format) gets none of them. Positions go
out in the encoding pygls settled with the client
(``general.positionEncodings``: its first choice among UTF-8, UTF-16 and
UTF-32; UTF-16 when it names none).

Messages are read by ``_wire.receive`` on a thread of their own and handed
to ``dispatch`` on the event loop, which keeps the protocol's rules where
pygls (2.1) does not; each is a fault of pygls's, worked around here:

- a message ``_wire`` refused is logged, and answered when it was a request
  whose id is known (pygls's reader allocates whatever ``Content-Length``
  says: ``MemoryError`` for a terabyte, and the server ends);
- before ``initialize``, a request is answered ``ServerNotInitialized``
  (-32002) and a notification dropped, ``exit`` aside (pygls runs them);
- after ``shutdown``, a request is answered ``InvalidRequest`` (pygls
  drops it unanswered: openlawlibrary/pygls#605);
- an unknown request is answered ``MethodNotFound`` (-32601), and one whose
  params the protocol's types do not take ``InvalidParams`` (-32602), with or
  without ``params`` (pygls answers neither: its reader raises before it
  knows the id, and shows "Error in server");
- ``initialize`` params pygls cannot read are read as ``_start`` reads them
  (``readable_initialize``); a ``rootUri`` ``urlparse`` refuses and any
  ``rootPath`` are left out (pygls's ``to_fs_path`` and ``from_fs_path`` raise
  ``ValueError`` on ``file://[x/`` and ``//x``);
- ``exit`` ends the server with 1 unless ``shutdown`` came first, and
  ``run_after`` returns that status (pygls's ``start_io`` swallows the
  ``SystemExit`` it raises: openlawlibrary/pygls#118 asked for the status).

pygls keeps no copy of the open documents (``_Protocol``): its copy cost a
walk over the whole edited line per edit (a 5 MB one-line JSON file, a
second a keystroke), broke lines where the client does not
(``str.splitlines``: form feed, NEL, LS) and raised ``KeyError`` for an
edit of a document never opened (shown as "Error in server"; reported for
an older pygls as openlawlibrary/pygls#168).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, Optional, Union

from cattrs.errors import ClassValidationError
from cattrs.v import transform_error
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from agent_rollout.lsp._actions import FIX_ALL, as_diagnostic, code_actions, forget
from agent_rollout.lsp._diagnostics import SOURCE, diagnostics
from agent_rollout.lsp._documents import (
    INLINE_CHARS,
    SETTINGS_SECTION,
    Checked,
    Document,
    Documents,
    client_values,
)
from agent_rollout.lsp._help import completion_sections, completions, hover_at
from agent_rollout.lsp._start import Early, pygls_initialize, readable_initialize
from agent_rollout.lsp._text import Change, Lines
from agent_rollout.lsp._wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_NOT_INITIALIZED,
    Incoming,
    Refused,
    error_reply,
    frame,
    receive,
)

__all__ = ["RolloutLanguageServer", "build_server"]


logger = logging.getLogger(__name__)

_CHECK_THREADS = 4
"""Checks at once, each on a worker thread of its own: a long check (a large config)
holds up no other document's."""

_QUEUED_MESSAGES = 8
"""Messages read ahead of the one being handled; the reader waits past this."""

_UNOPENED_NAMED = 100
"""Documents never opened whose edits are logged (each once)."""


class _Protocol(LanguageServerProtocol):
    """pygls's protocol without its copy of each open document: the server keeps the
    text itself (``_documents``). Each handler below only passes the message on."""

    def _pass_on(self, method: str, params: Any) -> Any:
        handler = self.fm.features.get(method)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        yield from self._pass_on(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        yield from self._pass_on(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        yield from self._pass_on(types.TEXT_DOCUMENT_DID_CLOSE, params)


class RolloutLanguageServer(LanguageServer):
    """``agent-rollout lsp``: check's diagnostics, fixes, hover and completion."""

    def __init__(self, version: str, documents: Optional[Documents] = None) -> None:
        converter = default_converter()
        super().__init__(
            "agent-rollout",
            version,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=_Protocol,
            converter_factory=lambda: converter,
            max_workers=2,
        )
        self.converter = converter
        # Checks run on threads of their own, never on pygls's pool (its thread handlers').
        checks = ThreadPoolExecutor(
            max_workers=_CHECK_THREADS, thread_name_prefix="agent-rollout-check"
        )
        self.documents = documents or Documents(self.publish, self.report)
        self.documents.publish, self.documents.on_error = self.publish, self.report
        self.documents.executor = checks
        self.initialized = False
        self.shut = False
        self.pull = False
        self.versioned_edits = False
        self.ask_configuration = False
        self.refresh = False
        self.init_values: dict[str, Any] = {}
        self.hover_formats: Optional[list[str]] = None
        self.item_formats: Optional[list[str]] = None
        self.reported: set[str] = set()
        self.unopened: set[str] = set()

    def run_after(self, early: Early, stdin: BinaryIO, stdout: BinaryIO) -> int:
        """pygls's ``start_io``, given first the messages ``answer_first`` read: its
        replies to those already answered go nowhere, the others are handled as read.
        Returns the exit status: that of ``exit`` (0 after ``shutdown``, else 1), 0 when
        the input ends."""
        from pygls.io_ import StdoutWriter

        writer = StdoutWriter(stdout)

        async def run() -> None:
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(_quiet_cancellations)
            queue: asyncio.Queue[Optional[Incoming]] = asyncio.Queue()
            room = threading.Semaphore(_QUEUED_MESSAGES)
            reader = threading.Thread(
                target=_read_into,
                args=(stdin, loop, queue, room),
                name="agent-rollout-read",
                daemon=True,
            )
            reader.start()
            self.replay(early, writer)
            while True:
                item = await queue.get()
                room.release()
                if item is None:
                    return
                self.dispatch(item)
                await asyncio.sleep(0)  # handlers under way take a step before the next message

        status = 0
        try:
            asyncio.run(run())
        except SystemExit as exc:  # exit: pygls's sys.exit, with the status the protocol says
            status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BrokenPipeError:
            logger.error("agent-rollout lsp: the client went away")
        except KeyboardInterrupt:
            status = 130
        finally:
            self.shutdown()
        return status

    def replay(self, early: Early, writer: Any) -> None:
        """Handle the messages ``answer_first`` read: ``initialize`` (answered already) so
        pygls has its workspace, with its reply sent nowhere; a pull answered already not
        at all; every other one as if just read."""
        for item in early.messages:
            method = ident = None
            if isinstance(item, dict):
                method, ident = item.get("method"), item.get("id")
            answered = method is not None and ident is not None and ident in early.answered
            if answered and method != types.INITIALIZE:
                continue  # a pull answered already: nothing of it to keep
            self.protocol.set_writer(_Nowhere() if answered else writer)
            self.dispatch(item)
            if answered:
                self.reported.clear()  # what it reported went nowhere: report it below
        self.protocol.set_writer(writer)
        for problem in early.problems:
            self.report(problem)

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
        if method is None:
            self.pass_on(item)  # a response to a request of ours
            return
        ident: Optional[Union[int, str]] = item.get("id")  # checked by _wire: a request's
        if method == types.EXIT:
            self.pass_on(item)  # pygls exits: 0 after shutdown, else 1
        elif not self.initialized and method != types.INITIALIZE:
            if ident is not None:  # a notification is dropped, as the protocol says
                self.answer_error(
                    ident, SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized yet"
                )
        elif self.shut:
            if ident is not None:
                self.answer_error(ident, INVALID_REQUEST, f"{method}: the server is shutting down")
        elif method == types.INITIALIZE:
            if ident is None:
                logger.warning("agent-rollout lsp: initialize sent as a notification, skipped")
            elif self.initialized:
                self.answer_error(ident, INVALID_REQUEST, "initialize: sent once already")
            else:
                self.initialize(item)
        elif not self.knows(method):
            if ident is not None:  # pygls too leaves an unknown notification alone
                self.answer_error(ident, METHOD_NOT_FOUND, f"{method}: no such method")
        else:
            self.pass_on(item)
            if method == types.SHUTDOWN and ident is not None:
                self.shut = True

    def knows(self, method: str) -> bool:
        """Whether a handler of ours or of pygls's takes ``method``."""
        features = self.protocol.fm
        return (
            method in features.features
            or method in features.builtin_features
            or method == types.CANCEL_REQUEST
        )

    def structure(self, item: dict[str, Any]) -> Any:
        """The message as pygls's handlers take it (lsprotocol's types); raises when its
        params are not what the protocol says. A message without ``params`` is tried
        again with empty ones (``initialized`` from a client that leaves them out)."""
        method = item.get("method")
        if method is None:
            return self.protocol.structure_message(dict(item))  # a response: pygls's
        fallback = JsonRPCRequestMessage if "id" in item else JsonRPCNotification
        kind = self.protocol.get_message_type(method) or fallback
        try:
            return self.converter.structure(dict(item), kind)
        except Exception:
            if "params" in item:
                raise
            return self.converter.structure({**item, "params": {}}, kind)

    def pass_on(self, item: dict[str, Any]) -> None:
        """Give a message to pygls; one it cannot read is answered ``InvalidParams`` (a
        request) or logged and dropped."""
        method = item.get("method")
        try:
            message = self.structure(item)
        except Exception as exc:
            reason = f"{method}: params the protocol does not take ({_why(exc)})"
            if method is not None and "id" in item:
                self.answer_error(item["id"], INVALID_PARAMS, reason)
            else:
                logger.warning("agent-rollout lsp: a message was skipped: %s", reason)
            return
        self.protocol.handle_message(message)

    def initialize(self, item: dict[str, Any]) -> None:
        """pygls's ``initialize``, given params it can read (the module's docstring)."""
        params = item.get("params")
        try:
            message = self.structure({**item, "params": pygls_initialize(params)})
        except Exception as exc:
            logger.warning(
                "agent-rollout lsp: initialize: params the protocol does not take (%s); "
                "read as far as they go",
                _why(exc),
            )
            message = self.structure({**item, "params": readable_initialize(params)})
        self.protocol.handle_message(message)
        try:
            self.workspace  # noqa: B018 - raises when pygls's initialize failed
        except RuntimeError:
            return
        self.initialized = True

    def answer_error(self, ident: Union[int, str], code: int, message: str) -> None:
        writer = self.protocol.writer
        if writer is not None:
            writer.write(frame(error_reply(ident, code, message)))

    def shutdown(self) -> None:
        """pygls's, and the checks still waiting for a thread are dropped."""
        executor = self.documents.executor
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        super().shutdown()

    # ---- to the client

    def encoding(self) -> str:
        kind = self.workspace.position_encoding
        return str(getattr(kind, "value", kind) or "utf-16")

    def publish(self, document: Document, checked: Optional[Checked]) -> None:
        if self.pull:
            return
        found = [] if checked is None else diagnostics(checked, self.lines_of(checked))
        version = document.version if checked is None else checked.version
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=document.uri, diagnostics=[as_diagnostic(d) for d in found], version=version
            )
        )

    def report(self, message: str) -> None:
        """A problem that is not a document's (a bad setting, met at every check until it
        is mended): logged and shown, once."""
        if message in self.reported:
            return
        self.reported.add(message)
        self.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=message)
        )
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

    def lines_of(self, checked: Checked) -> Lines:
        return Lines(checked.text, self.encoding(), checked.format)

    # ---- settings

    def use_values(self, *layers: Any) -> None:
        merged: dict[str, Any] = {}
        for layer in layers:
            values, problems = client_values(layer)
            for problem in problems:
                self.report(f"agent-rollout: client setting ignored: {problem}")
            merged.update(values)
        self.documents.client_values = merged

    async def fetch_configuration(self) -> None:
        """Ask the client for our section; its answer goes over ``initializationOptions``."""
        if not self.ask_configuration:
            return
        try:
            answer = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SETTINGS_SECTION)])
            )
        except Exception as exc:  # a client that fails the request: keep what we have
            logger.warning("workspace/configuration failed: %s", exc)
            return
        self.use_values(self.init_values, answer[0] if answer else None)

    def settings_changed(self) -> None:
        self.documents.recheck_all()
        if self.pull and self.refresh:
            self.workspace_diagnostic_refresh(None)


class _Nowhere:
    """A writer that drops what it is given: pygls's reply to a request answered early."""

    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def _read_into(
    stdin: BinaryIO,
    loop: asyncio.AbstractEventLoop,
    queue: asyncio.Queue[Optional[Incoming]],
    room: threading.Semaphore,
) -> None:
    """The reader thread: each message ``_wire.receive`` gives, onto ``queue`` (while
    it has ``room``: at most ``_QUEUED_MESSAGES`` wait), then ``None`` at the end of
    input. A daemon thread: one waiting on a client that keeps its end open does not
    keep the process alive."""
    while True:
        try:
            item = receive(stdin)
        except Exception as exc:  # the input failed (or a bug of ours): as if it ended
            logger.error("agent-rollout lsp: reading the input failed: %s", exc)
            item = None
        while not room.acquire(timeout=0.5):
            if loop.is_closed():
                return
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:
            return  # the loop has ended
        if item is None:
            return


def _quiet_cancellations(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler of errors no one awaited, less a handler cancelled as the
    server ends (``exit`` before an async handler ran: pygls's callback then raises
    ``CancelledError``, which says nothing wrong)."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)


def _why(exc: BaseException) -> str:
    """What cattrs (or anything else) found wrong with a message, in a line."""
    if isinstance(exc, ClassValidationError):
        return "; ".join(transform_error(exc)[:3])  # "... @ $.params.position"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _change(change: Any) -> Change:
    """One of lsprotocol's content changes as ``_text``'s ``Change``."""
    where = getattr(change, "range", None)
    if where is None:
        return Change(change.text)
    return Change(
        change.text,
        (where.start.line, where.start.character),
        (where.end.line, where.end.character),
    )


def _markup(markdown: str, formats: Optional[Sequence[str]]) -> Any:
    """Markdown where the client takes it, else the same words as plain text (a plain
    string where the client names no format at all)."""
    if formats and types.MarkupKind.Markdown in formats:
        return types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown)
    plain = markdown.replace("**", "").replace("```yaml\n", "").replace("```", "")
    plain = plain.replace("`", "").replace("  \n", "\n")
    if formats and types.MarkupKind.PlainText in formats:
        return types.MarkupContent(kind=types.MarkupKind.PlainText, value=plain)
    return plain


def _capability(root: Any, *path: str) -> Any:
    for name in path:
        root = getattr(root, name, None)
        if root is None:
            return None
    return root


def build_server(version: str, documents: Optional[Documents] = None) -> RolloutLanguageServer:
    """The server with every handler registered (``start_io`` or ``run_after`` runs it);
    ``documents``: those ``_start.answer_first`` opened."""
    server = RolloutLanguageServer(version, documents)

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        caps = params.capabilities
        server.pull = _capability(caps, "text_document", "diagnostic") is not None
        server.refresh = bool(_capability(caps, "workspace", "diagnostics", "refresh_support"))
        server.versioned_edits = bool(
            _capability(caps, "workspace", "workspace_edit", "document_changes")
        )
        server.ask_configuration = bool(_capability(caps, "workspace", "configuration"))
        server.hover_formats = _capability(caps, "text_document", "hover", "content_format")
        server.item_formats = _capability(
            caps, "text_document", "completion", "completion_item", "documentation_format"
        )
        root = params.root_uri or (
            params.workspace_folders[0].uri if params.workspace_folders else None
        )
        if root is not None:
            from agent_rollout.lsp._text import uri_path

            server.documents.root = uri_path(root)
        server.init_values = (
            dict(params.initialization_options or {})
            if isinstance(params.initialization_options, Mapping)
            else {}
        )
        server.use_values(params.initialization_options)

    @server.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        if server.ask_configuration:
            await server.fetch_configuration()
            server.settings_changed()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, Mapping) and SETTINGS_SECTION in settings:
            server.use_values(server.init_values, settings[SETTINGS_SECTION])
        elif server.ask_configuration:
            await server.fetch_configuration()
        else:
            return
        server.settings_changed()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        server.documents.opened(document.uri, document.text, document.version, document.language_id)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        changes = [_change(change) for change in params.content_changes]
        if server.documents.changed(uri, changes, params.text_document.version, server.encoding()):
            return
        if len(server.unopened) < _UNOPENED_NAMED and uri not in server.unopened:
            server.unopened.add(uri)  # named once: a file too large to open is edited often
            logger.warning("agent-rollout lsp: edits of %s, which is not open, are skipped", uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("/pyproject.toml"):
            server.settings_changed()
            return
        document = server.documents.open.get(uri)
        if document is not None:
            server.documents.schedule(document)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        server.documents.closed(uri)
        forget(uri)
        if not server.pull:
            server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    async def pull_diagnostics(
        params: types.DocumentDiagnosticParams,
    ) -> types.RelatedFullDocumentDiagnosticReport:
        checked = await server.documents.current(params.text_document.uri)
        found = [] if checked is None else diagnostics(checked, server.lines_of(checked))
        return types.RelatedFullDocumentDiagnosticReport(items=[as_diagnostic(d) for d in found])

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
        ),
    )
    async def code_action(params: types.CodeActionParams) -> Optional[list[types.CodeAction]]:
        uri = params.text_document.uri
        document = server.documents.open.get(uri)
        if document is None or not document.readable:
            return None
        checked = await server.documents.current(uri)
        if checked is None:
            return None
        only = list(params.context.only) if params.context.only is not None else None
        arguments = (
            uri,
            checked,
            server.lines_of(checked),
            params.range,
            only,
            server.versioned_edits,
            list(params.context.diagnostics),
        )
        if len(checked.text) <= INLINE_CHARS:
            return code_actions(*arguments)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(server.documents.executor, code_actions, *arguments)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> Optional[types.Hover]:
        document = server.documents.open.get(params.text_document.uri)
        if document is None or not document.readable:
            return None
        lines = server.documents.lines(document, server.encoding())
        line, col = lines.from_client(params.position.line, params.position.character)
        text = lines.line_text(line)
        found = hover_at(text, col - 1)
        if found is None:
            return None
        start, end, markdown = found
        return types.Hover(
            contents=_markup(markdown, server.hover_formats),
            range=types.Range(
                types.Position(*lines.to_client(line, start + 1)),
                types.Position(*lines.to_client(line, end + 1)),
            ),
        )

    @server.feature(types.TEXT_DOCUMENT_COMPLETION)
    def complete(params: types.CompletionParams) -> Optional[types.CompletionList]:
        document = server.documents.open.get(params.text_document.uri)
        if document is None or document.format is None or not document.readable:
            return None
        lines = server.documents.lines(document, server.encoding())
        row, character = lines.clamp(params.position.line, params.position.character)
        line, col = lines.from_client(row, character)
        settings = server.documents.settings_for(document)
        rows = [lines.line_text(number + 1) for number in range(row + 1)]
        read = document.checked.result.section if document.checked is not None else None
        found = completions(
            rows,
            line - 1,
            col - 1,
            document.format,
            completion_sections(settings.section, read),
            document.text,
        )
        if not found:
            return None
        items = [
            types.CompletionItem(
                label=item.label,
                kind=(
                    types.CompletionItemKind.Property
                    if item.is_key
                    else types.CompletionItemKind.EnumMember
                ),
                detail=item.detail,
                documentation=_markup(item.documentation, server.item_formats),
                sort_text=item.sort,
                insert_text=item.insert,
            )
            for item in found
        ]
        return types.CompletionList(is_incomplete=False, items=items)

    return server
