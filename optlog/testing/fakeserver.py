#!/usr/bin/env python3
"""A small OpenAI-compatible streaming server with a fixed token schedule and failure modes.

Shared by the tests of the launcher, the load generator and telemetry. It keeps exact time: the
first token leaves `--ttft-ms` after the request arrived, each next one `--itl-ms` after the
previous one's scheduled time (absolute deadlines, so no drift accumulates).

Run:  python -m optlog.testing.fakeserver --port 0 --ttft-ms 50 --itl-ms 10 --tokens 16
It prints `READY http://127.0.0.1:PORT` on stdout once it listens (and writes PORT to
`--port-file` if given).

Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions (streaming
SSE or not), GET /metrics (Prometheus text in SGLang's `sglang:*` names), GET /get_server_info and
/server_info.

Modes (`--mode`, or per request with the header `X-Test-Mode`):
  ok        the schedule above; a prompt mentioning "capital of France" is answered " Paris ..."
  500       HTTP 500 with a JSON error body
  refuse    the connection is closed without a response (also: `--refuse` closes the listener
            after READY, so connections are refused)
  cut       the stream stops after `--cut-after` tokens without [DONE] (connection closed)
  stall     headers are sent, then nothing (never a token) until the client gives up
  garbage   tokens are "\ufffd#0" noise instead of words
  empty     a stream with no content tokens, then [DONE]
  early     the stream ends "cleanly" (finish_reason "length", usage, [DONE]) after `--cut-after`
            tokens, whatever max_tokens and ignore_eos asked for (as real servers at a context limit)
  no_finish every token, then [DONE], but no chunk carries a finish_reason
The usage block (`stream_options.include_usage`) reports prompt tokens as whitespace-separated
words and completion tokens as tokens sent; `--no-usage` leaves it out. `--prompt-cache` remembers
prompts and reports a repeated one's tokens as `usage.prompt_tokens_details.cached_tokens` (and in
`sglang:cached_tokens_total`), as a server with a prompt cache does. `--metrics-skew F` multiplies
the generation-token counter of /metrics by F (a server whose counter disagrees with its streams).

The HTTP handling is a minimal HTTP/1.1 on asyncio streams on purpose: a test fixture must hold
its schedule at 1,024 concurrent streams on a 2-core machine, which a framework's per-request
overhead makes harder; it supports keep-alive, Content-Length bodies and chunked responses only.
Streamed tokens leave from event-loop timer callbacks with pre-encoded events (no coroutine or
drain per token): about 10 µs of CPU per token.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from optlog.core import jsondoc


@dataclass
class Settings:
    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    tokens: int = 16
    mode: str = "ok"
    cut_after: int = 2
    model: str = "test-model"
    usage: bool = True
    ready_delay_s: float = 0.0
    prompt_cache: bool = False
    metrics_skew: float = 1.0
    started: float = field(default_factory=time.monotonic)


@dataclass
class Stats:
    requests: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    running: int = 0
    ttft_hist: dict[float, int] = field(default_factory=dict)
    ttft_sum: float = 0.0
    ttft_count: int = 0
    cached_tokens: int = 0


BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _words(prompt: object) -> int:
    if isinstance(prompt, list):
        return sum(_words(p) for p in prompt)
    return len(str(prompt).split())


class Server:
    def __init__(self, s: Settings) -> None:
        self.s = s
        self.stats = Stats()
        self._cache: dict[tuple[str, str], bytes] = {}
        self.seen_prompts: set[str] = set()
        self.server: asyncio.base_events.Server | None = None

    # ------------------------------------------------------------ HTTP plumbing
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = time.monotonic()
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(n) if n else b""
                keep = headers.get("connection", "").lower() != "close"
                ok = await self.route(method, path.split("?", 1)[0], headers, body, writer, arrived)
                if not ok or not keep:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    def _send(self, writer: asyncio.StreamWriter, status: int, body: bytes, ctype: str = "application/json") -> None:
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable", 400: "Bad Request"}.get(status, "OK")
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        )

    async def route(self, method: str, path: str, headers: dict[str, str], body: bytes,
                    writer: asyncio.StreamWriter, arrived: float) -> bool:
        s = self.s
        if path in ("/health", "/health_generate"):
            ready = time.monotonic() - s.started >= s.ready_delay_s
            self._send(writer, 200 if ready else 503, b"ok" if ready else b"loading", "text/plain")
            await writer.drain()
            return True
        if path == "/v1/models":
            self._send(writer, 200, json.dumps({"object": "list", "data": [{"id": s.model, "object": "model"}]}).encode())
            await writer.drain()
            return True
        if path in ("/get_server_info", "/server_info"):
            info = {"model_path": s.model, "tp_size": 1, "pp_size": 1, "ep_size": 1, "version": "testserver",
                    "attention_backend": "none", "cuda_graph_bs": [1, 2, 4, 8], "ttft_ms": s.ttft_ms, "itl_ms": s.itl_ms}
            self._send(writer, 200, json.dumps(info).encode())
            await writer.drain()
            return True
        if path == "/metrics":
            self._send(writer, 200, self.metrics().encode(), "text/plain; version=0.0.4")
            await writer.drain()
            return True
        if path in ("/v1/completions", "/v1/chat/completions") and method == "POST":
            return await self.complete(path, headers, body, writer, arrived)
        self._send(writer, 404, b'{"error": "not found"}')
        await writer.drain()
        return True

    # ------------------------------------------------------------ completions
    async def complete(self, path: str, headers: dict[str, str], body: bytes,
                       writer: asyncio.StreamWriter, arrived: float) -> bool:
        s = self.s
        try:
            req = jsondoc.loads(body or b"{}")
        except json.JSONDecodeError:
            self._send(writer, 400, b'{"error": "bad json"}')
            await writer.drain()
            return True
        mode = headers.get("x-test-mode", s.mode)
        chat = path.endswith("chat/completions")
        prompt = req.get("messages") if chat else req.get("prompt", "")
        if chat and isinstance(prompt, list):
            prompt = " ".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
        n_prompt = _words(prompt)
        n = int(req.get("max_tokens") or req.get("max_completion_tokens") or s.tokens)
        n = max(0, n)
        stream = bool(req.get("stream"))
        usage_wanted = s.usage and (not stream or bool((req.get("stream_options") or {}).get("include_usage")))
        self.stats.requests += 1
        if mode == "500":
            self._send(writer, 500, b'{"error": {"message": "internal error (test mode 500)"}}')
            await writer.drain()
            return True
        if mode == "refuse":
            return False
        words = self._tokens(str(prompt), n, mode)
        cached = 0
        if s.prompt_cache:
            if str(prompt) in self.seen_prompts:
                cached = n_prompt
            self.seen_prompts.add(str(prompt))
        self.stats.running += 1
        try:
            if not stream:
                await asyncio.sleep(max(0.0, arrived + (s.ttft_ms + s.itl_ms * max(0, n - 1)) / 1000 - time.monotonic()))
                text = "".join(words)
                self._observe_ttft(time.monotonic() - arrived)
                self.stats.prompt_tokens += n_prompt
                self.stats.generation_tokens += len(words)
                choice = {"index": 0, "finish_reason": "length"}
                choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
                out: dict[str, Any] = {"id": "cmpl-test", "object": "chat.completion" if chat else "text_completion", "model": s.model,
                       "choices": [choice]}
                if s.usage:
                    out["usage"] = {"prompt_tokens": n_prompt, "completion_tokens": len(words), "total_tokens": n_prompt + len(words)}
                self._send(writer, 200, json.dumps(out).encode())
                await writer.drain()
                return True
            transport = writer.transport
            transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                            b"Transfer-Encoding: chunked\r\n\r\n" + self._frame(b": keep-alive\n\n"))
            if mode == "stall":
                await asyncio.sleep(3600)
                return False
            # Tokens leave from timer callbacks, not a coroutine per stream: no task switch, no
            # drain per token, so 1,024 streams of 1 ms tokens stay cheap on two cores.
            return await self._stream(transport, words, arrived, chat, mode, n_prompt, usage_wanted, cached)
        finally:
            self.stats.running -= 1

    def _event(self, obj: str, chat: bool, word: str) -> bytes:
        key = (obj, word)
        b = self._cache.get(key)
        if b is None:
            delta = {"delta": {"content": word}} if chat else {"text": word}
            ev = {"id": "cmpl-test", "object": obj, "model": self.s.model,
                  "choices": [{"index": 0, **delta, "finish_reason": None}]}
            b = self._frame(b"data: " + json.dumps(ev).encode() + b"\n\n")
            if len(self._cache) < 100_000:
                self._cache[key] = b
        return b

    async def _stream(self, transport: asyncio.WriteTransport, words: list[str], arrived: float, chat: bool, mode: str,
                      n_prompt: int, usage_wanted: bool, cached: int = 0) -> bool:
        s = self.s
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()
        obj = "chat.completion.chunk" if chat else "text_completion"
        ttft, itl = s.ttft_ms / 1000, s.itl_ms / 1000
        if mode == "early":
            words = words[:s.cut_after]
        n = len(words)

        def finish() -> None:
            self.stats.prompt_tokens += n_prompt - cached
            self.stats.cached_tokens += cached
            self.stats.generation_tokens += n
            frames: list[bytes] = []
            if mode != "no_finish":
                empty: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
                fin = {"id": "cmpl-test", "object": obj, "model": s.model,
                       "choices": [{"index": 0, **empty, "finish_reason": "length"}]}
                frames.append(self._frame(b"data: " + json.dumps(fin).encode() + b"\n\n"))
            if usage_wanted:
                usage: dict[str, object] = {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}
                if s.prompt_cache:
                    usage["prompt_tokens_details"] = {"cached_tokens": cached}
                u = {"id": "cmpl-test", "object": obj, "model": s.model, "choices": [], "usage": usage}
                frames.append(self._frame(b"data: " + json.dumps(u).encode() + b"\n\n"))
            frames.append(self._frame(b"data: [DONE]\n\n"))
            frames.append(b"0\r\n\r\n")
            transport.write(b"".join(frames))
            if not done.done():
                done.set_result(True)

        def step(i: int) -> None:
            if done.done():
                return
            if transport.is_closing():
                done.set_result(False)
                return
            if i >= n:
                finish()
                return
            if mode == "cut" and i >= s.cut_after:
                transport.abort()  # the connection drops mid-stream
                done.set_result(False)
                return
            if i == 0:
                self._observe_ttft(time.monotonic() - arrived)
            transport.write(self._event(obj, chat, words[i]))
            nxt = i + 1
            if nxt >= n and mode != "cut":
                finish()
                return
            loop.call_later(max(0.0, arrived + ttft + itl * nxt - time.monotonic()), step, nxt)

        loop.call_later(max(0.0, arrived + ttft - time.monotonic()), step, 0)
        try:
            return await done
        finally:
            if not done.done():
                done.cancel()

    def _tokens(self, prompt: str, n: int, mode: str) -> list[str]:
        if mode == "empty":
            return []
        if mode == "garbage":
            return ["\ufffd#0" for _ in range(n)]
        out = []
        if "capital of france" in prompt.lower() and n > 0:
            out.append(" Paris")
        while len(out) < n:
            out.append(f" tok{len(out)}")
        return out

    @staticmethod
    def _frame(data: bytes) -> bytes:
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"

    def _observe_ttft(self, secs: float) -> None:
        st = self.stats
        st.ttft_sum += secs
        st.ttft_count += 1
        for b in BUCKETS:
            if secs <= b:
                st.ttft_hist[b] = st.ttft_hist.get(b, 0) + 1

    def metrics(self) -> str:
        st = self.stats
        m = [
            "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE sglang:prompt_tokens_total counter",
            f'sglang:prompt_tokens_total{{model_name="{self.s.model}"}} {st.prompt_tokens}',
            "# HELP sglang:generation_tokens_total Number of generation tokens processed.",
            "# TYPE sglang:generation_tokens_total counter",
            f'sglang:generation_tokens_total{{model_name="{self.s.model}"}} {st.generation_tokens * self.s.metrics_skew:g}',  # machine format: Prometheus
            "# HELP sglang:cached_tokens_total Number of cached prompt tokens.",
            "# TYPE sglang:cached_tokens_total counter",
            f'sglang:cached_tokens_total{{model_name="{self.s.model}"}} {st.cached_tokens}',
            "# HELP sglang:num_requests_total Number of requests.",
            "# TYPE sglang:num_requests_total counter",
            f'sglang:num_requests_total{{model_name="{self.s.model}"}} {st.requests}',
            "# HELP sglang:num_running_reqs The number of running requests.",
            "# TYPE sglang:num_running_reqs gauge",
            f'sglang:num_running_reqs{{model_name="{self.s.model}"}} {st.running}',
            "# HELP sglang:num_queue_reqs The number of requests in the waiting queue.",
            "# TYPE sglang:num_queue_reqs gauge",
            f'sglang:num_queue_reqs{{model_name="{self.s.model}"}} 0',
            "# HELP sglang:token_usage The token usage.",
            "# TYPE sglang:token_usage gauge",
            f'sglang:token_usage{{model_name="{self.s.model}"}} {min(1.0, st.running / 64):.4f}',  # machine format: Prometheus
            "# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.",
            "# TYPE sglang:time_to_first_token_seconds histogram",
        ]
        for b in BUCKETS:
            m.append(f'sglang:time_to_first_token_seconds_bucket{{le="{b}",model_name="{self.s.model}"}} {st.ttft_hist.get(b, 0)}')
        m.append(f'sglang:time_to_first_token_seconds_bucket{{le="+Inf",model_name="{self.s.model}"}} {st.ttft_count}')
        m.append(f'sglang:time_to_first_token_seconds_sum{{model_name="{self.s.model}"}} {st.ttft_sum}')
        m.append(f'sglang:time_to_first_token_seconds_count{{model_name="{self.s.model}"}} {st.ttft_count}')
        return "\n".join(m) + "\n"


async def serve(args: argparse.Namespace) -> None:
    s = Settings(ttft_ms=args.ttft_ms, itl_ms=args.itl_ms, tokens=args.tokens, mode=args.mode,
                 cut_after=args.cut_after, model=args.model, usage=not args.no_usage, ready_delay_s=args.ready_delay_s,
                 prompt_cache=args.prompt_cache, metrics_skew=args.metrics_skew)
    srv = Server(s)
    server = await asyncio.start_server(srv.handle, args.host, args.port, backlog=4096, limit=1 << 20)
    port = server.sockets[0].getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, args.port_file)
    print(f"READY http://{args.host}:{port}", flush=True)
    if args.refuse:
        server.close()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.exit_after_s:
        loop.call_later(args.exit_after_s, stop.set)
    await stop.wait()
    server.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--mode", default="ok", choices=["ok", "500", "refuse", "cut", "stall", "garbage", "empty", "early", "no_finish"])
    p.add_argument("--cut-after", type=int, default=2)
    p.add_argument("--model", default="test-model")
    p.add_argument("--no-usage", action="store_true")
    p.add_argument("--prompt-cache", action="store_true", help="report repeated prompts as cached tokens")
    p.add_argument("--metrics-skew", type=float, default=1.0, help="multiply the generation-token counter by this")
    p.add_argument("--ready-delay-s", type=float, default=0.0, help="/health answers 503 until this much time passed")
    p.add_argument("--refuse", action="store_true", help="close the listener right after READY")
    p.add_argument("--exit-after-s", type=float, default=0.0, help="exit by itself after this long (a dying server)")
    args = p.parse_args(argv)
    try:
        import uvloop  # deferred: uvloop only to drive load

        uvloop.install()
    except ImportError:  # third-party uvloop is optional (not installed on Windows)
        pass
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
