"""pygls's part of the server: code actions, and the protocol's rarer methods.

The session (``_session``) answers everything a client sends at each
keystroke without pygls; this module is loaded on a thread of its own once
the first diagnostics are out (or a message needs it), and given the
messages of ``_session.PYGLS_METHODS``: ``textDocument/codeAction`` (its
handler here), ``workspace/executeCommand``, ``$/setTrace``,
``workspace/didChangeWorkspaceFolders``, ``window/workDoneProgress/cancel``
(pygls's own handlers), and cancellations of and responses to those.

pygls is given ``initialize`` once, as the session read it (its reply goes
nowhere: the session answered): a ``rootUri`` ``urlparse`` refuses and any
``rootPath`` are left out (pygls's ``to_fs_path`` and ``from_fs_path`` raise
``ValueError`` on ``file://[x/`` and ``//x``), and params pygls cannot read
are read as ``_start`` reads them (``readable_initialize``). A request whose
params the protocol's types do not take is answered ``InvalidParams``
(-32602) (pygls's reader raises before it knows the id, and shows "Error in
server"). Code actions on a large document are computed on a worker thread,
as its checks are; one whose document was edited since its check was
asked for is answered ``ContentModified`` (-32801), never with edits for a
text the client no longer has.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Optional

from cattrs.errors import ClassValidationError
from cattrs.v import transform_error
from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, default_converter

from agent_rollout._limits import LSP_INLINE_CHARS
from agent_rollout.lsp._actions import FIX_ALL, code_actions, forget
from agent_rollout.lsp._documents import Checked, Documents
from agent_rollout.lsp._start import Client, pygls_initialize, readable_initialize
from agent_rollout.lsp._text import Lines
from agent_rollout.lsp._wire import INVALID_PARAMS, error_reply, frame

__all__ = ["RolloutLanguageServer", "build_server"]

logger = logging.getLogger(__name__)


class RolloutLanguageServer(LanguageServer):
    """pygls's server, given the messages the session leaves to it (``_session.Delegate``)."""

    def __init__(
        self, version: str, documents: Documents, client: Client, write: Callable[[bytes], None]
    ) -> None:
        converter = default_converter()
        super().__init__(
            "agent-rollout",
            version,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            converter_factory=lambda: converter,
            max_workers=2,
        )
        self.converter = converter
        self.documents = documents
        self.client = client
        self.out = _Writer(write)

    # ---- _session.Delegate

    def dispatch(self, item: dict[str, Any]) -> None:
        """Give a message to pygls; one it cannot read is answered ``InvalidParams`` (a
        request) or logged and dropped."""
        method = item.get("method")
        try:
            message = self.structure(item)
        except Exception as exc:
            reason = f"{method}: params the protocol does not take ({_why(exc)})"
            if method is not None and "id" in item:
                self.out.write(frame(error_reply(item["id"], INVALID_PARAMS, reason)))
            else:
                logger.warning("agent-rollout lsp: a message was skipped: %s", reason)
            return
        self.protocol.handle_message(message)

    def closed(self, uri: str) -> None:
        forget(uri)

    def close(self) -> None:
        self.shutdown()

    # ----

    def start(self, item: dict[str, Any]) -> None:
        """pygls's ``initialize``, its reply sent nowhere; then the real writer."""
        self.protocol.set_writer(_Nowhere())
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
        self.protocol.set_writer(self.out)

    def structure(self, item: dict[str, Any]) -> Any:
        """The message as pygls's handlers take it (lsprotocol's types); raises when its
        params are not what the protocol says. A message without ``params`` is tried
        again with empty ones."""
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

    def lines_of(self, checked: Checked) -> Lines:
        return Lines(checked.text, self.client.encoding, checked.format)


class _Writer:
    """pygls's writer: framed bytes to the session's output."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self.write = write

    def close(self) -> None:
        pass


class _Nowhere:
    """A writer that drops what it is given: pygls's reply to ``initialize``."""

    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def _why(exc: BaseException) -> str:
    """What cattrs (or anything else) found wrong with a message, in a line."""
    if isinstance(exc, ClassValidationError):
        return "; ".join(transform_error(exc)[:3])  # "... @ $.params.position"
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def build_server(
    version: str,
    documents: Documents,
    client: Client,
    initialize: dict[str, Any],
    write: Callable[[bytes], None],
) -> RolloutLanguageServer:
    """The server with its handler registered and ``initialize`` given (``_session.Loader``)."""
    server = RolloutLanguageServer(version, documents, client, write)

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
        arguments: tuple[Any, ...] = (
            uri,
            checked,
            server.lines_of(checked),
            params.range,
            only,
            server.client.versioned_edits,
            list(params.context.diagnostics),
        )
        if len(checked.text) <= LSP_INLINE_CHARS:
            found = code_actions(*arguments)
        else:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(server.documents.executor, code_actions, *arguments)
        now = server.documents.open.get(uri)
        if now is not document or now.edits != checked.edit:
            # edited meanwhile: the edits are for a text the client no longer has
            raise JsonRpcContentModified(f"{uri} changed while its code actions were computed")
        return found

    server.start(initialize)
    return server
