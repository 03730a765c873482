"""What a launch's point ran on and under, for its runs' environment (runs.launcher's Driver asks,
per point): the server's environment (runs.environment, captured once per server start), the
host's load before and after the bench and its settings (runs.hostload), and the load of the
launch's own process tree and GPUs while the bench ran (runs.treeshare)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from optlog import settings
from optlog.needs import Launches
from optlog.runs import hostload, tree, treeshare
from optlog.runs.environment import capture
from optlog.runs.executors.base import Executor
from optlog.runs.serving import Cancelled, Server


class HostWatch:
    """One launch's host facts: its context, executor, token, the handles it started."""

    def __init__(self, ctx: Launches, executor: Executor, token: str, handles: Callable[[], list[Any]],
                 log: Callable[[str], None], interruptible: Callable[[], AbstractContextManager[None]]) -> None:
        self.ctx = ctx
        self.executor = executor
        self.token = token
        self.handles = handles  # the driver's process handles, as they are now
        self.log = log
        self.interruptible = interruptible
        self._host_settings: dict[str, Any] | None = None

    def environment(self, server: Server, p: dict[str, Any]) -> dict[str, Any]:
        """What the point ran on: the server's environment (captured once per server start), with
        the bench's command."""
        if server.environment is None:
            srv = p["rendered"].get("server") or {}
            cmds = {"server": srv["argv"]} if srv.get("argv") else {}
            env = {**(srv.get("env") or {}), **p["rendered"]["bench"]["env"]}

            try:
                with self.interruptible():  # its commands (a Python, nvidia-smi) may take seconds
                    server.environment = capture(self.ctx, server_url=server.url or p["rendered"].get("server_url"),
                                                 commands=cmds, env=env, executor=self.executor)
            except Cancelled:
                raise
            except Exception as e:
                server.environment = {"error": f"environment capture failed: {type(e).__name__}: {e}"}
        env_doc = dict(server.environment or {})
        cmds = dict(env_doc.get("commands") or {})
        cmds["bench"] = p["rendered"]["bench"]["argv"]
        env_doc["commands"] = cmds
        return env_doc

    def load(self) -> dict[str, Any]:
        """The host's load now (this machine's /proc and GPUs: the local executor only)."""
        st = self.ctx.config.host_load
        if not self.executor.on_this_machine:  # this machine's /proc says nothing of the remote host
            return {"error": "host load is measured for the local executor only"}
        own = [h.pid for h in self.handles()] + [os.getpid()]
        return {"load": hostload.snapshot(st.window_s), "gpu_processes": hostload.gpu_processes(own)}

    def tree_load(self, p: dict[str, Any]) -> treeshare.TreeLoad | None:
        """Start measuring the launch's processes and the run's GPUs (runs.treeshare), on this machine."""
        token = self.token
        if not self.executor.on_this_machine or not token:
            return None
        srv = p["rendered"].get("server") or {}
        env = dict(srv.get("env") or {}) if srv else dict(p["rendered"]["bench"].get("env") or {})
        me = os.getpid()
        try:
            return treeshare.TreeLoad(lambda: [st.pid for st in tree.find(token=token, exclude=(me,))],
                                      gpu_env={**settings.environ(), **env}).start()
        except Exception as e:
            self.log(f"process-tree load unavailable: {type(e).__name__}: {e}")
            return None

    def doc(self, p: dict[str, Any], before: dict[str, Any], after: dict[str, Any] | None,
                  extra_labels: dict[str, Any], tree_load: dict[str, float] | None = None) -> dict[str, Any]:
        """The run's load before and after, the host's settings; `loaded=true` when it was loaded."""

        if self._host_settings is None:
            self._host_settings = hostload.host_settings()
        srv = p["rendered"].get("server") or {}
        threads = hostload.thread_vars({**settings.environ(), **(srv.get("env") or {}), **(p["rendered"]["bench"].get("env") or {})})
        why = hostload.loaded(before, self.ctx.config.host_load, tree_load)
        if why:
            extra_labels["loaded"] = "true"
        return {"host_load": {"before": before, "after": after, "tree": tree_load or {}, "loaded": why},
                "host_settings": {**self._host_settings, "threads": threads}}
