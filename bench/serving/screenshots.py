"""Dashboard screenshots (SVG) of a workspace, as a user sees them: the hypotheses tab and the runs tab.

    python bench/serving/screenshots.py WORKSPACE OUT_PREFIX [--size 160x48]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path


async def shoot(ws: Path, prefix: str, size: tuple[int, int]) -> None:
    from optlog.paths import Workspace
    from optlog.service.context import Ctx
    from optlog.tui.app import OptlogApp

    app = OptlogApp(Ctx(Workspace(ws), actor="screenshots"))
    async with app.run_test(size=size) as pilot:
        for _ in range(100):
            if getattr(app, "loads", 1) > 0:
                break
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        Path(f"{prefix}-hypotheses.svg").write_text(app.export_screenshot(title="optlog: hypotheses"))
        await pilot.press("3")
        await pilot.pause(1.5)
        Path(f"{prefix}-runs.svg").write_text(app.export_screenshot(title="optlog: runs"))


if __name__ == "__main__":
    w, h = (int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "160x48").split("x"))
    asyncio.run(shoot(Path(sys.argv[1]), sys.argv[2], (w, h)))
