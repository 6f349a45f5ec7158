"""The viewer's web server: FastAPI app factory, one simulation session per WebSocket.

Contract:
- ``GET /`` serves the page, ``/static/...`` its script and style, ``GET /plotly.min.js`` the
  Plotly.js bundled in the installed ``plotly`` Python package: nothing is fetched from outside.
- Only the hosts the server was started for are answered (:mod:`.access`: its ``--host``, the
  loopback names, ``--allow-host`` names); any other ``Host`` gets 403, on the page and on the
  WebSocket alike (DNS rebinding). A WebSocket whose ``Origin`` is another site is refused too.
- ``/ws?scene=NAME`` is the live connection. The server sends ``hello`` (scene and integrator
  names, the message limit), an ``error`` if NAME is no built-in scene (the served scene opens
  instead), then the session's messages (see :mod:`.session`); it receives the
  commands of :mod:`.protocol`. A ``load`` or ``restart`` is answered at once with a ``status``
  message (``message``: what is being prepared), before its session builds the scene. Each connection owns a session in a process of its own
  (:mod:`.worker`), ticked at up to ``FRAME_RATE`` frames per second: this process only relays
  messages, so one client's scene builds, steps and large messages never hold up another's
  frames, and a session's memory is returned when its page leaves. At most ``MAX_SESSIONS``
  pages are served at once, at most ``MAX_PAGES_PER_ADDRESS`` of them to one client address (so
  that one client cannot hold every place); another is told so and closed (code 1013, try
  again later), before any process is started, as is a page from an address that opened more
  than ``PAGE_BURST`` at once, then ``PAGE_RATE`` a second (reconnect churn: :mod:`.rates`),
  before its hello.
- Every received message is validated; a malformed, unknown, binary or oversized
  (> ``MAX_MESSAGE_BYTES``) message, or one beyond the queue limit (``MAX_PENDING`` commands),
  is answered with an ``error`` to that client only and the connection goes on. Of the loads
  and restarts a page sends while its session is busy only the newest is built: it replaces the
  one still queued, and its ``status`` says so (:func:`queued`). A page's messages are read at most ``MESSAGE_RATE`` a second
  (a faster client waits, unread), and a client sending more than ten pings, or more than a
  hundred frames that end no message (pongs, fragments), a second is closed (1008): none of
  these can fill the event loop all pages share. uvicorn itself closes a connection that sends a frame above
  ``WS_MAX_SIZE``; an upgrade request too large to read is answered (414, 431) and closed
  (:class:`WebSocketProtocol`). A request not read whole within seconds is answered 408, and
  unfinished requests are capped (:mod:`.slow_clients`).
- :func:`run` binds 127.0.0.1 unless another host is given. :func:`listen` binds first, so that a
  bad port, a host that is not an address of this machine or a port in use is one
  HookeInputError naming ``port`` or ``host`` before anything is printed or served.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import time
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Iterable

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Opcode

from ...errors import HookeInputError, as_path, is_count
from ...integrators import base as integrator_registry
from ...scenes import names as scene_names
from .access import HostAllowlist, allowed_hosts, same_origin
from .observed import ObservedOverlay
from .rates import PerAddress, TokenBucket
from .protocol import MAX_MESSAGE_BYTES, Drag, Load, ProtocolError, Restart, Set, parse_command
from .session import error_message
from .slow_clients import HTTPProtocol, abort_after_grace
from .worker import SessionEnded, SessionProcess, encode, zygote

FRAME_RATE = 60.0
MAX_PENDING = 256  # commands waiting for the next frame; beyond this a client is flooding
# Messages read from one page a second (and at once, after a pause): a page sends one per pointer
# move while dragging, at most its display's rate. A client sending faster waits, its socket
# unread: five clients flooding `step` had the event loop parse and answer every message, and
# brought another page from 57 to 0.5 frames/s.
MESSAGE_RATE = 240.0
WS_MAX_SIZE = 1024 * 1024  # uvicorn's hard per-frame limit, far above MAX_MESSAGE_BYTES
# Pages served at once: each is a process of ~10-150 MB (its scene), so this bounds the memory
# that many open pages can take.
MAX_SESSIONS = 32
# Pages one client address may open a second (PAGE_BURST at once): each starts a session process,
# whose fork, scene build and exit cost the machine ~5 ms of CPU beyond this process. Eight
# clients reconnecting as fast as they could (~180 pages a second) took another page from 58 to
# 32 frames/s; a page reloaded, or a dozen opened at once, stays far below.
PAGE_RATE = 8.0
PAGE_BURST = MAX_SESSIONS
# Pages one client address may have open at once: a client that opened MAX_SESSIONS pages (and
# kept them) left every other address "the viewer is serving 32 pages" (issue 15 red team); a
# quarter of the places stay for the others (the load tests' 22 local pages still fit).
MAX_PAGES_PER_ADDRESS = MAX_SESSIONS * 3 // 4

log = logging.getLogger(__name__)
STATIC = resources.files(__package__) / "static"


def plotly_bundle() -> str:
    """Path of the Plotly.js file shipped inside the installed ``plotly`` package."""
    return str(resources.files("plotly") / "package_data" / "plotly.min.js")


def hello_message() -> dict[str, Any]:
    return {
        "type": "hello", "scenes": scene_names(),
        "integrators": [{"name": name, "summary": integrator_registry.get(name).summary}
                        for name in integrator_registry.names()],
        "max_message_bytes": MAX_MESSAGE_BYTES,
    }


def preparing_message(command: Load | Restart, dropped: int = 0) -> dict[str, Any]:
    """The ``status`` a page is sent as soon as it asks for a scene to be (re)built: the build,
    and the first time a Numba kernel it needs is compiled, may take seconds. ``dropped``: 1 if
    it replaced a load or restart still queued (:func:`queued`), else 0."""
    text = (f"preparing scene {command.scene} (the first time, compiling its integrator can take "
            "seconds)…" if isinstance(command, Load) else "restarting the scene…")
    if dropped:
        text += " (the earlier one, not yet started, is dropped: only the newest is built)"
    return {"type": "status", "message": text}


def queued(pending: list, command) -> tuple[list, int]:
    """``pending`` with ``command`` queued, and how many loads and restarts it replaced. A load or
    restart replaces the one still queued (at most one is) with the commands sent after it, which
    were meant for a scene that is now never built, except a ``set`` (its steps per frame last
    across restarts): a client restarting a 49,600-particle lattice every 250 ms had four
    restarts queued, built one after another for seconds, and saw no scene for as long as it
    went on. A drag replaces a drag just before it: only the latest cursor position matters."""
    if isinstance(command, (Load, Restart)):
        for k, earlier in enumerate(pending):
            if isinstance(earlier, (Load, Restart)):
                kept = [later for later in pending[k + 1:] if isinstance(later, Set)]
                return [*pending[:k], *kept, command], 1
    elif isinstance(command, Drag) and pending and isinstance(pending[-1], Drag):
        return [*pending[:-1], command], 0
    return [*pending, command], 0


class MessageBudget:
    """:meth:`take` returns while fewer than ``rate`` messages a second (``rate`` at once) were
    taken, and otherwise waits until one more may be (a :class:`.rates.TokenBucket`). It always
    lets the event loop run first: a page's queued messages are read without waiting, and
    answering hundreds in a row would hold up the other pages."""

    def __init__(self, rate: float):
        self.loop = asyncio.get_running_loop()
        self.bucket = TokenBucket(rate, rate, self.loop.time())

    async def take(self) -> None:
        await asyncio.sleep(self.bucket.wait(self.loop.time()))
        self.bucket.tokens -= 1.0


class QuietClosedSockets(logging.Filter):
    """Drops asyncio's "socket.send() raised exception.", printed for every write after the fifth
    to a socket whose client has gone: a page's batch of messages is written before the server
    hears it left, and those are dropped, nothing more. Clients that sent thousands of commands
    and left by a reset printed it on the server's stderr, 1,485 lines in 20 s."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "socket.send() raised exception."


class QuietForcedEnd(logging.Filter):
    """Drops uvicorn's reports that the app's lifespan, or a page's handler, was cancelled: a
    second Ctrl-C while the server ends (its pages' processes being stopped) cuts both short,
    which has nothing left to do (the fork server, and the session processes with their
    channels, end with the server), and printed a 40-line traceback for the lifespan and 25
    lines ("Exception in ASGI application") for each page still stepping above hooke's
    "error: interrupted"."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            return False
        text = record.getMessage()
        return not ("lifespan" in text and text.rstrip().endswith("CancelledError"))


class RareInvalidRequests(logging.Filter):
    """Lets uvicorn's "Invalid HTTP request received." through at most once a minute: each
    request it cannot parse (no Host header, a NUL byte in a header) printed that warning, so a
    client sending thousands of them filled the server's stderr (and any log kept of it). One
    a minute still tells whoever watches the server that such requests come."""

    def __init__(self, clock=time.monotonic):
        super().__init__()
        self.clock = clock
        self.bucket = TokenBucket(1 / 60, 1.0, clock())

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.getMessage() != "Invalid HTTP request received."
                or self.bucket.take(self.clock()))


QUIET_CLOSED_SOCKETS, QUIET_FORCED_END = QuietClosedSockets(), QuietForcedEnd()
RARE_INVALID_REQUESTS = RareInvalidRequests()


class Connection:
    """One page: receives commands, has its session process tick them, relays the messages."""

    def __init__(self, websocket: WebSocket, session: SessionProcess):
        self.websocket = websocket
        self.session = session
        self.pending: list = []
        self._send_lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_text(encode(message).decode())

    async def send_text(self, text: str) -> None:
        async with self._send_lock:
            await self.websocket.send_text(text)

    async def relay(self) -> None:
        """Send the messages of the batch the session process is sending."""
        async for text in self.session.replies():
            await self.send_text(text)

    async def receive_loop(self) -> None:
        budget = MessageBudget(MESSAGE_RATE)
        while True:
            await budget.take()
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            try:
                if text is None:
                    raise ProtocolError("binary messages are not accepted; send JSON text")
                command = parse_command(text)
                if len(self.pending) >= MAX_PENDING:
                    raise ProtocolError(f"too many commands queued (limit {MAX_PENDING})")
            except ProtocolError as error:
                await self.send({"type": "error", "message": str(error), "field": error.field})
                continue
            self.pending, dropped = queued(self.pending, command)
            if isinstance(command, (Load, Restart)):  # told now: a build may take seconds
                await self.send(preparing_message(command, dropped))

    async def frame_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            commands, self.pending = self.pending, []
            await self.session.request(commands)
            await self.relay()
            await asyncio.sleep(max(0.0, 1.0 / FRAME_RATE - (loop.time() - started)))


def client_address(websocket: WebSocket) -> str:
    """The address a page's connection comes from ("" when the server is not told)."""
    return websocket.client.host if websocket.client else ""


async def refuse(websocket: WebSocket, code: int, reason: str) -> None:
    """Send ``reason`` as an ``error`` and close with ``code``, if the page is still there."""
    try:
        await websocket.send_text(encode({"type": "error", "message": reason, "field": None}).decode())
    except (WebSocketDisconnect, RuntimeError, OSError):
        return  # it left first
    await close(websocket, code)


async def close(websocket: WebSocket, code: int) -> None:
    try:
        await websocket.close(code=code)
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass  # closed already


def create_app(scene: str = "spring1d", host: str = "127.0.0.1",
               allow_hosts: Iterable[str] = (), observed=None) -> FastAPI:
    """The viewer app; pages open ``scene`` unless their URL asks for another (``?scene=``).
    ``host`` is the address it is served on and ``allow_hosts`` more names it answers to
    (:mod:`.access`). ``observed``: a file of observed motion of ``scene`` (as ``hooke fit``
    reads it), drawn beside the simulated one while a page runs that scene (:mod:`.observed`)."""
    if not isinstance(scene, str) or scene not in scene_names():  # an array: no NumPy error
        raise HookeInputError("SCENE", f"unknown scene (built-in: {', '.join(scene_names())})", scene)
    allow_hosts = tuple(allow_hosts)
    allowed_hosts(host, allow_hosts)  # a name that is none is one line now, not at the first page
    overlay = None
    if observed is not None:
        overlay = ObservedOverlay(scene, as_path(observed, "observed").resolve())
        overlay.check()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        logging.getLogger("asyncio").addFilter(QUIET_CLOSED_SOCKETS)
        logging.getLogger("uvicorn.error").addFilter(QUIET_FORCED_END)
        logging.getLogger("uvicorn.error").addFilter(RARE_INVALID_REQUESTS)
        await asyncio.to_thread(zygote)  # the fork server warms up while the first page loads
        yield

    app = FastAPI(title="hooke viewer", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    app.add_middleware(HostAllowlist, bind=host, extra=allow_hosts)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    # Every connected page, with its session process once it has one (tests read it too).
    pages: dict[WebSocket, SessionProcess | None] = {}
    app.state.pages = pages
    starts = PerAddress(PAGE_RATE, PAGE_BURST)  # pages opened, by client address
    hello = encode(hello_message()).decode()  # the same for every page: built once

    # HEAD as well as GET, as the static files answer (`curl -I` of the viewer's address).
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html")

    @app.api_route("/plotly.min.js", methods=["GET", "HEAD"], include_in_schema=False)
    async def plotly() -> FileResponse:
        return FileResponse(plotly_bundle(), media_type="text/javascript")

    @app.websocket("/ws")
    async def live(websocket: WebSocket) -> None:
        if not same_origin(websocket.headers):
            await websocket.close(code=1008)
            return
        await websocket.accept()
        session = None
        pages[websocket] = None
        address = client_address(websocket)
        try:
            if not starts.take(address):
                await refuse(websocket, 1013, f"this address opened pages faster than the viewer "
                             f"serves them ({PAGE_RATE:g} a second, {PAGE_BURST} at once): wait a "
                             "second and reload this page")
                return  # before its hello: a refused page costs this process the least
            await websocket.send_text(hello)
            if sum(client_address(page) == address for page in pages) > MAX_PAGES_PER_ADDRESS:
                await refuse(websocket, 1013, f"this address has {MAX_PAGES_PER_ADDRESS} pages of "
                             "the viewer open, the most one address may: close one and reload "
                             "this page")
                return
            if len(pages) > MAX_SESSIONS:
                await refuse(websocket, 1013, f"the viewer is serving {MAX_SESSIONS} pages, its "
                             "limit: close one and reload this page")
                return
            asked = websocket.query_params.get("scene") or scene
            if asked not in scene_names():  # only a known name goes on to the fork server
                await websocket.send_text(encode(error_message(HookeInputError(
                    "scene", f"unknown scene (built-in: {', '.join(scene_names())})", asked))).decode())
                asked = scene
            session = await SessionProcess.start(asked, scene, overlay)
            pages[websocket] = session
            connection = Connection(websocket, session)
            await connection.relay()  # the opening: the scene (after an error if it was unknown)
            tasks = [asyncio.create_task(connection.receive_loop()),
                     asyncio.create_task(connection.frame_loop())]
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            for task in done:  # a send or receive on a closed connection ends it, nothing more
                if isinstance(task.exception(), SessionEnded):
                    raise task.exception()
                if task.exception() is not None:
                    log.debug("viewer connection closed: %r", task.exception())
            await close(websocket, 1000)  # if the page is still there: never leave it waiting
        except SessionEnded as ended:
            await refuse(websocket, 1011, str(ended))
        except WebSocketDisconnect:
            pass
        finally:
            try:
                if session is not None:
                    await session.close()
            finally:
                pages.pop(websocket, None)  # counted until its process has ended

    return app


def url(host: str, port: int) -> str:
    """The address to open in a browser."""
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, which also sends the websockets library's answer to an
    upgrade request it cannot read (a request line above 8 KiB: 414; more than 128 headers: 431)
    and closes: uvicorn left that answer unsent and the connection open forever. A text message
    that is not UTF-8 closes the connection (1007, as the protocol requires) without uvicorn's
    traceback on the server's stderr. A page that does not answer the keepalive ping in time is
    dropped with what was still to be sent to it: uvicorn's close waited for that to drain, which
    never happens for a client that stopped reading, and its page held a place for ever. A
    client that sends more than ``MAX_PINGS`` pings within a second is closed (1008): each ping
    is answered in the event loop all pages share (five clients flooding pings brought another
    page from 57 to 20 frames/s), and a browser's page cannot send one. Likewise a client that
    sends more than ``MAX_PARTIAL_FRAMES`` frames a second that end no message (pongs, the parts
    of a fragmented message): only a whole message pauses the reading, and one client sending
    empty pongs or the empty fragments of a message that never ends had tens of thousands parsed
    per read (a page from 57 to 1.5 frames/s; the fragments also grew the server's memory). A
    page answers one keepalive ping each 20 s and does not fragment its messages. A read is
    parsed ``FEED_BYTES`` at a time, and not parsed further once its client is closed."""

    MAX_PINGS = 10
    MAX_PARTIAL_FRAMES = 100
    FEED_BYTES = 4096

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.counts: dict[str, tuple[float, int]] = {}  # kind: (the second's start, frames in it)

    def too_many(self, kind: str, most: int) -> bool:
        """Count one frame of ``kind``; whether it is more than ``most`` within a second (then
        the client is closed with 1008, once)."""
        now = self.loop.time()
        since, count = self.counts.get(kind, (-1.0, 0))
        if now - since >= 1.0:
            since, count = now, 0
        self.counts[kind] = (since, count + 1)
        if count < most:
            return False
        if not self.close_sent:
            self.conn.send_close(1008, f"more than {most} {kind} a second")
            self.handle_parser_exception()
        return True

    def handle_ping(self) -> None:
        if not self.too_many("pings", self.MAX_PINGS):
            super().handle_ping()

    def partial(self, event) -> bool:
        """Whether ``event`` is a frame that ends no message, beyond the client's allowance."""
        return ((not event.fin or event.opcode is Opcode.PONG)
                and self.too_many("frames that end no message", self.MAX_PARTIAL_FRAMES))

    def handle_text(self, event) -> None:
        if not self.partial(event):
            super().handle_text(event)

    def handle_bytes(self, event) -> None:
        if not self.partial(event):
            super().handle_bytes(event)

    def handle_cont(self, event) -> None:
        if not self.partial(event):
            super().handle_cont(event)

    def handle_pong(self, event) -> None:
        if not self.partial(event):
            super().handle_pong(event)

    def keepalive_timeout(self) -> None:
        super().keepalive_timeout()
        self.transport.abort()

    def shutdown(self) -> None:  # a client that stopped reading cannot hold the server's stop
        super().shutdown()
        abort_after_grace(self)

    def send_receive_event_to_app(self) -> None:
        if self.curr_msg_data_type == "text" and not self.close_sent:
            try:
                b"".join(self.frames).decode()
            except UnicodeDecodeError:
                self.frames = []
                self.conn.send_close(1007, "a text message must be UTF-8")
                self.handle_parser_exception()
                return
        super().send_receive_event_to_app()

    def data_received(self, data: bytes) -> None:
        for start in range(0, len(data), self.FEED_BYTES):
            if self.transport.is_closing():  # e.g. closed for a flood: the rest is dropped
                return
            super().data_received(data[start:start + self.FEED_BYTES])
        if (not self.handshake_initiated and self.conn.handshake_exc is not None
                and not self.transport.is_closing()):
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.transport.close()


def uvicorn_options(host: str = "127.0.0.1", port: int = 8000) -> dict[str, Any]:
    """The uvicorn settings the viewer is served with (its tests serve it with the same)."""
    # No permessage-deflate: compressing a large scene's megabytes would run in this process's
    # event loop, the one cost a client could still impose on the others (a 49,600-particle
    # lattice's restarts stalled other pages for over a second with it).
    # No proxy headers: uvicorn trusts X-Forwarded-For from 127.0.0.1 by default, so any local
    # client could name itself another address each time and pass the per-address limits.
    return {"host": host, "port": port, "http": HTTPProtocol, "ws": WebSocketProtocol, "ws_max_size": WS_MAX_SIZE,
            "ws_per_message_deflate": False, "log_level": "warning", "proxy_headers": False}


def listen(host: str = "127.0.0.1", port: int = 8000) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` (port 0: any free port), ready for :func:`run`."""
    if not is_count(port) or not 0 <= port <= 65535:
        raise HookeInputError("port", "must be an integer in 0..65535 (0: any free port)", port)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as error:
        raise HookeInputError("host", f"is not an address or a name that resolves ({error})",
                              host) from None
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
    try:
        listener.bind(address)
    except OSError as error:
        listener.close()
        if error.errno == errno.EADDRINUSE:
            raise HookeInputError("port", "is in use by another program; choose another (0: any "
                                  "free port)", port) from None
        if error.errno == errno.EACCES:
            raise HookeInputError("port", "needs privileges this user does not have (ports below "
                                  "1024); choose another", port) from None
        raise HookeInputError("host", f"cannot listen there ({error.strerror or error}); give an "
                              "address of this machine, e.g. 127.0.0.1 or 0.0.0.0", host) from None
    return listener


def run(app: FastAPI, host: str = "127.0.0.1", port: int = 8000,
        listener: socket.socket | None = None) -> None:
    """Serve ``app`` (from :func:`create_app`) until interrupted, on ``listener`` (from
    :func:`listen`) or else on a socket bound to ``(host, port)`` here."""
    import uvicorn

    listener = listener or listen(host, port)
    port = listener.getsockname()[1]
    with listener:
        uvicorn.Server(uvicorn.Config(app, **uvicorn_options(host, port))).run(sockets=[listener])
