"""The hot loop: HTTP/1.1 keep-alive connections on asyncio (uvloop where installed), parsed by
httptools (llhttp), with every body piece timestamped in `data_received`, at byte arrival.

Why not httpx or aiohttp (measured, see BENCHMARKS.md "loadgen: client choice"): both hand each
piece to a coroutine that runs one or more event-loop turns after the bytes arrived, and their
per-chunk work (httpx: anyio/httpcore layers; aiohttp: StreamReader and iterator machinery) runs
inside the loop that also timestamps every other stream. At 64 streams of 1 ms tokens on two cores
that cost lands in the measurement (tens to hundreds of ms of TTFT distortion). Here the only work
per piece is one `perf_counter()` and one list append; SSE decoding, JSON and statistics run after
the level (`optlog.loadgen.core.decode`).

One connection serves one request at a time (no pipelining); idle connections go back to a pool
and are reused by the next request (keep-alive). A reused connection that the server closed before
answering is retried once on a fresh one, as browsers and HTTP clients do. Redirects, proxies and
HTTP/2 are not supported (inference servers do not need them); https works through asyncio's ssl.
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from time import perf_counter
from typing import Callable

import httptools

from optlog.loadgen.core import Raw


class Conn(asyncio.Protocol):
    __slots__ = ("parser", "transport", "raw", "fut", "now", "closed", "keep_alive", "got_bytes", "timer")

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.raw: Raw | None = None
        self.fut: asyncio.Future[None] | None = None
        self.now = 0.0
        self.closed = False
        self.keep_alive = True
        self.got_bytes = False
        self.timer: asyncio.TimerHandle | None = None

    # -------------------------------------------------------------- asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.now = perf_counter()
        if self.raw is None:  # bytes nobody asked for: the connection is unusable
            self.closed = True
            if self.transport is not None:
                self.transport.abort()
            return
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._finish("bad_response", f"HTTP parse error: {e}")
            self._abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.raw is not None:
            self.now = perf_counter()
            if not self.got_bytes:
                self._finish("disconnected", "the server closed the connection without a response")
            else:
                self._finish("stream_cut", "the connection closed before the response ended"
                             + (f" ({exc})" if exc else ""))

    # -------------------------------------------------------------- httptools callbacks
    def on_headers_complete(self) -> None:
        raw = self.raw
        if raw is not None:
            raw.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        raw = self.raw
        if raw is not None:
            raw.chunks.append((self.now, body))

    def on_message_complete(self) -> None:
        raw = self.raw
        if raw is not None:
            raw.complete = True
            self._finish(None)

    # -------------------------------------------------------------- requests
    def _finish(self, error: str | None, detail: str = "") -> None:
        raw = self.raw
        if raw is None:
            return
        raw.end = self.now
        if error is not None and raw.error is None:
            raw.error = error
            raw.detail = detail
        self.raw = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        fut = self.fut
        self.fut = None
        if fut is not None and not fut.done():
            fut.set_result(None)

    def _abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _on_timeout(self) -> None:
        self.timer = None
        self.now = perf_counter()
        self._finish("timeout", "no complete response within --timeout")
        self._abort()

    def send(self, raw: Raw, payload: bytes, timeout: float) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self.raw = raw
        self.fut = fut
        self.got_bytes = False
        self.timer = loop.call_later(timeout, self._on_timeout)
        if not raw.start:
            raw.start = perf_counter()
        assert self.transport is not None
        self.transport.write(payload)
        return fut


class Pool:
    """Keep-alive connections to one host:port; at most one request per connection at a time."""

    def __init__(self, host: str, port: int, tls: bool, connect_timeout: float) -> None:
        self.host = host
        self.port = port
        self.ssl: _ssl.SSLContext | None = _ssl.create_default_context() if tls else None
        self.connect_timeout = connect_timeout
        self.idle: list[Conn] = []
        self.busy: set[Conn] = set()
        self.opened = 0

    async def connect(self) -> Conn:
        loop = asyncio.get_running_loop()
        _, proto = await asyncio.wait_for(
            loop.create_connection(Conn, self.host, self.port, ssl=self.ssl,
                                   server_hostname=self.host if self.ssl else None),
            self.connect_timeout)
        self.opened += 1
        return proto

    async def prewarm(self, n: int) -> None:
        """Open connections up to n idle ones before a level's clock starts (errors surface later)."""
        need = n - len(self.idle)
        if need <= 0:
            return
        got = await asyncio.gather(*(self.connect() for _ in range(need)), return_exceptions=True)
        self.idle.extend(c for c in got if isinstance(c, Conn))

    def take(self) -> Conn | None:
        while self.idle:
            c = self.idle.pop()
            if not c.closed:
                return c
        return None

    def give(self, c: Conn) -> None:
        if not c.closed and c.keep_alive and c.raw is None:
            self.idle.append(c)
        elif not c.closed:
            c._abort()

    def close(self) -> None:
        for c in self.idle:
            if c.transport is not None:
                c.transport.close()
        self.idle.clear()

    async def request(self, raw: Raw, payload: bytes, timeout: float) -> None:
        """Run one request to completion (or failure); everything it saw lands in `raw`."""
        for attempt in (0, 1):
            conn = self.take()
            reused = conn is not None
            if conn is None:
                raw.start = perf_counter()
                try:
                    conn = await self.connect()
                except (OSError, asyncio.TimeoutError) as e:
                    raw.end = perf_counter()
                    raw.error, raw.detail = "connect", f"cannot connect to {self.host}:{self.port}: {e or 'timed out'}"
                    return
            self.busy.add(conn)
            try:
                await conn.send(raw, payload, timeout)
            finally:
                self.busy.discard(conn)
            if raw.error == "disconnected" and reused and attempt == 0:
                raw.error, raw.detail, raw.start, raw.status, raw.chunks = None, "", 0.0, 0, []
                continue
            self.give(conn)
            return


    def abort_busy(self) -> None:
        """End every request in flight (--max-failures hit); they are not counted."""
        for c in list(self.busy):
            c.now = perf_counter()
            c._finish("aborted", "ended by --max-failures")
            c._abort()


def install_uvloop() -> bool:
    try:
        import uvloop  # deferred: uvloop only to drive load
    except ImportError:  # third-party uvloop is optional (not installed on Windows)
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop  # deferred: uvloop only to drive load

        return uvloop.new_event_loop()
    except ImportError:  # third-party uvloop is optional (not installed on Windows)
        return asyncio.new_event_loop()


Progress = Callable[[int, int, int], None]
