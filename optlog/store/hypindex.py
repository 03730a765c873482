"""The database index of the hypothesis files (`hypothesis` and `prediction_index` rows): what
`service.hypotheses.sync` compares with the files, and the rows it writes for a changed file. The
files stay the truth (`store.hypfiles`); this index lets `status` and `hypothesis list` answer
without parsing every file, and lets SQL find the predictions by metric."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError
from sqlalchemy import JSON, BigInteger, Column, Integer, MetaData, String, Table, delete, insert, text, update

from optlog import __version__
from optlog.core.family import rival_ids
from optlog.core.hypothesis import HypothesisDoc
from optlog.core.timeutil import now_iso
from optlog.store.hypfiles import Loaded, index_row, load_file, prediction_rows

if TYPE_CHECKING:
    from sqlalchemy import Connection, CursorResult
    from sqlmodel import Session

    from optlog.paths import Workspace

# (file hash, file mtime in ns, the parsed document as JSON data, its parent, its rivals as the
# link columns hold them) of an indexed hypothesis
IndexRow = tuple[str, int, "dict[str, Any] | str", "str | None", Any]


def index_rows(c: Connection) -> dict[str, IndexRow]:
    """id → its index row, for every indexed hypothesis. Core, not the ORM: `status` and
    `hypothesis list` read every row on each call. The document as the driver gives it: JSON text
    from SQLite (validated from the text, `model_validate_json`, ~40% cheaper than parsing it
    first: issue 47), a decoded dict from psycopg."""
    out: dict[str, IndexRow] = {}
    for hid, fhash, mtime, doc, parent, rivals in c.execute(
            text("SELECT id, file_hash, file_mtime_ns, doc, parent, rivals FROM hypothesis")).all():
        out[hid] = (fhash, mtime, doc, parent, rivals)
    return out


# sync_stamp: the optlog whose `service.hypotheses.sync` last validated every index document (and
# indexed again each one that failed); under it, an unchanged hypothesis is validated when read
CHECKED_KEY = "hypothesis index checked"


def checked_here(c: Connection) -> bool:
    """Every index document was validated by this optlog (`CHECKED_KEY`), so each validates."""
    return c.execute(text("SELECT value FROM sync_stamp WHERE key = :k"), {"k": CHECKED_KEY}).scalar() == __version__


def note_checked(s: Connection | Session) -> None:
    """Say that this optlog validated every index document (`CHECKED_KEY`), in the caller's write."""
    s.execute(text("DELETE FROM sync_stamp WHERE key = :k"), {"k": CHECKED_KEY})
    s.execute(text("INSERT INTO sync_stamp (key, value) VALUES (:k, :v)"), {"k": CHECKED_KEY, "v": __version__})


class Unread:
    """A hypothesis unchanged since it was indexed, as its index row holds it: its id and links
    from the row's columns (what the link checks and a hypothesis's family read of every one), its
    document validated when first read (`Hypotheses`)."""

    __slots__ = ("id", "parent", "rivals", "raw", "doc")

    def __init__(self, hid: str, row: IndexRow) -> None:
        self.id, self.raw, self.parent = hid, row[2], row[3]
        self.rivals: list[str] = rival_ids(row[4])
        self.doc: HypothesisDoc | None = None


class Hypotheses(Mapping[str, HypothesisDoc]):
    """Every hypothesis by id, in the files' order, as `service.hypotheses.sync` found them: each
    file changed since it was indexed read and validated already; each unchanged one validated
    from its index document when first read. Why: a write reads one or two hypotheses and the
    links of all, and at 10,000 hypotheses validating every index document was ~0.3 s of each
    `hypothesis add`. `links()`: each one's id, parent and rivals without validating it."""

    def __init__(self, ws: Workspace, entries: dict[str, HypothesisDoc | Unread]) -> None:
        self._ws, self._entries = ws, entries

    def __getitem__(self, hid: str) -> HypothesisDoc:
        e = self._entries[hid]
        if isinstance(e, Unread):
            if e.doc is None:
                e.doc = self._validated(e)
            return e.doc
        return e

    def _validated(self, e: Unread) -> HypothesisDoc:
        try:
            return (HypothesisDoc.model_validate_json(e.raw) if isinstance(e.raw, str)
                    else HypothesisDoc.model_validate(e.raw))
        except ValidationError:  # indexed by another optlog since this one checked: the file, judged now
            return load_file(self._ws, self._ws.hypothesis_file(e.id)).doc

    def __contains__(self, hid: object) -> bool:
        return hid in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def links(self) -> Mapping[str, HypothesisDoc | Unread]:
        """id → the hypothesis as far as its links go (`id`, `parent`, `rivals`), none validated."""
        return self._entries


def links_of(docs: Mapping[str, HypothesisDoc]) -> Mapping[str, Any]:
    """id → each hypothesis's links (`id`, `parent`, `rivals`): a `Hypotheses`' without validating them."""
    return docs.links() if isinstance(docs, Hypotheses) else docs


# the index's two tables as Core sees them (the same columns as store.models' HypothesisIndex and
# PredictionIndex, whose SQLModel classes a read that indexes one changed file need not import)
_META = MetaData()
HYP = Table("hypothesis", _META, Column("id", String, primary_key=True), Column("title", String),
            Column("status", String), Column("parent", String), Column("rivals", JSON), Column("file_hash", String),
            Column("file_mtime_ns", BigInteger), Column("created_at", String), Column("updated_at", String),
            Column("doc", JSON))
PRED = Table("prediction", _META, Column("id", String, primary_key=True), Column("hypothesis_id", String),
             Column("version", Integer), Column("metric", String), Column("expect", String), Column("status", String),
             Column("spec", JSON))


def index(s: Connection | Session, ld: Loaded) -> None:
    """Write (or rewrite) a loaded file's hypothesis row and its prediction rows (Core: in a
    `Database.write_core` or `write` transaction)."""
    d = ld.doc
    row = index_row(ld, now_iso())
    done = cast("CursorResult[Any]", s.execute(update(HYP).where(HYP.c.id == d.id).values(**row)))
    if not done.rowcount:
        s.execute(insert(HYP).values(id=d.id, created_at=d.created or row["updated_at"], **row))
    s.execute(delete(PRED).where(PRED.c.hypothesis_id == d.id))
    if d.predictions:
        s.execute(insert(PRED), prediction_rows(ld))


def unindex(s: Connection | Session, hid: str) -> None:
    """Drop a hypothesis (its file is gone) and its prediction rows from the index."""
    s.execute(delete(PRED).where(PRED.c.hypothesis_id == hid))
    s.execute(delete(HYP).where(HYP.c.id == hid))
