"""Clients that never finish a request (slowloris): the viewer's HTTP protocol times them out.

uvicorn reads a request's line and headers for as long as the client takes: a client that opens
connections and sends its headers a byte at a time, never finishing, held every one of them for
ever (issue 15 red team), and enough of them exhaust the server's file descriptors.

Contract of :class:`HTTPProtocol` (uvicorn's h11 protocol, which the viewer is served with):

- a request must be read whole (its line, headers and any body; a WebSocket's upgrade request)
  within ``REQUEST_TIMEOUT`` seconds of its first byte, or of the connection's opening: trickling
  bytes does not extend it. Otherwise the client is answered ``408 Request Timeout`` (if nothing
  was sent to it yet) and the connection is closed;
- at most ``MAX_UNFINISHED`` connections of one server are reading a request at once: a new one
  beyond that closes the oldest (``503``), which a browser would have finished long ago, so a
  flood of unfinished connections never shuts out a page that sends its request at once.

When the server stops, a connection still open ``SHUTDOWN_GRACE`` seconds later is dropped
(:func:`abort_after_grace`, for HTTP and WebSocket connections alike).

Once its request is read a connection is the app's: a page's WebSocket has its keepalive ping
(:class:`.server.WebSocketProtocol`), a finished HTTP request uvicorn's keep-alive timeout.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

REQUEST_TIMEOUT = 10.0  # seconds to send one request whole; a browser takes milliseconds
SHUTDOWN_GRACE = 3.0  # seconds a connection has to close once the server is stopping
MAX_UNFINISHED = 64  # connections reading a request at once, per server

# Each server's connections that are reading a request, oldest first (by its ServerState).
_unfinished: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# The client's states in which its request is still being read.
READING = (h11.IDLE, h11.SEND_BODY)


def answer(transport: asyncio.Transport, status: str, reason: str) -> None:
    """Send a one-line plain-text answer with ``status`` and close the connection."""
    body = f"hooke viewer: {reason}\n".encode()
    transport.write(f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n"
                    f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
    transport.close()


def abort_after_grace(protocol) -> None:
    """Drop ``protocol``'s connection if it is still open ``SHUTDOWN_GRACE`` seconds after the
    server began to stop (called from its ``shutdown``): uvicorn waits for every connection to
    close, and one whose client stopped reading never does, so a SIGTERM (a scheduler's, a
    container's stop) left ``hooke serve`` running for ever beside four such clients."""
    protocol.loop.call_later(SHUTDOWN_GRACE, protocol.transport.abort)


class HTTPProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a time limit on reading a request and a cap on the
    connections doing so (see the module docstring)."""

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.request_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self.reading_started()

    def data_received(self, data: bytes) -> None:
        if self.request_timer is None and self.conn.their_state is h11.IDLE:
            self.reading_started()  # the next request on a kept-alive connection
        super().data_received(data)
        if (self.transport.get_protocol() is not self or self.transport.is_closing()
                or self.conn.their_state not in READING):
            self.reading_ended()  # read whole, upgraded to a WebSocket, or refused

    def connection_lost(self, exc: Exception | None) -> None:
        self.reading_ended()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        super().shutdown()
        abort_after_grace(self)

    def reading_started(self) -> None:
        unfinished = _unfinished.setdefault(self.server_state, OrderedDict())
        while len(unfinished) >= MAX_UNFINISHED:
            oldest, _ = unfinished.popitem(last=False)
            oldest.give_up("503 Service Unavailable", f"more than {MAX_UNFINISHED} connections "
                           "were sending their requests at once; this one was the oldest")
        unfinished[self] = None
        self.request_timer = self.loop.call_later(REQUEST_TIMEOUT, self.give_up, "408 Request Timeout",
                                                  f"a request must be sent within {REQUEST_TIMEOUT:g} s")

    def reading_ended(self) -> None:
        if self.request_timer is not None:
            self.request_timer.cancel()
            self.request_timer = None
        _unfinished.get(self.server_state, {}).pop(self, None)

    def give_up(self, status: str, reason: str) -> None:
        """Close a connection whose request was not read in time (answered, if nothing was sent
        on it yet)."""
        self.reading_ended()
        if self.transport.is_closing():
            return
        if self.conn.our_state is h11.IDLE:
            answer(self.transport, status, reason)
        else:  # a response was under way (e.g. 405 to a body that trickles in): drop it, as a
            self.transport.abort()  # close would wait for a client that may not read
