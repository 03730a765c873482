"""The agent's face pages exactly (issue 31 item 2): with its byte bound cutting a page of runs,
following `next_offset` still shows each of forty runs once; `run_show` never says it cut nothing."""

from __future__ import annotations

from tests._face import face, ok
from tests._verdicts import seed_runs


def test_run_list_pages_through_every_run_once_under_the_byte_bound(ws, monkeypatch):
    # labels and metrics big enough that ten runs do not fit the bound
    seed_runs(ws, [({"config": f"c{i}", **{f"knob_{k}": "v" * 20 for k in range(12)}},
                    {f"metric_{k}": float(i + k) for k in range(12)}) for i in range(40)])
    with face(ws, monkeypatch) as call:
        seen: list[int] = []
        args: dict = {}
        cut_once = False
        for _ in range(45):
            doc = ok(call("run_list", args))
            seen += [r["id"] for r in doc["runs"]]
            cut_once = cut_once or "truncated" in doc
            if doc.get("next_offset") is None:
                break
            args = {"offset": doc["next_offset"]}
        assert cut_once  # the bound did cut pages
        assert sorted(seen) == list(range(1, 41)) and len(seen) == 40
        shown = ok(call("run_show", {"id": "4"}))
        assert "truncated" not in shown or shown["truncated"]["cut"], shown
