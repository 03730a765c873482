"""JSON text in, with no key said twice: the one JSON reader every part of optlog uses.

Python's `json.loads` keeps the last of two equal keys in an object without a word (RFC 8259 leaves
it to the reader), so `metrics: {"m": 1, "m": 2}` from an agent, a result file or a todo list read
as `{"m": 2}`: one of two figures dropped, silently (issue 42). YAML documents refuse it on their
event stream (`optlog.yamlio`); JSON refuses it here, through `object_pairs_hook`, naming the key,
its path in the document and its line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from optlog.errors import BadInput


# the argument a tool call is given in place of its own when its JSON said a key twice (`in_call`)
DUPLICATE = "optlog/duplicate_key"


class DuplicateKey(BadInput):
    """A JSON object names a key twice (exit 2). `key`, `path` (the key's place: `metrics.m`) and
    `line` (of its second occurrence, where it could be told) say where; a reader that knows the
    file adds it (`in_file`)."""

    def __init__(self, key: str, path: str, line: int | None = None, **kw: Any) -> None:
        shown = key if len(key) <= 60 else key[:40] + "…"
        super().__init__(f"duplicate key {shown!r}" + (f" in {path.rsplit('.', 1)[0]}" if "." in path else "")
                         + " (JSON would keep only the last one; say it once)",
                         field=kw.pop("field", None) or path, line=line, code="duplicate_key", **kw)
        self.key, self.path = key, path

    def in_file(self, file: str, first_line: int = 1) -> "DuplicateKey":
        """This error naming `file`, its line counted from `first_line` (a JSONL line's number)."""
        line = None if self.line is None else self.line + first_line - 1
        return DuplicateKey(self.key, self.path, line, file=file)


class _Dup(Exception):
    def __init__(self, key: str, nth: int) -> None:
        super().__init__(key)
        self.key, self.nth = key, nth


def _hook(counter: list[int]) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        counter[0] += 1
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise _Dup(k, counter[0])
            out[k] = v
        return out
    return pairs


def loads(text: str | bytes, **kw: Any) -> Any:
    """`json.loads(text, **kw)`, refusing an object that names a key twice (DuplicateKey)."""
    counter = [0]
    try:
        return json.loads(text, object_pairs_hook=_hook(counter), **kw)
    except _Dup as e:
        s = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else text
        path, line = _where(s, e.key)
        raise DuplicateKey(e.key, path, line) from None


_DECODER = json.JSONDecoder()


def member(text: str, key: str) -> Any:
    """The value of `key` in the compact JSON object `text` (no space after a colon), found
    without parsing the rest: for an object of many members, few of which are read, whose values
    hold no object and no string followed by a colon (`core.statusdoc.due_memo_doc`'s states:
    lists of short strings and numbers), so the key's text followed by a colon is the member.
    KeyError where the key is not there, ValueError where its value is no JSON; where the key is
    said twice, its first value (`loads` refuses such a text: read it whole to be told)."""
    head = json.dumps(key) + ":"
    i = text.find(head)
    if i < 0:
        raise KeyError(key)
    return _DECODER.raw_decode(text, i + len(head))[0]


def check(text: str | bytes) -> None:
    """Refuse `text` when an object in it names a key twice (DuplicateKey); nothing when it is
    not JSON at all (its reader says so)."""
    try:
        loads(text)
    except (ValueError, RecursionError):
        pass


def _where(text: str, key: str) -> tuple[str, int | None]:
    """The path of the first key said twice (`a.b`) and the line of its second saying, found by
    walking the document again with the path of each object (the hook sees no positions)."""
    found: list[str] = []

    def walk(v: Any, at: str) -> None:
        if found:
            return
        if isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{at}.{i}" if at else str(i))
        elif isinstance(v, tuple):  # the pairs of one object
            seen: set[str] = set()
            for k, x in v:
                if k in seen and not found:
                    found.append(f"{at}.{k}" if at else k)
                    return
                seen.add(k)
                walk(x, f"{at}.{k}" if at else k)

    try:
        walk(json.loads(text, object_pairs_hook=tuple), "")
    except (ValueError, RecursionError):
        pass
    path = found[0] if found else key
    hits = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
    line = text.count("\n", 0, hits[1]) + 1 if len(hits) >= 2 else None
    return path, line


def in_call(line: str) -> str:
    """A JSON-RPC line as the MCP server reads it, no key said twice reaching the SDK (whose reader
    keeps the last value): a `tools/call` whose arguments say a key twice has them replaced by
    `{DUPLICATE: {key, path}}` (the face answers it with this module's usage error, naming the key,
    and runs nothing); any other request with a key said twice becomes the request `DUPLICATE`
    `{key, path, method}` (mcp/server answers it with a JSON-RPC error naming the key); a
    notification, the notification `notifications/DUPLICATE` (nothing acts on it); a response, an
    error response. The id a reply goes to is the one the line ends with. Any other line is given
    back as it came."""
    try:
        loads(line)
        return line
    except DuplicateKey as e:
        msg = json.loads(line)
        if not isinstance(msg, dict):
            return line
        params = msg.get("params") if msg.get("method") == "tools/call" else None
        if isinstance(params, dict) and e.path.startswith("params.arguments."):
            params["arguments"] = {DUPLICATE: {"key": e.key, "path": e.path[len("params.arguments."):]}}
            return json.dumps(msg) + "\n"
        said = {"key": e.key, "path": e.path}
        if isinstance(msg.get("method"), str) and "id" in msg:
            out = {"jsonrpc": "2.0", "id": msg["id"], "method": DUPLICATE, "params": {**said, "method": msg["method"]}}
        elif isinstance(msg.get("method"), str):
            out = {"jsonrpc": "2.0", "method": f"notifications/{DUPLICATE}", "params": said}
        elif "id" in msg:
            out = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32600, "message": e.message}}
        else:
            return line
        return json.dumps(out) + "\n"
    except (ValueError, RecursionError):
        return line
