"""The viewer's web server: FastAPI app factory, one simulation session per WebSocket.

Contract:
- ``GET /`` serves the page, ``/static/...`` its script and style, ``GET /plotly.min.js`` the
  Plotly.js bundled in the installed ``plotly`` Python package: nothing is fetched from outside.
- ``/ws?scene=NAME`` is the live connection. The server sends ``hello`` (scene and integrator
  names, the message limit), then the session's messages (see :mod:`.session`); it receives the
  commands of :mod:`.protocol`. Each connection owns a :class:`.session.Session` stepped in a
  worker thread at up to ``FRAME_RATE`` frames per second, so one slow scene or client never
  holds up another, and the page never waits for a whole run.
- Every received message is validated; a malformed, unknown, binary or oversized
  (> ``MAX_MESSAGE_BYTES``) message, or one beyond the queue limits (``MAX_PENDING`` commands,
  ``MAX_PENDING_REBUILDS`` scene builds per frame), is answered with an ``error`` to that client
  only and the connection goes on. A WebSocket whose ``Origin`` is another site is refused
  (another page in the browser cannot drive a local viewer). uvicorn itself closes a connection
  that sends a frame above ``WS_MAX_SIZE``.
- :func:`run` binds 127.0.0.1 unless another host is given. :func:`listen` binds first, so that a
  bad port, a host that is not an address of this machine or a port in use is one
  HookeInputError naming ``port`` or ``host`` before anything is printed or served.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from ...errors import HookeError, HookeInputError, is_count
from ...integrators import base as integrator_registry
from ...scenes import names as scene_names
from .protocol import MAX_MESSAGE_BYTES, Drag, Load, ProtocolError, Restart, parse_command
from .session import Session, error_message

FRAME_RATE = 60.0
MAX_PENDING = 256  # commands waiting for the next frame; beyond this a client is flooding
MAX_PENDING_REBUILDS = 4  # of which scene builds (load, restart), which may take a second each
WS_MAX_SIZE = 1024 * 1024  # uvicorn's hard per-frame limit, far above MAX_MESSAGE_BYTES

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


def same_origin(websocket: WebSocket) -> bool:
    """True without an Origin header (non-browser clients) or when it names this server."""
    origin = websocket.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == websocket.headers.get("host")


class Connection:
    """One page: receives commands, runs its session's frames, sends the messages."""

    def __init__(self, websocket: WebSocket, session: Session):
        self.websocket = websocket
        self.session = session
        self.pending: list = []
        self._send_lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        text = json.dumps(message, allow_nan=False, separators=(",", ":"))  # browsers reject NaN
        async with self._send_lock:
            await self.websocket.send_text(text)

    async def receive_loop(self) -> None:
        while True:
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
                if (isinstance(command, (Load, Restart)) and MAX_PENDING_REBUILDS <= sum(
                        isinstance(queued, (Load, Restart)) for queued in self.pending)):
                    raise ProtocolError(f"too many restarts queued (limit {MAX_PENDING_REBUILDS})")
            except ProtocolError as error:
                await self.send({"type": "error", "message": str(error), "field": None})
                continue
            if isinstance(command, Drag) and self.pending and isinstance(self.pending[-1], Drag):
                self.pending[-1] = command  # only the latest cursor position matters
            else:
                self.pending.append(command)

    async def frame_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            commands, self.pending = self.pending, []
            try:
                messages = await asyncio.to_thread(self.session.tick, commands)
            except Exception as error:  # a bug in one session must not end the server
                log.exception("viewer session failed")
                self.session.paused = True
                messages = [{"type": "error", "message": f"internal error: {error!r} (paused)",
                             "field": None}]
            for message in messages:
                await self.send(message)
            await asyncio.sleep(max(0.0, 1.0 / FRAME_RATE - (loop.time() - started)))


def create_app(scene: str = "spring1d") -> FastAPI:
    """The viewer app; pages open ``scene`` unless their URL asks for another (``?scene=``)."""
    if scene not in scene_names():
        raise HookeInputError("SCENE", f"unknown scene (built-in: {', '.join(scene_names())})", scene)
    app = FastAPI(title="hooke viewer", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html")

    @app.get("/plotly.min.js", include_in_schema=False)
    async def plotly() -> FileResponse:
        return FileResponse(plotly_bundle(), media_type="text/javascript")

    @app.websocket("/ws")
    async def live(websocket: WebSocket) -> None:
        if not same_origin(websocket):
            await websocket.close(code=1008)
            return
        await websocket.accept()
        requested = websocket.query_params.get("scene") or scene
        try:
            await websocket.send_json(hello_message())
            try:
                session = await asyncio.to_thread(Session, requested)
            except HookeError as error:
                await websocket.send_json(error_message(error))
                session = await asyncio.to_thread(Session, scene)
            connection = Connection(websocket, session)
            await connection.send(session.scene_message())
            tasks = [asyncio.create_task(connection.receive_loop()),
                     asyncio.create_task(connection.frame_loop())]
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            for task in done:  # a send or receive on a closed connection ends it, nothing more
                if task.exception() is not None:
                    log.debug("viewer connection closed: %r", task.exception())
        except WebSocketDisconnect:
            pass

    return app


def url(host: str, port: int) -> str:
    """The address to open in a browser."""
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def uvicorn_options(host: str = "127.0.0.1", port: int = 8000) -> dict[str, Any]:
    """The uvicorn settings the viewer is served with (its tests serve it with the same)."""
    return {"host": host, "port": port, "ws_max_size": WS_MAX_SIZE, "log_level": "warning"}


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
