"""Errors that carry an exit code and a location, so every face reports them the same way.

Exit codes (the CLI contract): 0 success, 1 the operation failed, 2 bad input.
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any


# A verb parameter named inside a message, until a face writes it in its own spelling (`param`)
_MARK = "\x1f"
_GIVEN = "\x1e"  # between a parameter's name and the value it was given (`param("a", "parallel=1")`)
_PLACEHOLDER = re.compile(f"{_MARK}([A-Za-z_][A-Za-z0-9_]*)(?:{_GIVEN}([^{_MARK}]*))?{_MARK}")
_HEAD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def param(name: str, value: str | None = None) -> str:
    """The verb parameter `name` (its Python name: `out`, `sets`) inside a message (an error, a
    warning, a notice). The layers below the faces do not know how a face spells it (the CLI's
    `--out`, a tool's `out`): each face fills it in in one place (`OptlogError.spell`, `spell_doc`);
    unspelt, it reads as the name. With `value`, the parameter as given that value: a selector's
    K=V pair `param("a", "parallel=1")` is `--a parallel=1` on the CLI and `a: {parallel: 1}` to a
    tool (issue 45: an agent was told the CLI's spelling)."""
    return f"{_MARK}{name}{_MARK}" if value is None else f"{_MARK}{name}{_GIVEN}{value}{_MARK}"


Given = Callable[[str, str], str]


def cli_given(spelt: str, value: str) -> str:
    """A parameter given a value, as a command line writes it: `--a parallel=1`."""
    return f"{spelt} {value}"


def tool_given(spelt: str, value: str) -> str:
    """A parameter given a value, as a tool call's arguments write it: `a: {parallel: 1}` for a
    K=V pair, `out: x` otherwise."""
    k, eq, v = value.partition("=")
    return f"{spelt}: {{{k}: {v}}}" if eq and k and " " not in k else f"{spelt}: {value}"


def spell_text(text: str, spelling: Callable[[str], str | None], given: Given = cli_given) -> str:
    """`text` with each `param` placeholder in a face's spelling (`spelling` gives None for a name
    it does not know: kept as the name)."""
    if _MARK not in text:
        return text

    def one(m: re.Match[str]) -> str:
        spelt = spelling(m.group(1)) or m.group(1)
        return spelt if m.group(2) is None else given(spelt, m.group(2))
    return _PLACEHOLDER.sub(one, text)


def spell_doc(doc: Any, spelling: Callable[[str], str | None], given: Given = cli_given) -> Any:
    """A verb's document with every `param` placeholder in its strings (warnings, reasons) in a
    face's spelling; the document itself when it has none (the common case: no copy)."""
    if isinstance(doc, str):
        return spell_text(doc, spelling, given)
    if isinstance(doc, dict):
        out = {k: spell_doc(v, spelling, given) for k, v in doc.items()}
        return doc if all(out[k] is doc[k] for k in doc) else out
    if isinstance(doc, list):
        items = [spell_doc(v, spelling, given) for v in doc]
        return doc if all(a is b for a, b in zip(items, doc)) else items
    return doc


def plain(text: str) -> str:
    """A message as a face with no spelling of its own shows it: each parameter by its name."""
    return spell_text(text, lambda _n: None)


@dataclass
class OptlogError(Exception):
    """Base class: a message a person reads, plus where the problem is.

    `field` names the place: a verb parameter by its Python name (`out`, `key_map`; a place inside
    its value: `sets.0`), or a key of the file in `file`. Below the faces it is never a face's
    spelling (no `--out`: tests/architecture/test_error_fields.py); each face renames the
    parameters it knows with `spell`."""

    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    field: str | None = None
    exit_code: int = 1
    code: str = "failed"
    extra: dict[str, Any] = dc_field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def spell(self, spelling: Callable[[str], str | None],
              in_text: Callable[[str], str | None] | None = None, given: Given = cli_given) -> OptlogError:
        """Write the verb parameters this error names in a face's spelling: the field's head
        (`sets` of `sets.0`) by `spelling`, each `param` placeholder of the message by `in_text`
        (default: `spelling`). Each gives None for a name it does not know, which stays as it is.
        Returns the error itself."""
        if self.field:
            m = _HEAD.match(self.field)
            to = spelling(m.group(0)) if m else None
            if m and to is not None and (m.end() == len(self.field) or self.field[m.end()] in ".["):
                self.field = to + self.field[m.end():]
        self.message = spell_text(self.message, in_text or spelling, given)
        return self

    @property
    def text(self) -> str:
        """The message as a person reads it: a parameter no face spelt reads as its name."""
        return plain(self.message)

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        fld = f"{self.field}: " if self.field else ""
        return f"{where}{fld}{self.text}"

    def to_json(self) -> dict[str, Any]:
        return {
            "error": {
                "code": self.code,
                "message": self.text,
                "file": self.file,
                "line": self.line,
                "column": self.column,
                "field": self.field,
                **self.extra,
            }
        }


class BadInput(OptlogError):
    """Exit 2: usage errors, unknown ids, malformed files. Nothing was written."""

    def __init__(self, message: str, **kw: Any) -> None:
        kw.setdefault("exit_code", 2)
        kw.setdefault("code", "bad_input")
        super().__init__(message, **kw)


class NotFound(BadInput):
    def __init__(self, message: str, **kw: Any) -> None:
        kw.setdefault("code", "not_found")
        super().__init__(message, **kw)


class Conflict(OptlogError):
    """Exit 1: a file changed under us (a hand edit raced an optlog write)."""

    def __init__(self, message: str, **kw: Any) -> None:
        kw.setdefault("code", "conflict")
        super().__init__(message, **kw)


class Failed(OptlogError):
    """Exit 1: the operation ran and failed (a run failed, a check found a falsified prediction)."""


def close_matches(given: str, candidates: Any, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The known names nearest to `given`, a different case first (the runs have `m`, the call
    said `M`): the one did-you-mean every face and message uses."""
    names = sorted({str(c) for c in candidates})
    close = [c for c in names if c.lower() == str(given).lower() and c != given]
    # never the given name itself: "no run has metric 'm' yet (did you mean 'm'?)" said nothing
    close += [c for c in difflib.get_close_matches(str(given), names, n=n + 1, cutoff=cutoff)
              if c not in close and c != str(given)]
    return close[:n]


def not_found(what: str, given: str, candidates: Any, field: str | None = None) -> NotFound:
    """`no <what> <given>`, with the closest known names as a did-you-mean in the message and in
    `did_you_mean`."""
    close = close_matches(given, candidates)
    msg = f"no {what} {given!r}" + (f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else "")
    return NotFound(msg, field=field, extra={"did_you_mean": close} if close else {})


# ---------------------------------------------------------------- a full disk

_NO_SPACE = ("no space left on device", "database or disk is full", "out of diskspace", "disk quota exceeded")
LOW_SPACE = 1 << 20  # below this, an I/O error on a write is taken for a full disk


def free_bytes(path: Any) -> int | None:
    """Bytes free to this user on the file system holding `path` (its nearest existing folder)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        st = os.statvfs(p)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def out_of_space(e: BaseException | None, where: Any = None) -> bool:
    """Whether `e`, or an exception it came from, is a full disk: ENOSPC or EDQUOT, SQLite's
    "database or disk is full", git's "Out of diskspace"; or an I/O error (SQLite says only "disk
    I/O error" when it cannot grow its shared memory file) while `where`'s file system is nearly full."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(e).lower()
        if any(t in text for t in _NO_SPACE):
            return True
        if where is not None and "i/o error" in text:
            free = free_bytes(where)
            if free is not None and free < LOW_SPACE:
                return True
        e = getattr(e, "orig", None) or e.__cause__ or e.__context__
    return False


def no_space(where: Any, left: str) -> Failed:
    """The error of a write the disk had no room for (exit 1, `disk_full`): where, how much is free,
    and exactly what the failed command left behind (`left`)."""
    free = free_bytes(where)
    room = f" ({free // 1024} KiB free)" if free is not None else ""
    return Failed(f"no space left on the device that holds {where}{room}: {left}. Free some space and run the "
                  f"command again", code="disk_full")


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) ended the command: exit 128 + its number (130, 143, 129),
    as a shell reports a process the signal ended. Raised by the handler of `optlog.runs.interrupt`;
    a BaseException, like KeyboardInterrupt, so that no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(f"cancelled by {self.name}")
