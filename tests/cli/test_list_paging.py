"""Lists without a limit page by default (issue 34 item 4): `run list` of 100,000 runs printed
6 MB in 25 s. Without --limit the CLI gives the first page (LIMITS.list_page runs) with the page
facts (`total`, `next_offset`), and says on stderr how to get the rest; --limit and --offset work
as before."""

from __future__ import annotations

from optlog.core.limits import LIMITS


def _many_runs(ws, monkeypatch, n: int) -> None:
    from optlog.service.context import Ctx
    from optlog.service.evidence import insert_run

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the workspace's database (OPTLOG_DB_URL on PostgreSQL)
    ctx = Ctx.find(ws.root, actor="tester")
    try:
        with ctx.db.write() as s:
            for i in range(n):
                insert_run(s, labels={"c": i % 3}, metrics={"tps": float(i)})
    finally:
        ctx.close()


def test_run_list_pages_by_default(ws, monkeypatch):
    page = LIMITS.list_page
    _many_runs(ws, monkeypatch, page + 5)
    r = ws.cli("run", "list", "--json")
    doc = r.json
    assert len(doc["runs"]) == page and doc["total"] == page + 5 and doc["next_offset"] == page, \
        {k: v for k, v in doc.items() if k != "runs"}
    assert doc["runs"][0]["id"] == 1  # the first page, oldest first (the CLI's order)
    assert f"{page:,} of {page + 5:,} runs" in r.err and "--offset" in r.err
    rest = ws.j("run", "list", "--offset", str(page))
    assert [x["id"] for x in rest["runs"]] == list(range(page + 1, page + 6))
    assert len(ws.j("run", "list", "--limit", str(page + 10))["runs"]) == page + 5
    human = ws.cli("run", "list")
    assert f"{page:,} of {page + 5:,} runs" in human.err


def test_a_short_list_is_whole_and_says_nothing(ws):
    ws.cli("run", "record", "--metric", "tps=1")
    r = ws.cli("run", "list", "--json")
    assert len(r.json["runs"]) == 1 and "total" not in r.json and r.err == ""
