"""Running the service with uvicorn, hardened against slow clients.

uvicorn has no deadline for a request's headers: a client that opens a connection and sends a
header byte every few seconds holds it forever (300 of 300 such clients were still connected
after 45 s). :class:`GuardedH11Protocol` closes a connection whose request headers have not all
arrived ``client_timeout`` seconds after it opened or after its previous response; the body's
deadline is enforced by the app (``ltrfeat.serving.app``), which answers 408.
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("ltrfeat.serve")


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's headers."""

    client_timeout = 10.0  # set per server by :func:`protocol_class`

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._header_deadline is not None and self.conn.their_state is not h11.IDLE:
            self._header_deadline.cancel()  # the request line and headers are in
            self._header_deadline = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_deadline()  # a kept-alive connection's next request gets a new deadline

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
        self._header_deadline = self.loop.call_later(self.client_timeout, self._headers_too_slow)

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0]:  # part of a request arrived; a silent connection closes quietly
            client = "%s:%d" % self.client if self.client else "a client"
            log.warning(
                "closed the connection of %s: request headers incomplete after %.0f s", client, self.client_timeout
            )
        self.transport.close()


def protocol_class(client_timeout: float) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` subclass with this header deadline."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"client_timeout": float(client_timeout)})


def run(app, *, host: str, port: int, client_timeout: float) -> None:
    """Serve ``app`` on ``host:port`` until SIGINT/SIGTERM; keep-alive connections idle for
    ``client_timeout`` seconds are closed too."""
    import uvicorn

    uvicorn.run(
        app,
        host=host,
        port=port,
        http=protocol_class(client_timeout),
        log_level="warning",
        access_log=False,
        timeout_keep_alive=max(1, round(client_timeout)),
    )
