"""The database index of the hypothesis files (`hypothesis` and `prediction_index` rows): what
`service.hypotheses.sync` compares with the files, and the rows it writes for a changed file. The
files stay the truth (`store.hypfiles`); this index lets `status` and `hypothesis list` answer
without parsing every file, and lets SQL find the predictions by metric."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import JSON, BigInteger, Column, Integer, MetaData, String, Table, delete, insert, text, update

from optlog.core.timeutil import now_iso
from optlog.store.hypfiles import Loaded, index_row, prediction_rows

if TYPE_CHECKING:
    from sqlalchemy import Connection, CursorResult
    from sqlmodel import Session

# (file hash, file mtime in ns, the parsed document as JSON data) of an indexed hypothesis
IndexRow = tuple[str, int, "dict[str, Any] | str"]


def index_rows(c: Connection) -> dict[str, IndexRow]:
    """id → its index row, for every indexed hypothesis. Core, not the ORM: `status` and
    `hypothesis list` read every row on each call. The document as the driver gives it: JSON text
    from SQLite (validated from the text, `model_validate_json`, ~40% cheaper than parsing it
    first: issue 47), a decoded dict from psycopg."""
    out: dict[str, IndexRow] = {}
    for hid, fhash, mtime, doc in c.execute(text("SELECT id, file_hash, file_mtime_ns, doc FROM hypothesis")).all():
        out[hid] = (fhash, mtime, doc)
    return out


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
