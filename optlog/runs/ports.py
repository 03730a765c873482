"""The server optlog benchmarks is the server it started: who listens on a TCP port, from /proc.

A stale server left on the spec's port answers `/health` and the sanity check as well as a fresh
one, and its numbers would be recorded under the new configuration's labels. So a launch refuses
to start a server on a port something already listens on (`port_in_use`, naming the holder where
/proc shows it), and readiness only counts when the listening socket belongs to the process tree
optlog started: the socket inodes of /proc/net/tcp{,6} in LISTEN state on that port must be among
the open file descriptors (`socket:[INODE]` links in /proc/PID/fd) of the server's processes.

Only local ports are judged (host 127.0.0.1, localhost, 0.0.0.0, ::1, ::, or this host's name);
a remote executor's server is not read here. Without /proc (not Linux) a TCP connect stands in
for "in use" and ownership is not checked.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from optlog.runs.redact import redact

_LISTEN = "0A"
_LOCAL = {"127.0.0.1", "localhost", "0.0.0.0", "::1", "::", ""}


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str


def local_port(url: str | None) -> int | None:
    """The port of `url` when it names this machine, else None."""
    if not url:
        return None
    try:
        u = urlparse(url)
        port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    except ValueError:
        return None
    host = (u.hostname or "").lower()
    if port is None or (host not in _LOCAL and host not in (socket.gethostname().lower(), socket.getfqdn().lower())):
        return None
    return int(port)


def server_port(rendered_server: dict[str, Any] | None) -> int | None:
    """The local port a rendered server (spec.render_point's `server`) is reached on."""
    if not rendered_server:
        return None
    for u in ((rendered_server.get("ready") or {}).get("url"), (rendered_server.get("check") or {}).get("url")):
        p = local_port(u)
        if p is not None:
            return p
    return None


def _proc_ok() -> bool:
    return os.path.exists("/proc/net/tcp")


def listening_inodes(port: int) -> set[int]:
    """Socket inodes listening on `port` (any address, IPv4 and IPv6) in this network namespace."""
    out: set[int] = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f, None)
                for line in f:
                    parts = line.split()
                    if len(parts) < 10 or parts[3] != _LISTEN:
                        continue
                    if int(parts[1].rsplit(":", 1)[1], 16) == port:
                        out.add(int(parts[9]))
        except (OSError, ValueError, IndexError):
            continue
    return out


def socket_inodes(pid: int) -> set[int]:
    out: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(int(link[8:-1]))
    return out


def holders(port: int) -> list[Holder]:
    """The processes holding a listening socket on `port` (those /proc lets us read)."""
    inodes = listening_inodes(port)
    if not inodes:
        return []
    found: list[Holder] = []
    for n in os.listdir("/proc"):
        if n.isdigit() and socket_inodes(int(n)) & inodes:
            try:
                with open(f"/proc/{n}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                cmd = "?"
            found.append(Holder(int(n), cmd))
    return found


def in_use(port: int) -> bool:
    if _proc_ok():
        return bool(listening_inodes(port))
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def describe(port: int) -> str:
    """`port 8000 is in use by pid 123 (python -m …)`: the message's subject."""
    hs = holders(port)
    if not hs:
        return f"port {port} is already in use (by a process /proc does not show here)"
    who = "; ".join(f"pid {h.pid} ({redact(h.command)[:160]})" for h in hs[:3])
    return f"port {port} is already in use by {who}"


def owned_by(port: int, pids: Iterable[int]) -> bool | None:
    """Whether one of `pids` holds a socket listening on `port`; None when that cannot be told
    (no /proc, or nothing listens there yet: a log-line readiness may come before the bind)."""
    if not _proc_ok():
        return None
    inodes = listening_inodes(port)
    if not inodes:
        return None
    return any(socket_inodes(p) & inodes for p in pids)
