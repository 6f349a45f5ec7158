"""Who may talk to the viewer: the Host allowlist (against DNS rebinding) and the same-origin rule
for its WebSocket.

A DNS-rebinding page is served from a name of the attacker's (``evil.example``) that later
resolves to this machine; the browser then sends ``Host: evil.example:PORT`` with every request,
and as its ``Origin`` matches, only the Host can tell it apart. Contract of :class:`HostAllowlist`
(an ASGI middleware): a request whose ``Host`` (``name[:port]``, the name case-insensitive) is not
one of :func:`allowed_hosts` is refused before the app sees it: HTTP with 403 and a one-line
reason, a WebSocket by closing it before the handshake completes (the client sees 403). The names
allowed:

- the address the server is bound to (``--host``) and every name given with ``--allow-host``;
- bound to a loopback address: ``localhost``, ``127.0.0.1`` and ``::1``;
- bound to all addresses (``0.0.0.0``, ``::``) or another of the machine's: also the machine's
  own names (``socket.gethostname()``, its fully qualified name, ``localhost``) and any IP
  address, since the browser sends the name it resolved and a page of another site can never make
  it send an address.

:func:`same_origin` is the WebSocket's second check: a page of another site (its ``Origin`` is not
the address the browser asked for) cannot drive the viewer.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Iterable
from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse

from ...errors import HookeInputError, format_value

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def normal(name: str) -> str:
    """A host name as compared: lower case, no brackets, no trailing dot."""
    return name.strip().strip("[]").rstrip(".").lower()


def is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    name = normal(host)
    return name == "localhost" or (is_ip(name) and ipaddress.ip_address(name).is_loopback)


# A label of a host name: letters, digits, '_' (some LAN names have one) and '-' inside.
LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
SHOWN = 80  # characters of a refused --allow-host shown in its line (a name has at most 253)


def is_host(name) -> bool:
    """Whether ``name`` is an IP address (an IPv6 one with or without brackets) or a host name:
    at most 253 characters (a trailing dot aside), its labels 1 to 63 characters of
    :data:`LABEL` between dots."""
    if not isinstance(name, str):
        return False
    if is_ip(name[1:-1] if name.startswith("[") and name.endswith("]") else name):
        return True
    host = name[:-1] if name.endswith(".") else name
    return 0 < len(host) <= 253 and all(LABEL.fullmatch(label) for label in host.split("."))


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names a viewer bound to ``bind`` answers, with ``extra`` (``--allow-host``: a
    host name or address each, else one line naming it; a name of 5,000 characters was taken)."""
    for name in extra:
        if not is_host(name):
            raise HookeInputError("allow-host", "must be a host name (at most 253 characters; "
                                  "labels of 1 to 63 letters, digits, '-' or '_' between dots) "
                                  f"or an IP address, got {format_value(name, most=SHOWN)}",
                                  show_value=False)
    names = {normal(bind), *LOOPBACK_NAMES, *(normal(name) for name in extra)}
    if not is_loopback(bind):
        names |= {normal(socket.gethostname()), normal(socket.getfqdn())}
    return frozenset(names - {""})


# A Host header: a name or [an IPv6 address], then an optional :port (RFC 9110, 7.2).
HOST = re.compile(r"(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<name>[^\[\]:@/?#\s]+))(?::\d{1,5})?")


def host_name(header: str | None) -> str | None:
    """The name in a ``Host`` header without its port (``[::1]:8000`` → ``::1``); None for a
    header that is no ``name[:port]`` (``localhost:80@evil.example``), or a bare IPv6 address."""
    if not header:
        return None
    match = HOST.fullmatch(header)
    if match is None:
        return normal(header) if is_ip(header) else None  # ::1 without its brackets
    return normal(match["ip6"] or match["name"])


class HostAllowlist:
    """ASGI middleware: refuses requests for a Host this viewer was not started for (see above)."""

    def __init__(self, app, bind: str, extra: Iterable[str] = ()):
        self.app = app
        self.allowed = allowed_hosts(bind, extra)
        # A Host that is an IP address cannot come from another site (see the module docstring).
        self.any_ip = not is_loopback(bind)

    def accepts(self, header: str | None) -> bool:
        name = host_name(header)
        return name is not None and (name in self.allowed or (self.any_ip and is_ip(name)))

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            header = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not self.accepts(header):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})  # before accept: 403
                else:
                    await PlainTextResponse(self.refusal(header), status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, header: str) -> str:
        return (f"hooke viewer: Host {header!r} is not allowed (answered: "
                f"{', '.join(sorted(self.allowed))}); add a name with hooke serve --allow-host NAME\n")


def same_origin(headers) -> bool:
    """True without an Origin header (non-browser clients) or when it names the Host asked for
    (an Origin that is no URL, ``http://[::1``, is another site's)."""
    origin = headers.get("origin")
    if origin is None:
        return True
    try:
        return urlsplit(origin).netloc == headers.get("host")
    except ValueError:
        return False
