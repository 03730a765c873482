"""A server command that daemonizes grandchildren before it serves: `_daemonize.py MARKER -- CMD…`.

Double fork + setsid, as a real daemon does: each grandchild is in a session of its own (no killpg
of the server's group reaches it) and its parent has exited (it is re-parented). One keeps the
environment; with `--scrub`, a second one clears its environment too (no launch token to find it
by). Their command lines carry MARKER, so the tests' /proc check sees them. Then CMD is exec'd."""

from __future__ import annotations

import os
import sys


def daemon(marker: str, scrub: bool) -> None:
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)  # the intermediate child exits at once
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    fd = os.open(os.devnull, os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(fd, i)
    argv = [sys.executable, "-c", "import time\nwhile True: time.sleep(1)", marker, "daemon"]
    os.execve(sys.executable, argv, {} if scrub else dict(os.environ))


def main() -> None:
    args = sys.argv[1:]
    scrub = "--scrub" in args[: args.index("--")]
    marker = args[0]
    cmd = args[args.index("--") + 1:]
    daemon(marker, False)
    if scrub:
        daemon(marker, True)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
