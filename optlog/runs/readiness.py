"""Whether a launch's server is up and is the one optlog started, and whether it answers sanely
(runs.launcher's Driver asks, per server start): the wait for readiness (an HTTP 200 or a log
line, for an external server its model list), the check that the listening socket belongs to the
started process tree (runs.ports), and the sanity check (prompts at temperature 0 must match
`expect_regex`). Each wait gives way to the launch's cancel at once (`check_cancel`,
`interruptible`, the driver's)."""

from __future__ import annotations

import os
import re
import select
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlparse

from optlog.core.failure import classify
from optlog.core.numfmt import fmt_written
from optlog.runs import ports, tree
from optlog.runs.serving import Cancelled, PointFailure, Server, server_died


class Readiness:
    """The readiness and sanity checks of one launch, with its cancel and its narration."""

    def __init__(self, check_cancel: Callable[[], None], interruptible: Callable[[], AbstractContextManager[None]],
                 log: Callable[[str], None]) -> None:
        self.check_cancel = check_cancel
        self.interruptible = interruptible
        self.log = log

    def wait_external(self, server: Server, srv: dict[str, Any] | None) -> None:
        import httpx  # deferred: httpx only when talking HTTP

        path = "/v1/models"
        if srv and srv.get("ready") and srv["ready"].get("url"):
            path = urlparse(srv["ready"]["url"]).path or path
        url = server.url.rstrip("/") + path  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        last = ""
        while time.monotonic() < deadline:
            self.check_cancel()
            with self.interruptible():
                try:
                    r = httpx.get(url, timeout=2.0)
                    if r.status_code == 200:
                        return
                    last = f"HTTP {r.status_code}"
                except httpx.HTTPError as e:
                    last = f"{type(e).__name__}: {e}"
                time.sleep(0.2)
        raise PointFailure(f"the server at {server.url} is not ready ({url}: {last})", cause="server_unreachable")

    def wait_ready(self, server: Server, ready: dict[str, Any] | None) -> None:
        h = server.handle
        if ready is None:
            # no readiness probe: the process must at least survive a moment
            if h.wait(0.2) is not None:
                raise server_died(server, "before it was ready")
            return
        timeout = float(ready["timeout_s"])
        interval = float(ready["interval_s"])
        deadline = time.monotonic() + timeout
        rx = re.compile(ready["log_regex"]) if ready.get("log_regex") else None
        offsets = {server.stdout: 0, server.stderr: 0}
        carry = {server.stdout: "", server.stderr: ""}
        client = None
        if ready.get("url"):
            import httpx  # deferred: httpx only when talking HTTP

            client = httpx.Client(timeout=max(0.5, min(5.0, interval * 4)))
        last = "no answer yet"
        try:
            while True:
                self.check_cancel()
                if h.poll() is not None:
                    raise server_died(server, "before it was ready")
                if rx is not None:
                    for path in (server.stdout, server.stderr):
                        try:
                            with open(path, "rb") as f:  # type: ignore[arg-type]
                                f.seek(offsets[path])
                                data = f.read()
                        except OSError:
                            continue
                        offsets[path] += len(data)
                        text = carry[path] + data.decode("utf-8", "replace")
                        if rx.search(text):
                            return
                        carry[path] = text[-4096:]
                    last = f"no log line matched /{ready['log_regex']}/"
                if client is not None:
                    try:
                        with self.interruptible():
                            r = client.get(ready["url"])
                        if r.status_code == 200:
                            return
                        last = f"{ready['url']}: HTTP {r.status_code}"
                    except Cancelled:
                        raise
                    except Exception as e:  # httpx.HTTPError and friends
                        last = f"{ready['url']}: {type(e).__name__}"
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                with self.interruptible():
                    self._sleep_on(server, min(interval, left))
        finally:
            if client is not None:
                client.close()
        raise PointFailure(f"server not ready after {fmt_written(timeout)}s ({last})\n--- server log tail ---\n{server.log_tail()}",
                           cause=classify(server.log_tail()) or "ready_timeout")

    def check_ours(self, server: Server, port: int, orphans_since: int | None) -> None:
        """Readiness counts only for the process optlog started: it still runs, and the socket
        listening on its port belongs to its process tree (optlog.runs.ports)."""

        h = server.handle
        if h.poll() is not None:
            raise server_died(server, "right after it answered (did another process answer for it?)")
        pids = {h.pid} | {st.pid for st in tree.find(tag=getattr(h, "tag", None), exclude=(os.getpid(),))
                          if getattr(h, "tag", None)}
        pids |= {st.pid for st in tree.find(orphans_since=orphans_since)}
        if ports.owned_by(port, pids) is False:
            raise PointFailure(f"the server answering on port {port} is not the one optlog started (pid {h.pid}): "
                               f"{ports.describe(port)}; its numbers would not be this configuration's\n"
                               f"--- server log tail ---\n{server.log_tail()}", cause="not_our_server")

    def _sleep_on(self, server: Server, secs: float) -> None:
        fd = server.fileno()
        if fd is not None:
            try:
                select.select([fd], [], [], secs)
            except (InterruptedError, OSError):
                pass
        else:
            time.sleep(secs)

    def sanity_check(self, server: Server, check: dict[str, Any]) -> None:
        with self.interruptible():  # a server that never answers must not hold a cancel for check_s
            self._ask(server, check)
        self.log("sanity check passed")

    def _ask(self, server: Server, check: dict[str, Any]) -> None:
        import httpx  # deferred: httpx only when talking HTTP

        base = check["url"].rstrip("/")
        rx = re.compile(check["expect_regex"])
        try:
            with httpx.Client(timeout=float(check["timeout_s"])) as c:
                model = check.get("model")
                if not model:
                    try:
                        r = c.get(base + "/v1/models")
                        data = r.json().get("data") or []
                        model = data[0].get("id") if data else None
                    except Exception:
                        model = None
                for prompt in check["prompts"]:
                    self.check_cancel()
                    if check["api"] == "chat":
                        body: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}]}
                        path = "/v1/chat/completions"
                    else:
                        body = {"prompt": prompt}
                        path = "/v1/completions"
                    body.update(max_tokens=check["max_tokens"], temperature=0, stream=False)
                    if model:
                        body["model"] = model
                    r = c.post(base + path, json=body)
                    if r.status_code != 200:
                        raise PointFailure(f"sanity check failed: HTTP {r.status_code} from {base + path}: {r.text[:300]}",
                                           cause="sanity_check")
                    try:
                        ch = r.json()["choices"][0]
                        text = ch.get("text") if check["api"] != "chat" else (ch.get("message") or {}).get("content")
                    except Exception:
                        raise PointFailure(f"sanity check failed: not an OpenAI completion answer from {base + path}: "
                                           f"{r.text[:300]}", cause="sanity_check") from None
                    text = text or ""
                    if not text.strip():
                        raise PointFailure(f"sanity check failed: empty output for prompt {prompt!r}", cause="sanity_check")
                    if not rx.search(text):
                        garbage = "\ufffd" in text or sum(ch.isalpha() for ch in text) < len(text.strip()) / 3
                        what = "garbage output" if garbage else "unexpected output"
                        raise PointFailure(f"sanity check failed: {what} for prompt {prompt!r}: {text[:200]!r} "
                                           f"does not match /{check['expect_regex']}/", cause="sanity_check")
        except httpx.HTTPError as e:
            raise PointFailure(f"sanity check failed: {type(e).__name__} talking to {base}: {e}\n"
                               f"--- server log tail ---\n{server.log_tail()}", cause="sanity_check") from None
