"""Issue 42, item 4: one hostile number never blocks another hypothesis's verdict.

A run with a metric near 1e308 under a scaling prediction once made `verdict`, `verdict --all`
and `next` end in `internal error: OverflowError at core/scaling.py:91`, for every hypothesis of
the workspace. Through the real CLI: the hostile hypothesis is judged (its levels unclear, saying
why) and every other one as usual, by `verdict`, `verdict --all`, `next`, `status` and `report`."""

from __future__ import annotations

import json

from tests._verdicts import seed_runs

BIG = 1.7976931348623157e308


def _hostile_workspace(ws) -> None:
    rows = [({"g": "s", "x": x}, {"m": y}) for x, y in ((1, 1e308), (2, 1e308), (3, BIG), (4, -1e308))]
    rows += [({"g": "k", "x": x}, {"m": y}) for x, y in ((1, 5e-324), (2, BIG), (4, 1e308))]
    rows += [({"c": c, "repeat": i}, {"m": v}) for c, vals in ((1, [10, 11, 12]), (2, [5, 5.5, 6])) for i, v in enumerate(vals)]
    rows += [({"c": 3, "repeat": i}, {"m": v}) for i, v in enumerate([BIG, 1e308, -BIG, 5e-324, 0.0])]
    seed_runs(ws, rows)
    ws.cli("hyp", "add", "Grows with x", "--id", "big")
    ws.cli("predict", "big", "--expect", "slope(x) > 1", "--metric", "m", "--a", "g=s")
    ws.cli("predict", "big", "--expect", "k(x) in [0.9, 1.1]", "--metric", "m", "--a", "g=k")
    ws.cli("predict", "big", "--expect", "a > b", "--metric", "m", "--a", "c=3", "--b", "c=1")
    ws.cli("hyp", "add", "Flat in x", "--id", "flat", "--rival", "big")
    ws.cli("predict", "flat", "--expect", "k(x) < 0.3", "--metric", "m", "--a", "g=k")
    ws.cli("hyp", "add", "One beats two", "--id", "ok")
    ws.cli("predict", "ok", "--expect", "a > b", "--metric", "m", "--a", "c=1", "--b", "c=2")


def _no_internal_error(r) -> None:
    assert "internal error" not in r.err and "Traceback" not in r.err, r.err


def test_a_hostile_number_blocks_no_other_verdict(ws):
    _hostile_workspace(ws)
    r = ws.cli("verdict", "--all", "--json")
    _no_internal_error(r)
    res = {x["hypothesis"]: x for x in r.json["results"]}
    assert res["ok"]["auto_status"] == "confirmed", res["ok"]  # 11 vs 5.5: judged as if alone
    big = res["big"]
    assert big["auto_status"] in ("inconclusive", "falsified", "open"), big
    for p in big["predictions"]:
        for lv in p["levels"]:
            assert lv["outcome"] in ("holds", "fails", "unclear") and lv["reason"], lv
    reasons = " ".join(lv["reason"] for p in big["predictions"] for lv in p["levels"])
    assert "beyond what a double can compute with" in reasons, reasons
    json.dumps(r.json, allow_nan=False)  # no inf or NaN in the document
    for args in (("verdict", "big"), ("verdict", "ok"), ("next",), ("next", "big"), ("status",), ("report",)):
        for fmt in ((), ("--json",)):
            out = ws.cli(*args, *fmt)
            _no_internal_error(out)
            if fmt:
                json.loads(out.out)
    # the committed record holds no .inf or .nan either (YAML would read them back as floats)
    text = (ws.root / "hypotheses" / "big.yaml").read_text()
    assert ".inf" not in text and ".nan" not in text, text
