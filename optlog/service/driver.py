"""The detached launch driver: `python -m optlog.service.driver LAUNCH_ID --root WORKSPACE`.

Started by `optlog run launch --detach` in its own session; it drives the launch's queued runs and
writes its progress into the Launch row and `.optlog/launches/<id>/launch.log`. SIGTERM (from
`optlog run cancel`) or SIGINT cancels: every process of the launch is ended, unfinished runs are
marked `cancelled`.
"""

from __future__ import annotations

import argparse
import sys

from optlog.paths import Workspace
from optlog.runs import interrupt
from optlog.runs.launcher import Driver
from optlog.service.context import Ctx
from optlog.core import jsondoc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m optlog.service.driver")
    ap.add_argument("launch_id", type=int)
    ap.add_argument("--root", required=True)
    ap.add_argument("--doc-stdin", action="store_true",
                    help="read the unredacted launch document (JSON) from stdin: secrets never touch a file")
    a = ap.parse_args(argv)
    with interrupt.scope(raising=False):  # `run cancel` while it reads its document still cancels
        doc = None
        if a.doc_stdin:
            doc = jsondoc.loads(sys.stdin.buffer.read().decode("utf-8"))

        ctx = Ctx(Workspace(__import__("pathlib").Path(a.root)))
        try:
            res = Driver(ctx, a.launch_id, doc=doc).run()
        finally:
            ctx.close()
    return 0 if res["status"] == "succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
