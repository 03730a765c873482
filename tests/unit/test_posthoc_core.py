"""The post-hoc mark's words and record (core.posthoc): pure, so checked on plain data."""

from __future__ import annotations

from optlog.core import posthoc as PH

MARK = {"at": "2026-12-01T23:31:02.114Z", "runs": [1, 2, 3, 5, 7, 8], "run_uids": ["u1", "u2", "u3", "u5", "u7", "u8"]}


def test_ranges_and_words():
    assert PH.ranges([3, 1, 2, 5, 7, 8, 8]) == "1–3, 5, 7–8"
    assert PH.words(MARK) == "post-hoc: written after runs 1–3, 5, 7–8"
    assert PH.words({"runs": [4]}) == "post-hoc: written after run 4"
    assert PH.status_text("confirmed", MARK) == "confirmed, post-hoc: written after runs 1–3, 5, 7–8"
    assert PH.status_text("confirmed", None) == "confirmed"


def test_decorate_leads_the_line_once_and_keeps_the_callers_record():
    res = {"id": "h.p1", "status": "confirmed", "explanation": "confirmed: a/b = 0.47; expected a < b (v1)"}
    out = PH.decorate(res, MARK)
    assert out["explanation"] == "confirmed, post-hoc: written after runs 1–3, 5, 7–8; a/b = 0.47; expected a < b (v1)"
    assert out["post_hoc"] == {"at": MARK["at"], "runs": MARK["runs"]}  # the uids stay in the prediction
    assert "post_hoc" not in res  # a copy
    assert PH.decorate(out, MARK) is out  # a cached record that has it is left as it is
    # a mark that changed replaces the old words; none takes them away
    again = PH.decorate(out, {"at": "t", "runs": [9]})
    assert again["explanation"] == "confirmed, post-hoc: written after run 9; a/b = 0.47; expected a < b (v1)"
    assert PH.decorate(again, None)["explanation"] == res["explanation"]
    # an untested prediction carries the mark without a verdict line to qualify
    un = PH.decorate({"status": "untested", "explanation": "untested: no evidence"}, MARK)
    assert un["explanation"] == "untested: no evidence" and un["post_hoc"]["runs"] == MARK["runs"]


def test_what_a_hypothesis_status_rests_on():
    pre = {"id": "h.p1", "status": "falsified"}
    post_f = {"id": "h.p2", "status": "falsified", "post_hoc": MARK}
    post_c = {"id": "h.p3", "status": "confirmed", "post_hoc": MARK}
    assert PH.rests_on("falsified", [pre, post_f]) == []  # the pre-registered failure decides it alone
    assert PH.rests_on("falsified", [post_f, post_c]) == ["h.p2"]
    assert PH.rests_on("confirmed", [{"id": "h.p1", "status": "confirmed"}, post_c]) == ["h.p3"]
    assert PH.rests_on("inconclusive", [{"id": "x", "status": "inconclusive", "post_hoc": MARK}]) == ["x"]
    assert PH.rests_on("open", [post_c]) == []
    assert PH.hypothesis_words("confirmed", ["h.p3"]) == "confirmed, resting on post-hoc prediction h.p3"
    verdict = {"post_hoc": ["h.p2", "h.p3"], "predictions": [post_f, {**post_c, "post_hoc": {"runs": [9]}}]}
    assert PH.verdict_words(verdict) == "post-hoc: written after runs 1–3, 5, 7–9"
    assert PH.without_lead("confirmed, post-hoc: written after run 9; a/b = 1", "confirmed",
                           "post-hoc: written after run 9") == "confirmed: a/b = 1"
