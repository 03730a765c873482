"""Pre-registration has three states (issue 44): pre-registered (no run its groups select existed),
**baseline known** (some of its groups had runs, but its outcome could not be computed then: the
common "new variant against an already-measured baseline"), and post-hoc (its outcome could be
computed when it was written). The middle state is its own, weaker, visible mark: said in the JSON
(`preregistration`, the mark's `state`), the verdict's line, the CLI text, the report; and a
hypothesis's status does not "rest on post-hoc" predictions because of it."""

from __future__ import annotations

import yaml

from tests._face import face, ok
from tests._verdicts import seed_runs

TTT = "total_token_throughput"
SEL = {"metric": TTT, "a": {"config": "tp4pp2"}, "b": {"config": "tp8"}, "per": "concurrency"}


def _seed(ws, configs):
    vals = {"tp8": [700, 1867, 2800], "tp4pp2": [213, 727, 1318]}
    rows = [({"config": cfg, "concurrency": c}, {TTT: vals[cfg][i]})
            for i, c in enumerate((64, 256, 512)) for cfg in configs]
    return seed_runs(ws, rows)


def test_new_variant_against_a_measured_baseline_is_baseline_known_not_post_hoc(ws, monkeypatch):
    base = _seed(ws, ("tp8",))  # the baseline is measured; the variant has no run
    with face(ws, monkeypatch) as call:
        ok(call("hypothesis_add", {"title": "Compute-bound", "id": "compute-bound"}))
        p = ok(call("prediction_add", {"hypothesis": "compute-bound", "expect": "a / b in [0.2, 0.6]", **SEL,
                                       "detail": True}))
        assert p["preregistration"] == "baseline-known"
        assert p["post_hoc"]["state"] == "baseline-known" and p["post_hoc"]["runs"] == base
        mark = yaml.safe_load((ws.root / "hypotheses" / "compute-bound.yaml").read_text())["predictions"][0]["post_hoc"]
        assert mark["state"] == "baseline-known"  # committed: a clone keeps it
        _seed(ws, ("tp4pp2",))
        r = ok(call("verdict", {"detail": True}))["results"][0]
        assert r["status"] == "confirmed"
        assert r["post_hoc"] == []  # the status does not rest on a post-hoc prediction
        pr = r["predictions"][0]
        assert pr["post_hoc"]["state"] == "baseline-known"
        span = f"{base[0]}–{base[-1]}"
        assert pr["explanation"].startswith(f"confirmed, baseline known: written after runs {span}; "), pr["explanation"]
        assert "post-hoc" not in pr["explanation"]
        # a prediction whose outcome could be computed when written is post-hoc, as before
        ok(call("hypothesis_add", {"title": "Late", "id": "late"}))
        late = ok(call("prediction_add", {"hypothesis": "late", "expect": "a < b", **SEL, "detail": True}))
        assert late["preregistration"] == "post-hoc" and "state" not in late["post_hoc"]
        ok(call("hypothesis_add", {"title": "Early", "id": "early"}))
        early = ok(call("prediction_add", {"hypothesis": "early", "expect": "a < b", "metric": TTT,
                                           "a": {"config": "x"}, "b": {"config": "y"}, "detail": True}))
        assert early["preregistration"] == "pre-registered" and early["post_hoc"] is None
        ok(call("verdict", {}))
        st = ok(call("status", {}))
        opened = {h["id"]: h for h in st["hypotheses"]["open"]}
        assert opened["early"]["predictions"] == [{"id": "early.p1", "status": "untested"}]
    v = ws.cli("verdict", "--all").out
    assert f"compute-bound.p1 confirmed, baseline known: written after runs {span}; " in v
    assert "resting on post-hoc prediction compute-bound.p1" not in v
    shown = ws.cli("predict", "list", "compute-bound").out
    assert "baseline known" in shown and "post-hoc" not in shown


def test_report_says_baseline_known(ws, monkeypatch):
    from optlog.service import report
    from optlog.service.context import Ctx
    from tests._face import use_env

    _seed(ws, ("tp8",))
    use_env(ws, monkeypatch)
    with face(ws, monkeypatch) as call:
        ok(call("hypothesis_add", {"title": "Compute-bound", "id": "compute-bound"}))
        ok(call("prediction_add", {"hypothesis": "compute-bound", "expect": "a / b in [0.2, 0.6]", **SEL}))
        _seed(ws, ("tp4pp2",))
        ok(call("verdict", {}))
    text, _ = report.build(Ctx.find(ws.root), ws.root / "reports" / "r.md", draw=False)
    assert "confirmed, baseline known: written after runs 1–3" in text
    assert "post-hoc" not in text
