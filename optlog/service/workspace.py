"""`optlog init`: make or adopt a git repository with the workspace layout."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from optlog.config import PLAN_PREFIX_RE, default_config_text, load_config
from optlog.core.ids import new_id
from optlog.core.text import windows_reserved
from optlog.errors import BadInput, Failed
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.paths import CONFIG_NAME, DEFAULT_PLAN_PREFIX, STATE_DIR, Workspace
from optlog.runs.executors.registry import config_sections
from optlog.service.context import Ctx
from optlog.service.identity import with_identity
from optlog.store import cas, runsync

GITIGNORE_LINE = f"/{STATE_DIR}/"


def init(path: str | Path | None, plan_prefix: str | None = None, actor: str | None = None,
         on_notice: Any = None) -> dict[str, Any]:
    root = Path(path or ".").resolve()
    if root.exists() and not root.is_dir():
        raise BadInput(f"not a folder: {root}", field="path")
    if plan_prefix is not None and (not PLAN_PREFIX_RE.match(plan_prefix) or windows_reserved(plan_prefix)):
        raise BadInput("letters, digits, '.', '_' or '-' only (it names a folder and files), and no name Windows "
                       "keeps for a device (con, nul, com1, …)", field="plan_prefix")
    ws = Workspace(root)
    created: list[str] = []
    root.mkdir(parents=True, exist_ok=True)
    git_made = False
    if not _in_git(root):
        p = subprocess.run(["git", "init", "-q", str(root)], capture_output=True, text=True)
        if p.returncode != 0:
            raise Failed(f"git init failed: {p.stderr.strip()}")
        git_made = True
    adopted = ws.config_file.exists()
    if adopted:
        cfg = load_config(ws, config_sections())  # validates
        prefix = cfg.plans.prefix
        if plan_prefix and plan_prefix != prefix:
            raise BadInput(
                f"{CONFIG_NAME} already sets plans.prefix to {prefix!r}; edit it there",
                file=CONFIG_NAME, field="plans.prefix",
            )
        if cfg.id is None:  # an adopted workspace from before identities gets one now

            ident = new_id("workspace", root.name)
            cas.update_text(ws.config_file, lambda text: with_identity(text, ident))  # keeps a concurrent edit
            created.append(f"{CONFIG_NAME} (id)")
    else:
        prefix = plan_prefix or DEFAULT_PLAN_PREFIX
        ws.config_file.write_text(default_config_text(root.name, prefix, new_id("workspace", root.name)),
                                  encoding="utf-8")
        created.append(CONFIG_NAME)
    for d in ("hypotheses", "reports", "runs", prefix):
        keep = root / d / ".gitkeep"
        if not (root / d).exists():
            (root / d).mkdir(parents=True)
            keep.touch()
            created.append(f"{d}/")
    gi = root / ".gitignore"
    # surrogateescape: a .gitignore with bytes that are not UTF-8 is kept byte for byte
    lines = gi.read_text(encoding="utf-8", errors="surrogateescape").splitlines() if gi.exists() else []
    if not any(line.strip() in (GITIGNORE_LINE, f"{STATE_DIR}/", STATE_DIR, f"/{STATE_DIR}") for line in lines):
        lines.append(GITIGNORE_LINE)
        gi.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
        created.append(".gitignore")
    ws.state_dir.mkdir(exist_ok=True)

    ctx = Ctx(ws, actor)
    if on_notice is not None:
        ctx.on_notice = on_notice
    paths = [ws.config_file, gi] + [root / d / ".gitkeep" for d in ("hypotheses", "reports", "runs", prefix)]
    sha = history.record(ctx, [p for p in paths if p.exists()], "optlog: init workspace", "",
                         {TR.EVENT: "init"}) if created else None
    ctx.db  # create the database now, so the first real command does not pay for it
    if not adopted:  # a new workspace: its status never calls it a fresh clone
        runsync.set_sync_stamp(ctx.db, runsync.MADE_HERE_KEY, sha or "init")
    ctx.close()
    return {"workspace": str(root), "created": created, "adopted": adopted, "git_initialised": git_made,
            "plan_prefix": prefix, "commit": sha}


def _in_git(root: Path) -> bool:
    p = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    return p.returncode == 0
