"""Each page's simulation in a process of its own: one client's work cannot starve another's, and
what a session allocated goes back to the system when its page leaves (POSIX: fork).

Contract:
- :meth:`SessionProcess.start` (in the server, asyncio) starts one process per page connection
  and returns once it runs. The processes are forked by the server's fork server
  (:class:`Zygote`, a child process started once, :func:`zygote_main`), which has imported hooke
  and stepped a few scenes (:func:`warm_up`): a session process starts in ~50 ms and shares those
  pages instead of loading hooke's compiled kernels again (~70 MB each). Nothing of the server's
  own state (its ``__main__``, its threads, its sockets) is in a session process.
- A session process runs ``NICENESS`` steps below the server: the server, which only relays
  messages, gets the CPU first, and the sessions share the rest through the OS scheduler,
  however often one client restarts however large a scene; one whose tick has taken more than
  ``HOG_SECONDS`` of CPU drops to ``HOG_NICENESS`` for good (:class:`Watchdog`), so that pages of
  heavy work never hold up the frames of light ones. Scene builds, steps and JSON encoding
  never run in the server's event loop.
- Channel: a socket pair carrying frames (a 4-byte big-endian length, then that many bytes).
  Server → process: one frame per tick, the pickled list of that tick's commands (:mod:`.protocol`
  models). Process → server: the tick's messages (:meth:`.session.Session.tick`), each a frame of
  JSON text (:func:`encode`: a non-finite number becomes null), then an empty frame. The first
  batch, sent unasked, opens the page: an ``error`` if the asked scene does not exist (the
  server's scene opens instead), then the ``scene`` message.
- A process ends when its channel closes (its page left, or the server ended).
  :meth:`SessionProcess.close` closes it and, if the process is still inside a long step after
  ``GRACE`` seconds, ends it with SIGTERM, then SIGKILL. A process that dies (a crash, the OOM
  killer) raises :class:`SessionEnded` in that page's connection only. The fork server ends
  when the server does (its control socket closes).
- A failure inside a tick that is not the simulation's own (a bug) pauses that session with an
  ``error`` message; its process and connection go on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from numba.core import event as numba_event

from ...errors import HookeError
from .observed import ObservedOverlay
from .session import Session, StepTooLong, error_message

NICENESS = 5
# A session process whose tick has used HOG_SECONDS of CPU (a frame's work is normally a few ms:
# the frame budget and one step) lowers itself to HOG_NICENESS for good. Ten pages flooding `step`
# on a 27,000-particle implicit lattice (256 steps a tick) left a spring1d page 0.2-11 frames/s
# at the same niceness, 56 frames/s at this one (issue 15).
HOG_SECONDS = 0.25
HOG_NICENESS = 19
# A session process stops a step that has used this much CPU time and pauses its run: until a
# step ends, its page gets no frame and none of its commands is applied. CPU time, not wall time:
# a step of a 49,600-particle lattice with implicit Euler takes 4-6 s alone, over 15 s of wall
# time beside four other such pages. Compiling a Numba kernel is not counted (step_alarm).
STEP_SECONDS = 15.0
GRACE = 2.0  # seconds a session process has to end after its page left
# While Numba compiles, the step limit is looked at again this often [s of CPU] (see step_alarm).
COMPILE_RECHECK = 1.0
# Stepped once in the fork server: between them they use the kernels most scenes need (explicit,
# linearly implicit with a direct solve, Newton with the barrier, generalized-α with joints, and
# with springs, joints and air: crane; rk45's compiled steps with joints: npendulum). A kernel
# none of them loads is compiled, or read from Numba's disk cache, by each session that needs it:
# with an empty cache npendulum's first switch took 7.5 s, crane's 11 s (issue 15). Each has
# fewer than kernels.PARALLEL_MIN_SPRINGS springs: a parallel kernel would start Numba's OpenMP
# threads, and every process forked after that aborts ("fork() called from a process already
# using GNU OpenMP").
WARM_SCENES = ("spring1d", "soft3d", "square_drop", "top", "npendulum", "crane")
HEADER = struct.Struct(">I")
PID = struct.Struct(">i")
READ_LIMIT = 1 << 20  # bytes the server buffers from a session process before it reads them
REQUEST_LIMIT = 1 << 16  # bytes of a fork request: a scene name, an --observed path (< 4 KiB)

log = logging.getLogger(__name__)


class SessionEnded(HookeError):
    """A page's session process ended while the page was connected."""


ENDED = "this page's simulation process ended unexpectedly; reload the page to start again"


# -- messages -------------------------------------------------------------------------------------

def encode(message: dict[str, Any]) -> bytes:
    """``message`` as compact JSON text (UTF-8), a non-finite number as null: a blown-up run's
    values must reach the page as a message, never end its connection (browsers reject NaN)."""
    try:
        text = json.dumps(message, allow_nan=False, separators=(",", ":"))
    except ValueError:  # rare (a run at the edge of overflow): the slow path only then
        text = json.dumps(finite(message), allow_nan=False, separators=(",", ":"))
    return text.encode()


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (in nested dicts and lists) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


# -- the session process --------------------------------------------------------------------------

def warm_up(scenes=WARM_SCENES) -> None:
    """One tick of each of ``scenes`` (the fork server's, before it forks any session)."""
    for name in scenes:
        try:
            Session(name).tick()
        except Exception:  # a cold session process is slower to start, nothing worse
            log.exception("viewer: warming up %s failed", name)


def run_session(channel: socket.socket, scene: str, fallback: str,
                observed: ObservedOverlay | None = None) -> None:
    """A session process's work: open ``scene`` (or ``fallback``), with ``observed`` drawn beside
    its scene, then answer ticks until the channel closes."""
    os.nice(NICENESS)
    with channel:
        try:
            try:
                session, opening = Session(scene, observed=observed), []
            except HookeError as error:
                session, opening = Session(fallback, observed=observed), [error_message(error)]
            session.step_limit = step_alarm
            watchdog = Watchdog()
            with watchdog.timing():
                send_batch(channel, [*opening, session.scene_message()])
            while (request := receive_frame(channel)) is not None:
                with watchdog.timing():
                    send_batch(channel, tick(session, pickle.loads(request)))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed this page's channel: the page left


class CompileTime(numba_event.Listener):
    """The CPU time [s] this process has spent compiling Numba kernels (listening to Numba's
    ``numba:compile`` events, nested ones counted once), and whether it is compiling now."""

    def __init__(self):
        self.depth, self.seconds, self.since = 0, 0.0, 0.0

    def on_start(self, event) -> None:
        if self.depth == 0:
            self.since = time.process_time()
        self.depth += 1

    def on_end(self, event) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.seconds += time.process_time() - self.since

    def total(self) -> float:
        """The compiling CPU time so far, a compile under way included."""
        return self.seconds + (time.process_time() - self.since if self.depth else 0.0)


COMPILE_TIME = CompileTime()
numba_event.register("numba:compile", COMPILE_TIME)


@contextmanager
def step_alarm():
    """Raise :class:`StepTooLong` in the step still running after ``STEP_SECONDS`` of this
    process's CPU time (SIGPROF, in a session process's main thread; a compiled kernel is
    stopped once it returns to Python). Compiling a Numba kernel the step needs does not count,
    and is never interrupted: the first step of npendulum with rk45, its kernels not yet in
    Numba's cache, compiled for 14.6 s of CPU on a busy machine, and the alarm raised inside
    Numba's compiler left the kernel broken ("no compiled object yet for <Library '_run'>")."""
    excused = COMPILE_TIME.total()  # compiling time before the step, or already excused

    def expire(signum, frame):
        nonlocal excused
        owed = COMPILE_TIME.total() - excused
        if COMPILE_TIME.depth or owed > 0:  # the step's time to run is what compiling took
            excused += owed
            signal.setitimer(signal.ITIMER_PROF, max(owed, COMPILE_RECHECK))
            return
        raise StepTooLong(f"{STEP_SECONDS:g}")
    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, STEP_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


class Watchdog(threading.Thread):
    """Lowers this session process, every thread of it, to ``HOG_NICENESS`` once a span timed by
    :meth:`timing` has used more than ``HOG_SECONDS`` of CPU (measured as it runs: a tick of
    256 long steps is caught within it). Niceness only goes up: unprivileged, it cannot come
    back, and a page that was heavy once may be again."""

    def __init__(self):
        super().__init__(daemon=True, name="hooke-viewer-watchdog")
        self.since: float | None = None  # the CPU time at the start of the span being timed
        self.start()

    @contextmanager
    def timing(self):
        self.since = time.process_time()
        try:
            yield
        finally:
            self.since = None

    def run(self) -> None:
        while True:
            time.sleep(HOG_SECONDS / 4)
            since = self.since
            if since is not None and time.process_time() - since > HOG_SECONDS:
                demote()
                return


def demote() -> None:
    """Every thread of this process to ``HOG_NICENESS`` (Linux: a nice value is per thread)."""
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:  # no /proc: this thread's process then
        threads = [0]
    for tid in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, HOG_NICENESS)
        except OSError:  # it has ended
            pass


def tick(session: Session, commands: list) -> list[dict[str, Any]]:
    try:
        return session.tick(commands)
    except Exception as error:  # a bug in one session must not end its page's connection
        log.exception("viewer session failed")
        session.paused = True
        return [{"type": "error", "message": f"internal error: {error!r} (paused)", "field": None}]


def send_batch(channel: socket.socket, messages: list[dict[str, Any]]) -> None:
    for message in messages:
        data = encode(message)
        channel.sendall(HEADER.pack(len(data)))
        channel.sendall(data)
    channel.sendall(HEADER.pack(0))


def receive_frame(channel: socket.socket) -> bytes | None:
    """The next frame's payload, or None once the channel is closed."""
    header = receive_exactly(channel, HEADER.size)
    return None if header is None else receive_exactly(channel, HEADER.unpack(header)[0])


def receive_exactly(channel: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = channel.recv(min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


# -- the fork server ("zygote") -----------------------------------------------------------------

def zygote_main(control_fd: int) -> None:
    """The fork server's main: warm up, then for each request on the control socket (a packet
    ``[scene, fallback, observed]`` in JSON, observed null or [its scene, its path], with a
    channel socket attached) fork a session process on that channel and reply with its pid (4
    bytes; -1 for a request it cannot read, and it goes on). Ends when the control socket
    closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C ends the server, which ends this
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps ended sessions: no zombies
    warm_up()  # its scenes are small: Numba's thread pool, which must not run at a fork, stays off
    with socket.socket(fileno=control_fd) as control:
        while True:
            request, fds, _, _ = socket.recv_fds(control, REQUEST_LIMIT, 1)
            if not request or not fds:
                return
            try:  # a request it cannot read fails that page only, never the fork server
                scene, fallback, observed = json.loads(request)
                if not (isinstance(scene, str) and isinstance(fallback, str)):
                    raise ValueError("scene and fallback must be names")
            except (ValueError, TypeError):
                log.warning("viewer fork server: unreadable request %r", request[:100])
                os.close(fds[0])
                if not answered(control, -1):
                    return
                continue
            pid = os.fork()
            if pid == 0:
                control.close()
                overlay = None if observed is None else ObservedOverlay(observed[0], Path(observed[1]))
                os._exit(session_main(fds[0], scene, fallback, overlay))
            os.close(fds[0])
            if not answered(control, pid):
                return


def answered(control: socket.socket, pid: int) -> bool:
    """Send the fork server's answer ``pid``; False if the server has ended meanwhile (stopped
    while a page was opening: the fork server, still warming up, printed a BrokenPipeError
    traceback on the server's stderr after it)."""
    try:
        control.send(PID.pack(pid))
    except OSError:  # the session process forked for it ends with its channel, closed too
        return False
    return True


def session_main(channel_fd: int, scene: str, fallback: str,
                 observed: ObservedOverlay | None = None) -> int:
    """A forked session process's main; its exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # A run that overflows is told to its page (in hooke run's words); NumPy's warnings about it
    # would only fill the server's stderr, a few lines per page a client opens.
    warnings.simplefilter("ignore", RuntimeWarning)
    try:
        run_session(socket.socket(fileno=channel_fd), scene, fallback, observed)
    except BaseException:  # noqa: BLE001 - reported, and this process only ends
        log.exception("viewer session process failed")
        return 1
    return 0


class Zygote:
    """The server's fork server: a child process (this interpreter, this hooke) that has warmed
    up and forks a session process for each page."""

    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        package_root = str(Path(__file__).resolve().parents[3])  # the hooke this server runs
        path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-c", f"from {__name__} import zygote_main; "
                 f"zygote_main({theirs.fileno()})"], pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": path})
        self.control = ours
        self.lock = threading.Lock()

    def fork(self, scene: str, fallback: str,
             observed: ObservedOverlay | None = None) -> tuple[int, socket.socket]:
        """A new session process (blocking until the fork server is ready): its pid and channel."""
        ours, theirs = socket.socketpair()
        request = [scene, fallback, None if observed is None else [observed.scene, str(observed.path)]]
        try:
            with theirs, self.lock:
                socket.send_fds(self.control, [json.dumps(request).encode()], [theirs.fileno()])
                reply = self.control.recv(PID.size)
        except OSError:
            reply = b""
        if len(reply) != PID.size:  # it has ended: the next page starts another
            ours.close()
            raise SessionEnded("the viewer's fork server ended; reload the page to start again")
        pid = PID.unpack(reply)[0]
        if pid <= 0:  # it could not read this request (see zygote_main)
            ours.close()
            raise SessionEnded("the viewer could not start this page's simulation process")
        return pid, ours


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def zygote() -> Zygote:
    """This server's fork server, started at the first call (again if it has ended)."""
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote.process.poll() is not None:
            _zygote = Zygote()
        return _zygote


# -- the server's side ----------------------------------------------------------------------------

class Child:
    """A session process (not this process's child: the fork server's), by a pidfd where there is
    one, so that a signal can never reach another process that reused its pid."""

    def __init__(self, pid: int):
        self.pid, self.pidfd = pid, None
        try:
            self.pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        except ProcessLookupError:  # it has ended already
            self.pid = None
        except OSError:  # a kernel without pidfds (before Linux 5.3): by pid, then
            pass

    def alive(self) -> bool:
        if self.pid is None:
            return False
        if self.pidfd is not None:
            return not select.select([self.pidfd], [], [], 0)[0]  # readable once it has ended
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def signal(self, number: int) -> None:
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, number)
            elif self.pid is not None:
                os.kill(self.pid, number)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class SessionProcess:
    """The server's handle on one page's session process (see the module docstring)."""

    def __init__(self, child: Child, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.child, self.reader, self.writer = child, reader, writer

    @property
    def pid(self) -> int | None:
        return self.child.pid

    @classmethod
    async def start(cls, scene: str, fallback: str,
                    observed: ObservedOverlay | None = None) -> "SessionProcess":
        pid, channel = await asyncio.to_thread(lambda: zygote().fork(scene, fallback, observed))
        reader, writer = await asyncio.open_unix_connection(sock=channel, limit=READ_LIMIT)
        return cls(Child(pid), reader, writer)

    async def request(self, commands: list) -> None:
        """Ask for one tick with ``commands``; read its messages with :meth:`replies`."""
        payload = pickle.dumps(commands)
        try:
            self.writer.write(HEADER.pack(len(payload)) + payload)
            await self.writer.drain()
        except ConnectionError:
            raise SessionEnded(ENDED) from None

    async def replies(self) -> AsyncIterator[str]:
        """The messages of the batch the process is sending (JSON text), up to its end."""
        while True:
            try:
                size = HEADER.unpack(await self.reader.readexactly(HEADER.size))[0]
                if size == 0:
                    return
                data = await self.reader.readexactly(size)
            except (asyncio.IncompleteReadError, ConnectionError):
                raise SessionEnded(ENDED) from None
            yield data.decode()

    async def close(self) -> None:
        """Close the channel and wait for the process to end (see ``GRACE``)."""
        self.writer.close()
        try:
            for stop in (None, signal.SIGTERM, signal.SIGKILL):
                if stop is not None:
                    self.child.signal(stop)
                for _ in range(int(GRACE / 0.05)):
                    if not self.child.alive():
                        return
                    await asyncio.sleep(0.05)
            log.warning("viewer session process %s did not end", self.pid)  # pragma: no cover
        finally:
            self.child.close()
