"""One place for every path optlog reads or writes.

A workspace is a folder holding `optlog.yaml` (normally the root of a git repository). Commands find
it from the current folder upwards, or from `-C PATH`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from optlog import settings
from optlog.core.numfmt import fmt_count
from optlog.core.text import is_id
from optlog.errors import BadInput

DEFAULT_PLAN_PREFIX = "glb5improvement"  # plans render to glb5improvement/glb5improvement-NN.md

CONFIG_NAME = "optlog.yaml"
STATE_DIR = ".optlog"
IDENTITY_RE = re.compile(r"^[0-9a-f]{32}$")
_ID_LINE = re.compile(r"^id:[ \t]*['\"]?([^\s'\"#]+)", re.M)


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def config_file(self) -> Path:
        return self.root / CONFIG_NAME

    @property
    def hypotheses_dir(self) -> Path:
        return self.root / "hypotheses"

    @property
    def reports_dir(self) -> Path:
        return self.root / "reports"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def evidence_dir(self) -> Path:
        """Committed evidence: one small file per run a verdict used (see service.runfiles)."""
        return self.runs_dir / "evidence"

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def db_file(self) -> Path:
        return self.state_dir / "optlog.db"

    @property
    def artifacts_dir(self) -> Path:
        return self.state_dir / "runs"

    @property
    def lock_file(self) -> Path:
        return self.state_dir / "write.lock"

    def plans_dir(self, prefix: str) -> Path:
        return self.root / prefix

    def hypothesis_file(self, hid: str) -> Path:
        """`hypotheses/<id>.yaml`; an id that is not one (`../optlog`, `a/b`, `x\\n`) is refused here,
        so no caller can be led outside the folder."""
        if not is_id(hid):
            raise BadInput(f"no hypothesis {hid!r}: an id is lower-case letters, digits and '-'",
                           field="hypothesis", code="not_found")
        return self.hypotheses_dir / f"{hid}.yaml"

    def check_inside(self, path: Path, shown: str) -> None:
        """A committed file is read only if it resolves inside the workspace: a symbolic link that
        a `git pull` brought (`hypotheses/h.yaml -> ~/.ssh/id_ed25519`) would otherwise have optlog
        read, parse and echo a file of the user's that was never shared."""
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(self.root.resolve()):
                raise BadInput(f"{shown} is a symbolic link to {target}, outside the workspace: optlog does not "
                               "follow it (replace the link with the file itself)", file=shown, code="outside_workspace")

    def rel(self, p: Path) -> str:
        try:
            return str(Path(p).resolve().relative_to(self.root.resolve()))
        except ValueError:
            pass
        try:  # a link inside the workspace to a file outside: named by where it is, not where it leads
            return str(Path(os.path.abspath(p)).relative_to(os.path.abspath(self.root)))
        except ValueError:
            return str(p)

    @property
    def identity(self) -> str | None:
        """The workspace's identity (`id:` in optlog.yaml, committed; see service.identity), read
        without YAML so opening the database stays cheap. None if the file has none."""
        try:
            text = self.config_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        m = _ID_LINE.search(text)
        return m.group(1) if m and IDENTITY_RE.match(m.group(1)) else None

    @property
    def sqlite_file(self) -> Path | None:
        """The workspace's own SQLite file, or None when `OPTLOG_DB_URL` names another database."""
        return None if settings.read("db_url") else self.db_file

    @property
    def db_url(self) -> str:
        """`OPTLOG_DB_URL` wins (any SQLAlchemy URL); else the workspace's SQLite file."""
        return settings.read("db_url") or f"sqlite:///{self.db_file}"


def find_workspace(start: Path | str | None = None) -> Workspace:
    """The nearest folder at or above `start` that holds optlog.yaml."""
    here = Path(start or os.getcwd()).resolve()
    if start is not None and not here.exists():
        raise BadInput(f"no such folder: {here}", field="-C")
    for d in (here, *here.parents):
        if (d / CONFIG_NAME).is_file():
            return Workspace(d)
    raise BadInput(
        f"no optlog workspace at or above {here} (no {CONFIG_NAME}); run `optlog init` first",
        code="no_workspace",
    )


def program() -> list[str]:
    """The command that runs this optlog, by absolute path, whatever the current folder holds: the
    `optlog` on PATH, else the console script installed beside this Python, else this Python with
    `-P -m optlog`. Never a bare `python -m optlog`: `-m` puts the current folder first on sys.path,
    so from a folder holding an `optlog/` folder (a clone, or any project's package) it would import
    that instead. A console script's sys.path[0] is its own folder; `-P` (3.11+) drops the cwd."""
    exe = shutil.which("optlog")
    if exe:
        return [os.path.abspath(exe)]
    beside = Path(sys.executable).parent / "optlog"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    return [sys.executable, "-P", "-m", "optlog"]


# ---------------------------------------------------------------- reading a file someone named

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> str | None:
    """What a file that is not a regular file is ("a named pipe (FIFO)"), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path | str, limit: int, *, shown: str | None = None, field: str | None = None,
                 what: str = "file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes; anything else is bad input (exit 2)
    naming the file, before a byte is read.

    Why: a path comes from a person, an agent's tool call or a file in git, and reading what is not
    a regular file never ends: `/dev/zero` or `/dev/urandom` fill memory, a FIFO with no writer
    blocks the caller (an MCP server stops answering), a socket or a terminal waits for input. So
    the kind is checked by `stat` (following a symlink) before opening; the file is opened with
    O_NONBLOCK and O_NOCTTY, so a FIFO swapped in between the two cannot block and a terminal is
    never taken over, and checked again on the open descriptor; and at most `limit` + 1 bytes are
    read, so a file that grows while it is read is refused too. `what` names it in messages
    ("result file", "dataset")."""
    shown = shown if shown is not None else str(path)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise BadInput("no such file", file=shown, field=field, code="not_found") from None
    except OSError as e:
        raise BadInput(f"cannot read the {what}: {e.strerror}", file=shown, field=field) from None
    _check(st, limit, shown, field, what)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise BadInput(f"cannot read the {what}: {e.strerror}", file=shown, field=field) from None
    try:
        _check(os.fstat(fd), limit, shown, field, what)  # the file opened is the one checked
        chunks: list[bytes] = []
        n = 0
        while True:
            try:
                b = os.read(fd, min(1 << 20, limit + 1 - n))
            except BlockingIOError:  # pragma: no cover - a regular file never says "try again"
                raise BadInput(f"the {what} cannot be read now", file=shown, field=field) from None
            except OSError as e:
                raise BadInput(f"cannot read the {what}: {e.strerror}", file=shown, field=field) from None
            if not b:
                break
            chunks.append(b)
            n += len(b)
            if n > limit:
                raise _too_large(f"it grew past {fmt_count(limit)} bytes while it was read", limit, shown, field,
                                 what)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _check(st: os.stat_result, limit: int, shown: str, field: str | None, what: str) -> None:
    kind = _not_regular(st.st_mode)
    if kind is not None:
        raise BadInput(f"is {kind}, not a regular file: optlog reads a {what} only from a regular file",
                       file=shown, field=field, code="not_a_file")
    if st.st_size > limit:
        raise _too_large(f"it is {fmt_count(st.st_size)} bytes", limit, shown, field, what)


def _too_large(said: str, limit: int, shown: str, field: str | None, what: str) -> BadInput:
    return BadInput(f"{said}; optlog reads a {what} of at most {fmt_count(limit)} bytes (docs/input-limits.md)",
                    file=shown, field=field, code="too_large")
