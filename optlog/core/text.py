"""Text that optlog accepts: the one check every reader applies to every string it takes in.

Why: text reaches git commit messages, the database, terminals and other programs. ASCII control
characters there can forge history (0x1E/0x1F were once optlog's own log separators), hide text
on a terminal, or break the database (PostgreSQL refuses NUL). So every string from the command
line, a YAML or JSON file, a todowrite payload or an MCP call passes `problem()` at the boundary:
control characters are refused (tab and newline are allowed where text may span lines), and so
are lone surrogates (bytes that were not valid UTF-8) and text longer than its limit.

Ids are checked here too (`check_id`), with a full match: `$` in a regular expression also matches
before a final newline, which let `"abc\\n"` pass as an id.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count
from optlog.errors import BadInput

# C0 and C1 control characters (tab and newline handled by the caller's `multiline`), DEL, and the
# Unicode line/paragraph separators, which Python's str.splitlines() treats as line breaks.
# Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) reorder what a
# reader sees ("Trojan Source"): refused like control characters.
_BIDI = "\u202a-\u202e\u2066-\u2069"
_BAD_ANY = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_BAD_LINE_TAB_OK = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029{_BIDI}\ud800-\udfff]")
# The output rule: what may never reach a terminal or a rendered file raw, whatever its source
# (a result file, a bench's stderr, a hand-made commit, a database written by an older optlog).
_UNSAFE_OUT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}\ud800-\udfff]")

ID_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def describe_char(ch: str) -> str:
    o = ord(ch)
    if 0xD800 <= o <= 0xDFFF:
        return "bytes that are not valid UTF-8"
    if ch == "\n":
        return "a line break (this text is one line)"
    if 0x202A <= o <= 0x202E or 0x2066 <= o <= 0x2069:
        return f"the bidirectional override U+{o:04X}"
    return f"the control character U+{o:04X}"


def problem(s: str, *, multiline: bool = True, max_chars: int | None = None) -> str | None:
    """Why `s` is refused, or None. `multiline` allows newlines; tab is allowed everywhere."""
    limit = max_chars if max_chars is not None else (LIMITS.text_chars if multiline else LIMITS.line_chars)
    if len(s) > limit:
        return f"too long: {fmt_count(len(s))} characters (at most {fmt_count(limit)})"
    m = (_BAD_ANY if multiline else _BAD_LINE_TAB_OK).search(s)
    if m:
        return f"contains {describe_char(m.group(0))} at character {m.start() + 1}"
    return None


def _escape(m: re.Match[str]) -> str:
    o = ord(m.group(0))
    return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}"


def shown(s: str) -> str:
    """The output rule, for every face (CLI text, TUI, report, MCP text): `s` with each control
    character (but tab and newline), bidirectional override and lone surrogate written as a visible
    escape (`\\x1b`, `\\u202e`), so no data can drive a terminal (OSC 52 sets the clipboard, ESC[2J
    clears the screen) or reorder what a reader sees. Cheap when there is nothing to escape."""
    return _UNSAFE_OUT.sub(_escape, s) if _UNSAFE_OUT.search(s) else s


def shown_tree(obj: Any) -> Any:
    """`shown` on every string of a JSON-like value (keys too); other values as they are."""
    if isinstance(obj, str):
        return shown(obj)
    if isinstance(obj, dict):
        return {shown_tree(k): shown_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [shown_tree(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(shown_tree(v) for v in obj)
    return obj


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group(0)):04x}"


def json_shown(doc_text: str) -> str:
    """JSON text with the characters the output rule escapes written as `\\uXXXX` (the same
    document to a parser: they can only occur inside strings). json.dumps escapes C0 controls but
    not C1 controls, DEL or bidi overrides when ensure_ascii is off."""
    return _UNSAFE_OUT.sub(_json_escape, doc_text) if _UNSAFE_OUT.search(doc_text) else doc_text


def check(s: str, field: str | None = None, *, multiline: bool = True, max_chars: int | None = None,
          **where: Any) -> str:
    """`s` unchanged, or BadInput naming the field (and file/line when given in `where`)."""
    why = problem(s, multiline=multiline, max_chars=max_chars)
    if why is not None:
        raise BadInput(why, field=field, code="bad_text", **where)
    return s


def line(v: str) -> str:
    """A pydantic validator: one-line text (titles, labels, names)."""
    why = problem(v, multiline=False)
    if why is not None:
        raise ValueError(why)
    return v


def text(v: str) -> str:
    """A pydantic validator: multi-line text (statements, reasons)."""
    why = problem(v, multiline=True)
    if why is not None:
        raise ValueError(why)
    return v


# Names Windows keeps for devices, with or without an extension and in any case (`con`, `NUL.yaml`,
# `com1.txt`): a file `hypotheses/con.yaml` cannot be checked out there, so a clone on Windows breaks
WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in "123456789¹²³"),
                              *(f"lpt{i}" for i in "123456789¹²³")})


def windows_reserved(name: str) -> bool:
    """`name` (a file name or an id that becomes one) is a Windows device name."""
    return str(name).split(".", 1)[0].strip().rstrip(" ").lower() in WINDOWS_RESERVED


def is_id(hid: str) -> bool:
    return isinstance(hid, str) and ID_RE.fullmatch(hid) is not None and not windows_reserved(hid)


def check_id(hid: str) -> str:
    if isinstance(hid, str) and windows_reserved(hid):
        raise ValueError(f"bad id {hid!r}: a name Windows keeps for a device (con, prn, aux, nul, com1-9, lpt1-9) "
                         "cannot be a file there; choose another")
    if not is_id(hid):
        raise ValueError(f"bad id {hid!r}: lower-case letters, digits and '-', starting with a letter or digit")
    return hid


def check_tree(data: Any, file: str | None = None,
               locate: Callable[[tuple[Any, ...]], int | None] | None = None) -> None:
    """Every string of a parsed document (keys and values) passes `problem()`; depth and the number
    of values are bounded (JSON's parser has no event stream to guard, and a caller may hand in
    data built elsewhere: an MCP call, a todowrite list). Iterative, so depth cannot overflow the
    stack. `locate` turns a location into a line number (YAML); errors name file, line and field."""
    todo: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    n = 0

    def bad(msg: str, loc: tuple[Any, ...], code: str) -> BadInput:
        return BadInput(msg, file=file, line=locate(loc) if locate else None,
                        field=".".join(str(p) for p in loc) or None, code=code)

    while todo:
        obj, loc = todo.pop()
        n += 1
        if n > LIMITS.nodes:
            raise bad(f"more than {fmt_count(LIMITS.nodes)} values", (), "too_large")
        if len(loc) > LIMITS.depth:
            raise bad(f"nested more than {LIMITS.depth} levels deep", loc[:LIMITS.depth], "too_deep")
        if isinstance(obj, str):
            why = problem(obj)
            if why is not None:
                raise bad(why, loc, "bad_text")
        elif isinstance(obj, dict):
            for k, v in obj.items():
                if isinstance(k, str):
                    why = problem(k, multiline=False)
                    if why is not None:
                        raise bad(f"a key {why}", loc, "bad_text")
                todo.append((v, (*loc, k)))
        elif isinstance(obj, (list, tuple)):
            todo.extend((v, (*loc, i)) for i, v in enumerate(obj))
