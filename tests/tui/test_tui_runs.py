"""The runs table a person reads (issue 19.2), driven from the keyboard and the mouse through
Textual's pilot on real runs recorded by the CLI: a column per varying label and chosen metric,
sort, the CLI's selector syntax as a filter, groups, marks, and `run diff` of two marked runs."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual")

from _tui import _app, _form, _messages, _rendered, _until  # noqa: E402


def _record(ws):
    for i, (cfg, conc, tput, extra) in enumerate([("tp8", 64, 900, []), ("tp8", 512, 1500, ["--label=loaded=true"]),
                                                  ("tp4pp2", 256, 1200, []), ("tp4pp2", 64, 700, ["--label=concurrent=true"])]):
        ws.cli("run", "record", f"--label=config={cfg}", f"--label=concurrency={conc}", "--label=model=glm5",
               f"--label=repeat={i}", f"--metric=tput={tput}", "--metric=ttft_ms=35", *extra)
    ws.cli("run", "invalidate", "4", "--why", "FP4 GEMM returned zeros")


def _table(app):
    from textual.widgets import DataTable

    return app.query_one("#runs-table", DataTable)


def _headers(app):
    return [str(c.label) for c in _table(app).columns.values()]


def _col(app, name):
    t = _table(app)
    return [str(t.get_cell(rk, name)) for rk in t.rows]


def _ids(app):
    return [int(rk.value) for rk in _table(app).rows]


def test_columns_sort_filter_group_mark_and_diff(ws, monkeypatch):
    _record(ws)
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(140, 40), notifications=True) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("3")
            await pilot.pause(0.1)
            out = {"headers": _headers(app), "flags": _col(app, "flags"), "config": _col(app, "l:config"),
                   "bar": _rendered(app, "#runs-bar")}
            # s: the next column; the metrics sort largest first
            while app.runs.run_sort[0] != "m:tput":
                await pilot.press("s")
            out["by_tput"] = _ids(app)
            await pilot.press("S")
            out["by_tput_rev"] = _ids(app)
            # a click on a header sorts by it
            t = _table(app)
            x = sum(c.get_render_width(t) for c in list(t.columns.values())[:5])  # mark, id, flags, status, tput
            await pilot.click("#runs-table", offset=(x + 2, 0))
            await pilot.pause(0.1)
            out["clicked"] = app.runs.run_sort
            out["by_conc"] = _ids(app)
            # /: the --a selector, then a --where condition, then a bad one (kept out, said why)
            await pilot.press("slash")
            await _form(pilot, app, filter="config=tp8")
            out["tp8"] = _ids(app)
            out["tp8_headers"] = _headers(app)
            await pilot.press("slash")
            await _form(pilot, app, filter="concurrency >= 256 and status == succeeded")
            out["where"] = sorted(_ids(app))
            await pilot.press("slash")
            await _form(pilot, app, filter="concurrency >> 3")
            out["bad"] = (app.runs.run_filter, sorted(_ids(app)), _messages(app))
            await pilot.press("slash")
            await _form(pilot, app, filter="")
            # G: grouped by launch, then by hypothesis
            await pilot.press("G")
            out["group"] = (_headers(app)[0], _col(app, "group")[0])
            await pilot.press("G", "G")
            out["ungrouped"] = "group" not in [str(k.value) for k in _table(app).columns]
            # m, ↓, m, d: the run diff of the two marked runs
            await pilot.press("home", "m", "down", "m")
            out["marks"] = ({i: m for i, m in zip(_ids(app), _col(app, "mark")) if m}, list(app.runs.marked))
            await pilot.press("d")
            ok = await _until(pilot, lambda: "vs run" in _rendered(app, "#run-text"), 5)
            assert ok, (_rendered(app, "#run-text"), _messages(app), app.runs.marked, app.selected_run)
            out["diff"] = _rendered(app, "#run-text")
            # the runs table's keys are in the command palette too, and work from another tab
            await pilot.press("2")
            before = app.runs.run_sort
            cmd = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("Runs: Reverse"))
            await cmd.callback()
            await pilot.pause(0.1)
            out["palette"] = (app.query_one("#tabs").active, before, app.runs.run_sort)
            return out

    o = asyncio.run(go())
    # a column per label that varies (not model, not repeat), per chosen metric; flags marked
    # ttft_ms is 35 in every run: a constant column, after the labels that vary (issue 48)
    assert [h.split(" ")[0] for h in o["headers"]] == ["", "id", "⚑", "status", "tput", "concurrency", "config", "ttft_ms"]
    assert o["flags"] == ["", "≈", "", "✘⇄"]
    assert o["config"] == ["tp8", "tp8", "tp4pp2", "tp4pp2"]
    assert "4 runs" in o["bar"] and "✘ invalidated" in o["bar"]
    assert o["by_tput"] == [2, 3, 1, 4] and o["by_tput_rev"] == [4, 1, 3, 2]
    assert o["clicked"] == ("l:concurrency", False) and o["by_conc"] == [1, 4, 3, 2]
    assert sorted(o["tp8"]) == [1, 2]
    assert "config" not in [h.split(" ")[0] for h in o["tp8_headers"]]  # no longer varies among the shown
    assert o["where"] == [2, 3]
    assert o["bad"][0] == "concurrency >= 256 and status == succeeded" and o["bad"][1] == [2, 3]
    assert any("filter:" in m and "column" in m for m in o["bad"][2])
    assert o["group"][0] == "launch" and o["group"][1].startswith("no launch (4)")
    assert o["ungrouped"]
    marks, marked = o["marks"]
    assert len(marked) == 2 and marks == {marked[0]: "a", marked[1]: "b"}
    a, b = o["diff"].split("\n")[0].split(" vs ")
    assert a == f"run {marked[0]} (a)" and b.startswith(f"run {marked[1]} (b)") and "config" in o["diff"] and "tput" in o["diff"]
    tab, before, after = o["palette"]
    assert tab == "runs" and after == (before[0], not before[1])


def test_ten_thousand_runs_stay_paged(ws, monkeypatch):
    """10,000 runs: the table holds a page, the next page comes from memory at its end, and a sort
    or filter over all of them is quick."""
    from optlog.service.evidence import insert_run

    app = _app(ws, monkeypatch)  # its context has the test's database (SQLite or PostgreSQL)
    with app.ctx.db.write() as s:
        for i in range(10_000):
            insert_run(s, labels={"config": ("tp8", "tp4pp2")[i % 2], "concurrency": (64, 256, 512)[i % 3]},
                       metrics={"tput": float(i % 997)}, status="succeeded", source="recorded")

    async def go():
        async with app.run_test(size=(120, 40)) as pilot:
            assert await _until(pilot, lambda: app.loads > 0, 60)
            await pilot.press("3")
            first = _table(app).row_count
            await pilot.press("end")
            await pilot.pause(0.1)
            more = _table(app).row_count
            loads = app.loads
            app.runs.run_sort = ("m:tput", True)
            app.runs.render_runs()
            top = _ids(app)[0]
            return first, more, app.loads - loads, top

    first, more, reloads, top = asyncio.run(go())
    assert first == 200 and more == 400
    assert top == 997  # the largest tput (996, first at i = 996: run 997), lowest id first
    # "quick" is the bench's claim (about 0.1 s on an idle machine), not this test's: a time limit here
    # failed at 1.8 s on a busy CI box. What is checked: the sort covered all 10,000 runs (the top one is
    # the global best, not the first page's), from memory (nothing re-read from the database for it).
    assert reloads == 0


def test_pareto_view_of_a_serving_sweep(ws, monkeypatch):
    """`F` (issue 19.3): the shown runs as output tok/s per user against per GPU, and the front."""
    # (config, concurrency, gpus, output_throughput): per user = tput / concurrency, per GPU = tput / gpus
    sweep = [("tp8", 1, 8, 160), ("tp8", 64, 8, 4000), ("tp8", 256, 8, 6400),
             ("tp4", 64, 4, 1600),   # 25 /user, 400 /GPU: beaten by tp8 at 256 (25 /user, 800 /GPU)
             ("tp4", 16, 4, 1200)]   # 75 /user, 300 /GPU: on the front (best per user after c=1)
    for cfg, conc, gpus, tput in sweep:
        ws.cli("run", "record", f"--label=config={cfg}", f"--label=concurrency={conc}", f"--label=gpus={gpus}",
               f"--metric=output_throughput={tput}")
    app = _app(ws, monkeypatch)

    async def go():
        async with app.run_test(size=(160, 48), notifications=True) as pilot:
            assert await _until(pilot, lambda: app.loads > 0)
            await pilot.press("3")
            await pilot.pause(0.2)
            await pilot.press("F")
            assert await _until(pilot, lambda: "Pareto front" in _rendered(app, "#run-text"), 5)
            shown = app.query_one("#tel-plot").has_class("shown")
            text = _rendered(app, "#run-text")
            await pilot.press("slash")
            await pilot.pause(0.2)
            return text, shown

    text, shown = asyncio.run(go())
    assert shown and "Pareto front of 5 shown runs" in text, text
    front = [int(line.split()[1]) for line in text.splitlines() if line.strip().startswith("run ")]
    assert front == [1, 5, 2, 3], text  # by per-GPU throughput: 20, 300, 500, 800; run 4 is dominated
    assert "config=tp4 concurrency=16 gpus=4" in text or "concurrency=16" in text
