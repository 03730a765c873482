"""`service.hypotheses.sync` on a workspace this optlog has indexed: a write validates the
hypotheses it reads, not every index document (at 10,000 hypotheses validating them all was
~0.3 s of each `hypothesis add`); the links of all are still checked, from the index's link
columns; a document another optlog indexed is judged from its file; and after a change of optlog
every index document is validated again, each that fails indexed again from its file.

In process on the workspace's real database (SQLite, or PostgreSQL under `-m db`); the count of
validations is taken by wrapping the model's own validators, which still run."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from optlog.core.hypothesis import HypothesisDoc
from optlog.errors import BadInput
from optlog.service import hypotheses as H
from optlog.service.context import Ctx
from optlog.store import hypindex

pytestmark = pytest.mark.db

N = 12


@pytest.fixture
def filled(ws, monkeypatch):
    """A workspace of N hypotheses (a family: h01 the parent of h02, h03 a rival of h02) indexed by
    a full-path read, and the in-process context's environment set to it."""
    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the in-process context reads the workspace's database settings
    for i in range(1, N + 1):
        extra = {2: "parent: h01\n", 3: "rivals: [h02]\n"}.get(i, "")
        (ws.root / "hypotheses" / f"h{i:02d}.yaml").write_text(f"id: h{i:02d}\ntitle: Hypothesis {i}\n{extra}")
    ws.cli("hypothesis", "list", "--json", env={"OPTLOG_READ_CACHE": "0"})  # the full path indexes them all
    return ws


@pytest.fixture
def validations(monkeypatch):
    """The ids of the hypotheses validated from an index document (or any JSON or data), in order."""
    seen: list[str] = []
    by_json, by_data = HypothesisDoc.model_validate_json, HypothesisDoc.model_validate

    def from_json(data, **kw):
        doc = by_json(data, **kw)
        seen.append(doc.id)
        return doc

    def from_data(data, **kw):
        doc = by_data(data, **kw)
        seen.append(doc.id)
        return doc

    monkeypatch.setattr(HypothesisDoc, "model_validate_json", from_json)
    monkeypatch.setattr(HypothesisDoc, "model_validate", from_data)
    return seen


def test_a_write_validates_what_it_reads_not_every_document(filled, validations):
    ctx = Ctx.find(filled.root, actor="test")
    try:
        docs = H.sync(ctx)
        assert list(docs) == [f"h{i:02d}" for i in range(1, N + 1)] and validations == []
        assert H.children_of(docs, "h01") == ["h02"] and H.rivals_of(docs, "h02") == ["h03"]
        assert H.rivals_of(docs, "h03") == ["h02"] and validations == []  # links from the index's columns
        assert docs["h05"].title == "Hypothesis 5" and validations == ["h05"]
        assert docs["h05"] is docs["h05"] and validations == ["h05"]  # validated once
        added = H.add(ctx, "Another", hid="h99", parent="h01")
        shown = H.written(ctx, added.id, True)
        assert shown["parent"] == "h01" and shown["children"] == []
        assert validations == ["h05", "h99"]  # and the new one, as it was made: no other
        assert H.show(ctx, "h01")["children"] == ["h02", "h99"]
    finally:
        ctx.close()
    # every hypothesis still reads as its file says, through the mapping and the full path
    ctx = Ctx.find(filled.root, actor="test")
    try:
        docs = H.sync(ctx)
        assert {h: d.title for h, d in docs.items()} == {
            **{f"h{i:02d}": f"Hypothesis {i}" for i in range(1, N + 1)}, "h99": "Another"}
        assert docs["h02"].parent == "h01" and docs["h03"].rivals == ["h02"]
    finally:
        ctx.close()
    listed = filled.j("hypothesis", "list", env={"OPTLOG_READ_CACHE": "0"})
    assert [h["id"] for h in listed["hypotheses"]] == sorted([f"h{i:02d}" for i in range(1, N + 1)] + ["h99"])


def test_links_of_unread_hypotheses_are_still_checked(filled):
    """A file deleted by hand that an unchanged hypothesis names as its parent, and a cycle made
    by hand through one: refused with the file and field of the hypothesis whose link is broken."""
    (filled.root / "hypotheses" / "h01.yaml").unlink()
    r = filled.cli("hypothesis", "list", "--json", check=2, env={"OPTLOG_READ_CACHE": "0"})
    err = json.loads(r.out)["error"]
    assert (err["file"], err["field"]) == ("hypotheses/h02.yaml", "parent") and "h01" in err["message"]
    (filled.root / "hypotheses" / "h01.yaml").write_text("id: h01\ntitle: Hypothesis 1\nparent: h02\n")
    r = filled.cli("hypothesis", "add", "X", "--id", "x", "--json", check=2)
    err = json.loads(r.out)["error"]
    assert "cycle" in err["message"] and "h01 → h02 → h01" in err["message"]


def _rewrite_row(ctx: Ctx, hid: str, change) -> None:
    with ctx.db.write_core(touches="index") as c:
        raw = c.execute(text("SELECT doc FROM hypothesis WHERE id = :id"), {"id": hid}).scalar()
        doc = json.loads(raw) if isinstance(raw, str) else dict(raw)
        change(doc)
        c.execute(text("UPDATE hypothesis SET doc = :d WHERE id = :id"), {"d": json.dumps(doc), "id": hid})


def _row(ctx: Ctx, hid: str) -> dict:
    with ctx.db.connect() as c:
        raw = c.execute(text("SELECT doc FROM hypothesis WHERE id = :id"), {"id": hid}).scalar()
    return json.loads(raw) if isinstance(raw, str) else dict(raw)


def _checked_by(ctx: Ctx) -> str | None:
    with ctx.db.connect() as c:
        return c.execute(text("SELECT value FROM sync_stamp WHERE key = :k"), {"k": hypindex.CHECKED_KEY}).scalar()


def test_a_document_another_optlog_indexed_is_judged_from_its_file(filled):
    """An index document this optlog cannot validate (a field another optlog wrote; its title
    changed there too) read through the mapping: the file's hypothesis, not the row's, nor an error."""
    ctx = Ctx.find(filled.root, actor="test")
    try:
        _rewrite_row(ctx, "h04", lambda d: d.update(title="From the row", written_by_another="yes"))
        assert H.sync(ctx)["h04"].title == "Hypothesis 4"
    finally:
        ctx.close()


def test_after_a_change_of_optlog_every_document_is_validated_and_mended(filled, validations):
    """Under another optlog's mark every index document is validated now; one that fails is read
    from its file and indexed again, and this optlog's mark is written; then reads are lazy again."""
    ctx = Ctx.find(filled.root, actor="test")
    try:
        from optlog import __version__

        assert _checked_by(ctx) == __version__  # the full path's first sync marked it
        _rewrite_row(ctx, "h04", lambda d: d.update(written_by_another="yes"))
        with ctx.db.write_core(touches="index") as c:  # the mark another optlog would leave
            c.execute(text("UPDATE sync_stamp SET value = :v WHERE key = :k"), {"v": "0.0.0-another", "k": hypindex.CHECKED_KEY})
    finally:
        ctx.close()
    ctx = Ctx.find(filled.root, actor="test")
    try:
        docs = H.sync(ctx)
        assert set(validations) == {f"h{i:02d}" for i in range(1, N + 1)}  # h04 from its file
        assert docs["h04"].title == "Hypothesis 4" and "written_by_another" not in _row(ctx, "h04")
        assert _checked_by(ctx) == __version__
    finally:
        ctx.close()
    validations.clear()
    ctx = Ctx.find(filled.root, actor="test")
    try:
        docs = H.sync(ctx)
        assert validations == [] and docs["h04"].title == "Hypothesis 4" and validations == ["h04"]
    finally:
        ctx.close()


def test_a_hand_edit_is_validated_and_an_invalid_one_refused(filled):
    """What changed since it was indexed is read and validated as before, however lazy the rest."""
    (filled.root / "hypotheses" / "h07.yaml").write_text("id: h07\ntitle: Edited by hand\n")
    ctx = Ctx.find(filled.root, actor="test")
    try:
        assert H.sync(ctx)["h07"].title == "Edited by hand"
    finally:
        ctx.close()
    (filled.root / "hypotheses" / "h08.yaml").write_text("id: h08\ntitle: T\nstatus: sideways\n")
    ctx = Ctx.find(filled.root, actor="test")
    try:
        with pytest.raises(BadInput) as e:
            H.sync(ctx)
        assert e.value.file == "hypotheses/h08.yaml"
    finally:
        ctx.close()
