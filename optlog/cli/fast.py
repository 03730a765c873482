"""The CLI's front door for the hot reads: `status`, `todo list`, `hypothesis list`, `run list`
under `--json`, answered from the read cache (`optlog.store.readcache`) before click, SQLAlchemy
or the command tree are imported; on a miss the full CLI runs and its document is stored.

Only the standard library and `optlog.store.readcache` are imported here. A document is served
only for an argument list that the full CLI itself answered with that document (stored under the
same arguments), so the two cannot disagree on what the arguments mean; `-C PATH` is understood
only in front of the command, where it cannot be another option's value.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass, field
from typing import Any

from optlog.core.text import json_shown, shown
from optlog.errors import OptlogError, plain
from optlog.paths import find_workspace
from optlog.api import firstread
from optlog.api.cache import READS, readcache, todoinbox
from optlog.core import jsondoc
from optlog import settings

# command aliases (the one place: `optlog.cli.main` reads them from here)
ALIASES = {"hyp": "hypothesis", "pred": "prediction", "todos": "todo", "runs": "run"}


@dataclass
class Pending:
    """A miss being worked out by the full CLI: what to store if it succeeds quietly."""

    ws: Any
    key: str
    stamp: Any
    texts: list[str] = field(default_factory=list)
    noticed: bool = False
    pg: bool = False  # on PostgreSQL: the stamp after it reads the facts through psycopg


PENDING: Pending | None = None


def _reads(key: str) -> str:
    """What the document of the read of this cache key depends on (readcache.reads_of)."""
    return readcache.reads_of(jsondoc.loads(key))


def read_key(args: list[str]) -> tuple[str | None, str] | None:
    """(the -C folder, the cache key) of a cacheable read, else None."""
    chdir = None
    if args[:1] == ["-C"] and len(args) > 1:
        chdir, args = args[1], args[2:]
    if "--json" not in args:
        return None
    rest = [a for a in args if a != "--json"]
    if not rest or any(a == "--" or a.startswith("-C") or a in ("-h", "--help", "--version") for a in rest):
        return None
    cmd = [ALIASES.get(rest[0], rest[0]), *rest[1:]]
    if tuple(cmd[:1]) not in READS and tuple(cmd[:2]) not in READS:
        return None
    return chdir, json.dumps(cmd, ensure_ascii=False)


def launching(args: list[str]) -> bool:
    """The command is `run launch` (its start-up must hear SIGINT: optlog.cli.entry)."""
    words: list[str] = []
    it = iter(args)
    for a in it:
        if a == "-C":
            next(it, None)
        elif not a.startswith("-"):
            words.append(ALIASES.get(a, a) if not words else a)
            if len(words) == 2:
                break
    return words == ["run", "launch"]


QUEUE_ARGS = (["todo", "write", "--queue", "-"], ["todo", "write", "-", "--queue"])


def queue_todos(args: list[str]) -> bool:
    """`todo write --queue -` (an agent's todo hook): validate the list on stdin and queue it
    (`optlog.store.todoinbox`) with no database and no click, and print `{"queued": N}`. False, with
    stdin given back, when anything is not plain (the full CLI then says what is wrong)."""
    chdir = None
    if args[:1] == ["-C"] and len(args) > 1:
        chdir, args = args[1], args[2:]
    rest = [a for a in args if a != "--json"]
    if rest not in QUEUE_ARGS:
        return False
    raw = sys.stdin.buffer.read()
    try:
        ws = find_workspace(chdir)
        n = todoinbox.queue(ws, jsondoc.loads(raw.decode("utf-8")))
        sys.stdout.write(json.dumps({"queued": n}) + "\n")
        sys.stdout.flush()
        return True
    except Exception:  # noqa: BLE001  (bad JSON, bad input, no workspace: the full CLI reports it, exit 2)
        sys.stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
        return False


def firstread_enabled() -> bool:
    """`OPTLOG_FIRST_READ=0`: a miss takes the full path (to compare the two, issue 47)."""
    return settings.read("first_read", "1") != "0"


def text_status(args: list[str]) -> tuple[str | None, str] | None:
    """(the -C folder, the cache key of `status --json`) for a plain `status` (a person's text), else None."""
    chdir = None
    if args[:1] == ["-C"] and len(args) > 1:
        chdir, args = args[1], args[2:]
    return (chdir, json.dumps(["status"])) if args == ["status"] else None


def serve(args: list[str]) -> bool:
    """Print the cached document of this read and return True; else False (and, on a miss, note
    what the full CLI should store). A plain `status` is printed as its text, from the same
    document (`optlog.cli.statustext`)."""
    global PENDING
    if args[:2] == ["todo", "write"] or args[2:4] == ["todo", "write"]:
        return queue_todos(args)
    k = read_key(args)
    as_text = False
    if k is None:
        k = text_status(args)
        as_text = True
    if k is None:
        return False
    if not readcache.enabled():
        return False
    pg = None
    try:
        ws = find_workspace(k[0])
        pg = firstread.pg_connection(ws)  # PostgreSQL: psycopg alone (None on SQLite)
        if ws.sqlite_file is None and pg is None:
            return False
        try:
            if readcache.shows_todos(_reads(k[1])) and firstread_enabled():
                firstread.apply_queued(ws, pg)  # a list the agent's hook queued
            st = readcache.stamp(ws, firstread.facts(pg), reads=_reads(k[1]))
            if st is None:
                return False
            text = readcache.get(ws, k[1], st)
            if text is None and firstread_enabled():
                said: list[str] = []
                text = firstread.answer(ws, k[1], st, reads=_reads(k[1]), pg=pg, notices=said)
                for n in said:  # as optlog.cli.main.notice narrates (these name no parameter)
                    sys.stderr.write(f"optlog: {shown(plain(n))}\n")
                sys.stderr.flush()
        finally:
            if pg is not None:
                pg.close()
    except (OptlogError, OSError):
        return False  # the full CLI says what is wrong
    if text is None:
        if not as_text:
            PENDING = Pending(ws, k[1], st, pg=pg is not None)
        return False
    if as_text:
        from optlog.cli.statustext import status_human  # deferred: a person's status text (core.posthoc, core.expr); a --json read never loads it

        try:
            out = shown(status_human(jsondoc.loads(text)))
        except KeyError:
            return False  # a call CALL_SHAPES does not spell: the full path says it
    elif sys.stdout.isatty():  # the same rendering as `emit`: indented for a person
        out = json_shown(json.dumps(jsondoc.loads(text), indent=2, ensure_ascii=False))
    else:  # as stored: a read's text is stored as printed (store.readcache.put)
        out = text
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        return False
    return True


def record(text: str) -> None:
    """The full CLI printed this document (compact JSON)."""
    if PENDING is not None:
        PENDING.texts.append(text)


def noticed() -> None:
    """The full CLI narrated something on stderr: a replay would not, so nothing is stored."""
    if PENDING is not None:
        PENDING.noticed = True


def commit(exit_code: int) -> None:
    """Store the pending document if the command succeeded quietly and nothing changed meanwhile."""
    global PENDING
    p, PENDING = PENDING, None
    if p is None or exit_code != 0 or p.noticed or len(p.texts) != 1:
        return
    pg = firstread.pg_connection(p.ws) if p.pg else None
    if p.pg and pg is None:
        return
    try:
        after = readcache.stamp(p.ws, firstread.facts(pg), reads=_reads(p.key))
    finally:
        if pg is not None:
            pg.close()
    if after is not None and after.key == p.stamp.key:
        readcache.put(p.ws, p.key, after, p.texts[0])
