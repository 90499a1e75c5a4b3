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
thread, as its checks are. Positions go out in the encoding pygls settled
with the client (``general.positionEncodings``: its first choice among
UTF-8, UTF-16 and UTF-32; UTF-16 when it names none).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer

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
from agent_rollout.lsp._start import Early
from agent_rollout.lsp._text import Lines

__all__ = ["RolloutLanguageServer", "build_server"]


logger = logging.getLogger(__name__)


class RolloutLanguageServer(LanguageServer):
    """``agent-rollout lsp``: check's diagnostics, fixes, hover and completion."""

    def __init__(self, version: str, documents: Optional[Documents] = None) -> None:
        super().__init__(
            "agent-rollout",
            version,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            max_workers=2,
        )
        # Large documents are checked on a thread of their own, never on pygls's pool,
        # which reads standard input: a long check must not hold up the next message.
        checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-rollout-check")
        self.documents = documents or Documents(self.publish, self.report)
        self.documents.publish, self.documents.on_error = self.publish, self.report
        self.documents.executor = checks
        self.pull = False
        self.versioned_edits = False
        self.ask_configuration = False
        self.refresh = False
        self.init_values: dict[str, Any] = {}
        self.hover_formats: Optional[list[str]] = None
        self.item_formats: Optional[list[str]] = None
        self.reported: set[str] = set()

    def run_after(self, early: Early, stdin: BinaryIO, stdout: BinaryIO) -> None:
        """pygls's ``start_io``, given first the messages ``answer_first`` read: its
        replies to those already answered go nowhere, the others are handled as read."""
        from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

        self._stop_event = stop = threading.Event()
        reader = StdinAsyncReader(stdin, self.thread_pool)
        writer = StdoutWriter(stdout)

        async def run() -> None:
            self.replay(early, writer)
            await run_async(
                stop_event=stop,
                reader=reader,
                protocol=self.protocol,
                logger=logger,
                error_handler=self.report_server_error,
            )

        try:
            asyncio.run(run())
        except BrokenPipeError:
            logger.error("the client went away")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def replay(self, early: Early, writer: Any) -> None:
        protocol = self.protocol
        for body in early.messages:
            try:
                message = json.loads(body, object_hook=protocol.structure_message)
            except Exception as exc:  # pygls's own loop logs and goes on, as here
                logger.error("unable to handle a message: %s", exc)
                continue
            answered = getattr(message, "id", None) in early.answered
            protocol.set_writer(_Nowhere() if answered else writer)
            if answered and getattr(message, "method", None) != types.INITIALIZE:
                continue  # a pull answered already: nothing of it to keep
            protocol.handle_message(message)  # initialize: pygls's workspace, our flags
            if answered:
                self.reported.clear()  # what it reported went nowhere: report it below
        protocol.set_writer(writer)
        for problem in early.problems:
            self.report(problem)

    def shutdown(self) -> None:
        """pygls's, and the checks still waiting for the thread are dropped."""
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
        document = server.workspace.get_text_document(uri)
        server.documents.changed(uri, document.source, params.text_document.version)

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
        if document is None or document.format is None:
            return None
        lines = Lines(document.text, server.encoding(), document.format)
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
        if document is None or document.format is None:
            return None
        lines = Lines(document.text, server.encoding(), document.format)
        line, col = lines.from_client(params.position.line, params.position.character)
        settings = server.documents.settings_for(document)
        rows = [lines.line_text(number + 1) for number in range(params.position.line + 1)]
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
