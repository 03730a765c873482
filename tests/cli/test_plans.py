"""Plans: ranking that follows hypothesis statuses, rendered markdown checked token by token,
determinism and git, hostile text, and a fresh clone rebuilding the records from front matter."""

from __future__ import annotations

import random
import subprocess

import pytest

from optlog.core import plans as P
from optlog.render import md
from _plans import front, headings, plain, tables, tokens

PLAN_FILE = "glb5improvement/glb5improvement-{:02d}.md"


def two_hypotheses(ws) -> None:
    ws.cli("hyp", "add", "Communication-bound", "--id", "comm-bound")
    ws.cli("hyp", "add", "Compute-bound", "--id", "compute-bound", "--parent", "comm-bound")


# ---------------------------------------------------------------- pure ranking


def _rec(pid, lo, hi, eff, conf, needs=(), status="proposed", measured=None):
    return {"id": pid, "title": f"p{pid}", "gain_low": lo, "gain_high": hi, "effort": eff, "confidence": conf,
            "needs": list(needs), "status": status, "measured_gain": measured}


class _Doc:
    def __init__(self, status, verdicts=(), override=None, predictions=()):
        self._s, self.verdicts, self.override, self.predictions, self.title = status, list(verdicts), override, list(predictions), "t"

    def effective_status(self):
        return self._s


def _q(lo, hi):
    """The counted gain written out: a quarter of the way up the range on a ratio scale."""
    a, b = 1 + lo / 100, 1 + hi / 100
    return (a * (b / a) ** 0.25 - 1) * 100


def _a(x):
    return pytest.approx(x, abs=1e-5)  # scores are stored to 6 decimals


G1030 = _q(10, 30)  # 14.69...: a 10–30% range counts for less than its midpoint 20


def test_score_weights_ties_and_order():
    docs = {"c": _Doc("confirmed"), "o": _Doc("open"), "f": _Doc("falsified"), "i": _Doc("inconclusive")}
    recs = [
        _rec(1, 10, 30, "M", 0.6, ["c"]),        # G1030*0.6/3
        _rec(2, 10, 30, "M", 0.6, ["o"]),        # half of that
        _rec(3, 10, 30, "M", 0.6, ["c", "f", "o"]),  # falsified wins: a tenth
        _rec(4, 10, 30, "M", 0.6),               # no needs → 1: ties with 1, id breaks it
        _rec(5, 0, 80, "L", 0.5, ["i"]),         # _q(0, 80)*0.5/8*0.5
        _rec(6, 100, 100, "S", 1.0, status="done", measured=50),
        _rec(7, 10, 900, "M", 0.6),              # midpoint 455%, but a range spanning 9×: counted +91%
        _rec(8, 100, 150, "M", 0.6),             # midpoint 125% < 455%, counted +112%: ranks above 7
    ]
    views = P.evaluate(recs, docs)
    ranked = [(v["id"], v["rank"], v["score"]) for v in views]
    top = G1030 * 0.6 / 3
    assert ranked == [(8, 1, _a(_q(100, 150) * 0.2)), (7, 2, _a(_q(10, 900) * 0.2)),
                      (1, 3, _a(top)), (4, 4, _a(top)), (2, 5, _a(top / 2)),
                      (5, 6, _a(_q(0, 80) * 0.5 / 8 * 0.5)), (3, 7, _a(top / 10)),
                      (6, None, 100.0)]
    assert _q(10, 900) == pytest.approx(91.0, abs=0.1) and P.wide_range(10, 900) and not P.wide_range(10, 30)
    v3 = next(v for v in views if v["id"] == 3)
    assert v3["weight"] == 0.1 and v3["reason"].startswith("ranked below every plan whose needs hold or are open: rests on f, falsified")
    assert next(v for v in views if v["id"] == 2)["reason"] == "waits on o (open)"


def test_falsified_reason_cites_latest_verdict_ratios():
    verdicts = [
        {"at": "2026-02-17T10:00:00Z", "by": "x", "status": "inconclusive", "summary": "old", "predictions": []},
        {"at": "2026-02-18T12:00:00Z", "by": "engine", "status": "falsified", "summary": "TP4+PP2 slower at every level",
         "predictions": [{"id": "p1", "status": "falsified", "levels": [
             {"level": {"concurrency": 64}, "a": 213, "b": 700, "ratio": 213 / 700, "outcome": "fails"},
             {"level": {"concurrency": 512}, "a": 1318, "b": 2800, "ratio": 1318 / 2800, "outcome": "fails"}]}]},
    ]
    doc = _Doc("falsified", verdicts, predictions=[{"id": "p1", "a": {"config": "TP4+PP2"}, "b": {"config": "TP8"}}])
    info = P.need_info("comm-bound", doc)
    assert info["reason"] == ("rests on comm-bound, falsified 2026-02-18: TP4+PP2 0.30–0.47× TP8; "
                              "TP4+PP2 slower at every level")
    assert P.need_info("gone", None)["status"] == "missing"


@pytest.mark.parametrize("text,expect", [("10-30%", (10, 30)), ("10–30", (10, 30)), ("15%", (15, 15)),
                                         ("-5-10%", (-5, 10)), (" 2.5 .. 7.5 % ", (2.5, 7.5))])
def test_parse_gain(text, expect):
    assert P.parse_gain(text) == expect


def test_calibration():
    cal = P.calibration([_rec(1, 10, 30, "S", 1, status="done", measured=28),
                         _rec(2, 10, 40, "M", 1, status="dropped", measured=-50), _rec(3, 1, 2, "S", 1)])
    assert cal["n"] == 2 and cal["inside"] == 1 and cal["fraction_inside"] == 0.5
    assert cal["mean_ratio"] == pytest.approx((28 / 20 + -50 / 25) / 2)


# ---------------------------------------------------------------- CLI: add, list, set


def test_ranking_follows_hypothesis_status(ws):
    two_hypotheses(ws)
    a = ws.j("plan", "add", "MSCCLPP allreduce", "--gain", "10-30%", "--effort", "M", "--confidence", "0.5",
             "--needs", "comm-bound")
    b = ws.j("plan", "add", "Expert parallelism", "--gain", "10-30%", "--effort", "M", "--confidence", "0.5",
             "--needs", "compute-bound")
    assert (a["id"], b["id"]) == (1, 2)
    ranks = {p["id"]: (p["rank"], p["score"]) for p in ws.j("plan", "list")["plans"]}
    assert ranks == {1: (1, _a(G1030 / 12)), 2: (2, _a(G1030 / 12))}  # tie → older first

    ws.cli("hyp", "set", "comm-bound", "--status", "falsified", "--why", "TP4+PP2 0.30-0.47x TP8")
    ws.cli("hyp", "set", "compute-bound", "--status", "confirmed", "--why", "GEMMs at 3% of peak")
    res = ws.j("plan", "list")["plans"]
    assert [p["id"] for p in res] == [2, 1]
    assert res[0]["score"] == _a(G1030 / 6) and res[0]["weight"] == 1
    assert res[1]["score"] == _a(G1030 / 60) and res[1]["weight"] == 0.1
    assert res[1]["reason"].startswith("ranked below every plan whose needs hold or are open: rests on comm-bound, falsified ") and "TP4+PP2 0.30-0.47x TP8" in res[1]["reason"]
    human = ws.cli("plan", "list").out
    assert "rests on comm-bound, falsified" in human

    ws.cli("hyp", "set", "comm-bound", "--status", "open", "--why", "re-opened")
    assert ws.j("plan", "show", "1")["weight"] == 0.5


def test_bad_input_writes_nothing(ws):
    two_hypotheses(ws)
    before = ws.commits()
    for args, field in [
        (["--gain", "30-10%", "--effort", "M", "--confidence", "0.5"], "--gain"),
        (["--gain", "lots", "--effort", "M", "--confidence", "0.5"], "--gain"),
        (["--gain", "10-30%", "--effort", "XL", "--confidence", "0.5"], "--effort"),
        (["--gain", "10-30%", "--effort", "M", "--confidence", "1.5"], "--confidence"),
        (["--gain", "10-30%", "--effort", "M", "--confidence", "0.5", "--needs", "nope"], "--needs"),
    ]:
        r = ws.cli("plan", "add", "X", *args, "--json", check=2)
        assert r.json["error"]["field"] == field, r.out
    assert ws.j("plan", "list")["plans"] == []
    ws.j("plan", "add", "Y", "--gain", "5%", "--effort", "s", "--confidence", "60%")
    for args in (["--status", "finished"], ["--measured-gain", "many"], []):
        ws.cli("plan", "set", "1", *args, check=2)
    ws.cli("plan", "set", "9", "--status", "done", check=2)
    p = ws.j("plan", "show", "1")
    assert p["status"] == "proposed" and p["history"] == [] and p["confidence"] == 0.6
    assert ws.commits() == before


def test_measured_gain_and_calibration(ws):
    ws.cli("plan", "add", "Server tuning", "--gain", "10-30%", "--effort", "S", "--confidence", "0.7")
    ws.cli("plan", "add", "TP4+PP2", "--gain", "10-40%", "--effort", "M", "--confidence", "0.6")
    ws.cli("plan", "set", "1", "--status", "done", "--measured-gain", "28%", "--why", "+28% after tuning")
    ws.cli("plan", "set", "2", "--status", "dropped", "--measured-gain", "-53", "--why", "0.47x")
    d = ws.j("plan", "list")
    assert [p["rank"] for p in d["plans"]] == [None, None]
    assert d["calibration"]["n"] == 2 and d["calibration"]["inside"] == 1
    assert d["calibration"]["plans"][0]["measured"] == 28
    shown = ws.j("plan", "show", "1")
    assert shown["measured_gain"] == 28 and shown["gain"] == [10, 30]
    assert shown["history"][0]["from"] == "proposed" and shown["history"][0]["to"] == "done"
    assert "1 of 2 measured plans fell inside" in ws.cli("plan", "list").out


# ---------------------------------------------------------------- render


def _seed_plans(ws):
    two_hypotheses(ws)
    ws.cli("plan", "add", "MSCCLPP allreduce", "--gain", "10-30%", "--effort", "M", "--confidence", "0.5",
           "--needs", "comm-bound", "--rationale", "Faster allreduce.", "--step", "build", "--step", "bench",
           "--risk", "little to gain", "--validation", "TP8 with and without")
    ws.cli("plan", "add", "Expert parallelism", "--gain", "20-60%", "--effort", "M", "--confidence", "0.5",
           "--needs", "compute-bound")
    ws.cli("plan", "add", "Piecewise CUDA graphs", "--gain", "5-15%", "--effort", "S", "--confidence", "0.6")


def test_render_tokens_front_matter_and_index(ws):
    _seed_plans(ws)
    ws.cli("hyp", "set", "comm-bound", "--status", "falsified", "--why", "TP4+PP2 0.30-0.47x TP8")
    r = ws.j("plan", "render")
    assert r["commit"] and sorted(r["changed"]) == sorted(r["files"])
    text = (ws.root / PLAN_FILE.format(1)).read_text()
    fm = front(text)
    assert fm["id"] == 1 and fm["rank"] == 3 and fm["status"] == "proposed"
    assert fm["needs"] == [{"id": "comm-bound", "expects": "confirmed", "status": "falsified"}]
    assert fm["gain"] == {"low": 10, "high": 30} and fm["effort"] == "M" and fm["confidence"] == 0.5
    assert fm["score"] == pytest.approx(G1030 * 0.5 / 3 * 0.1, abs=1e-6) and fm["measured_gain"] is None
    hs = headings(text)
    assert hs[0] == ("h1", "MSCCLPP allreduce")
    assert [h for t, h in hs if t == "h2"] == ["Rationale", "Evidence", "Steps", "Risks", "Validation"]
    assert ("h3", "comm-bound: Communication-bound") in hs
    t0 = tables(text)[0]
    assert t0[0][:3] == ["rank", "score", "gain"] and t0[1][0] == "3 of 3"
    # The index: one table, rows in rank order, links to the plan files.
    idx = (ws.root / "glb5improvement/README.md").read_text()
    rows = tables(idx)[0]
    assert [r[0] for r in rows[1:]] == ["1", "2", "3"]
    assert [r[1] for r in rows[1:]] == ["03 Piecewise CUDA graphs", "02 Expert parallelism", "01 MSCCLPP allreduce"]
    links = [c.attrs["href"] for t in tokens(idx) if t.type == "inline" for c in t.children if c.type == "link_open"]
    assert links == ["glb5improvement-03.md", "glb5improvement-02.md", "glb5improvement-01.md"]


def test_render_is_deterministic_and_commits_only_plan_files(ws):
    _seed_plans(ws)
    (ws.root / "scratch.txt").write_text("user's own work\n")
    ws.git("add", "scratch.txt")
    (ws.root / "hypotheses" / "notes.md").write_text("unstaged\n")
    before = ws.commits()
    ws.cli("plan", "render")
    first = {p: p.read_bytes() for p in sorted((ws.root / "glb5improvement").glob("*.md"))}
    assert ws.commits() == before + 1
    names = ws.git("show", "--name-only", "--format=", "HEAD").split()
    assert sorted(names) == sorted(f"glb5improvement/{p.name}" for p in first)
    assert "Optlog-Event: plan-render" in ws.git("log", "-1", "--format=%B")
    r = ws.j("plan", "render")
    assert r["commit"] is None and r["changed"] == []
    assert ws.commits() == before + 1
    assert {p: p.read_bytes() for p in sorted((ws.root / "glb5improvement").glob("*.md"))} == first
    assert "scratch.txt" in ws.git("diff", "--cached", "--name-only")  # the user's index untouched
    # A status change re-ranks: the next render commits again.
    ws.cli("hyp", "set", "compute-bound", "--status", "falsified", "--why", "no")
    r = ws.j("plan", "render")
    assert r["commit"] and "glb5improvement/glb5improvement-02.md" in r["changed"]
    assert front((ws.root / PLAN_FILE.format(2)).read_text())["needs"][0]["status"] == "falsified"


def test_render_never_overwrites_a_hand_edit_of_a_plan_file(ws):
    """A rendered plan file is rebuilt from the plan records; an edit made in the file itself (not
    committed) would be lost without a word. The render refuses and writes nothing instead."""
    _seed_plans(ws)
    ws.cli("plan", "render")
    f = ws.root / PLAN_FILE.format(2)
    edited = f.read_text() + "\nMy own measurement notes: 3 runs, +4 %.\n"
    f.write_text(edited)
    ws.cli("hyp", "set", "compute-bound", "--status", "falsified", "--why", "no")  # the render would change plan 2
    before = ws.commits()
    r = ws.cli("plan", "render", "--json", check=1)
    err = r.json["error"]
    assert err["code"] == "conflict" and err["file"] == "glb5improvement/glb5improvement-02.md"
    assert "optlog plan edit" in err["message"] and "git checkout" in err["message"]
    assert f.read_text() == edited and ws.commits() == before  # nothing written, nothing committed
    # a change that re-renders refuses before it changes the record, not after
    title = ws.j("plan", "show", "1")["title"]
    r = ws.cli("plan", "edit", "1", "--title", "A new title", "--json", check=1)
    assert r.json["error"]["code"] == "conflict" and ws.j("plan", "show", "1")["title"] == title
    assert ws.cli("plan", "rm", "1", "--why", "x", "--json", check=1).json["error"]["code"] == "conflict"
    assert ws.j("plan", "show", "1")["status"] != "removed" and ws.commits() == before
    ws.git("checkout", "--", PLAN_FILE.format(2))  # the user discards the edit: the render goes on
    assert "glb5improvement/glb5improvement-02.md" in ws.j("plan", "render")["changed"]


def test_report_never_overwrites_a_hand_edit(ws):
    _seed_plans(ws)
    first = ws.j("report", "--out", "reports/weekly.md")
    f = ws.root / first["file"]
    f.write_text(f.read_text() + "\nreader's remark\n")
    ws.cli("hyp", "set", "compute-bound", "--status", "falsified", "--why", "no")
    r = ws.cli("report", "--out", "reports/weekly.md", "--json", check=1)
    assert r.json["error"]["code"] == "conflict" and r.json["error"]["file"] == first["file"]
    assert f.read_text().endswith("reader's remark\n")


HOSTILE = ("Title | with pipes `code` ``double`` <script>alert(1)</script> &amp; *stars* _under_ [link](x) "
           "# not a heading\n- not a list\n1. nor this\n---\n> nor a quote ~~strike~~ \\ backslash ")


def test_hostile_text_stays_text(ws):
    long_title = (HOSTILE * 20)[:2000]
    rationale = "Para one | `x` <div>html</div>\n\n# H\n```\nfence\n```\n    indented\n| a | b |\n|---|---|\n<!-- c -->"
    ws.cli("plan", "add", long_title, "--gain", "1-2%", "--effort", "S", "--confidence", "1",
           "--rationale", rationale, "--step", "1. step | one", "--step", "`x`\n- y", "--risk", "<b>r</b>",
           "--validation", "---\nvalidate")
    ws.cli("plan", "render")
    text = (ws.root / PLAN_FILE.format(1)).read_text()
    toks = tokens(text)
    assert not [t for t in toks if t.type in ("html_block", "code_block", "fence", "blockquote_open", "hr")]
    assert not [c for t in toks if t.type == "inline" for c in t.children if c.type == "html_inline"
                and not c.content.startswith("<br")]
    hs = headings(text)
    assert hs[0] == ("h1", " ".join(long_title.split()))
    assert [h for t, h in hs if t == "h2"] == ["Rationale", "Evidence", "Steps", "Risks", "Validation"]
    assert len([h for h in hs if h[0] == "h1"]) == 1
    fm = front(text)
    assert fm["title"] == long_title.strip() and fm["rationale"] == rationale and fm["validation"] == "---\nvalidate"
    assert len(tables(text)) == 1  # the summary table only: the rationale's table is text
    items = [plain(toks[i + 2]) for i, t in enumerate(toks) if t.type == "list_item_open"]
    assert items == ["1. step | one", "`x` - y", "<b>r</b>"]
    idx = (ws.root / "glb5improvement/README.md").read_text()
    rows = tables(idx)[0]
    assert len(rows) == 2 and len(rows[1]) == 9 and rows[1][1] == "01 " + " ".join(long_title.split())


def test_escaping_round_trips_random_text():
    rng = random.Random(7)
    alphabet = "ab |`*_[]<>#&~\\!-+=.)(1\n:/\"' \t"
    p = md.parser()
    for _ in range(300):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        toks = p.parse(md.heading(2, s))
        assert [t.type for t in toks] == ["heading_open", "inline", "heading_close"], (s, md.heading(2, s))
        assert plain(toks[1]) == " ".join(s.split()) or not s.strip()
        row = md.table(["h"], [[s]])
        tbl = tables(row)
        assert len(tbl) == 1 and len(tbl[0]) == 2 and len(tbl[0][1]) == 1, (s, row)
        assert tbl[0][1][0] == "\n".join(ln.strip() for ln in s.replace("\r", "").split("\n")).rstrip("\n"), (s, row)
        body = md.paragraphs(s)
        kinds = {t.type for t in p.parse(body)}
        assert kinds <= {"paragraph_open", "inline", "paragraph_close"}, (s, body)
        code = md.code(s.replace("\n", " "))
        inl = p.parse(code)[1].children if code.strip() else []
        if s.strip():
            assert [c.type for c in inl] == ["code_inline"], (s, code)


def test_fresh_clone_rebuilds_plans_from_front_matter(ws, make_ws):
    _seed_plans(ws)
    ws.cli("plan", "set", "3", "--status", "done", "--measured-gain", "12", "--why", "graphs helped")
    ws.cli("hyp", "set", "comm-bound", "--status", "falsified", "--why", "slower")
    ws.cli("plan", "render")
    original = ws.j("plan", "list")
    clone = make_ws("clone", init=False)
    subprocess.run(["git", "clone", "-q", str(ws.root), str(clone.root)], check=True, env=clone.env)
    assert not (clone.root / ".optlog").exists()
    res = clone.cli("plan", "list", "--json")
    assert "rebuilt 3 plan records" in res.err
    assert res.json == original
    before = clone.commits()
    assert clone.j("plan", "render")["commit"] is None
    assert clone.commits() == before
    # Numbers continue after the files' numbers, never reused.
    assert clone.j("plan", "add", "Next", "--gain", "1-2%", "--effort", "S", "--confidence", "0.5")["id"] == 4


def test_plan_and_report_tools_give_the_cli_documents(ws, monkeypatch):
    """The MCP face calls the same bindings: each plan tool's document (and report's) is the CLI's
    --json document; a write's is the plan as `plan show --json` gives it right after."""
    from tests._face import face, ok

    two_hypotheses(ws)
    with face(ws, monkeypatch) as call:
        added = ok(call("plan_add", {"title": "MSCCLPP allreduce", "gain": "10-30%", "effort": "M", "confidence": "0.5",
                                     "needs": ["comm-bound"], "steps": ["build", "bench"], "detail": True}))
        assert added == ws.j("plan", "show", "1") and added["needs"] == ["comm-bound"]
        ws.cli("plan", "add", "Expert parallelism", "--gain", "20-60%", "--effort", "S", "--confidence", "0.6")
        assert ok(call("plan_edit", {"id": "1", "needs": ["compute-bound=falsified"], "why": "re-read"})) == \
            ws.j("plan", "show", "1")
        doc, err, code = call("plan_edit", {"id": "1", "needs": ["comm-bound"], "no_needs": True})
        assert err and code == 2 and doc["error"]["field"] == "no_needs"
        assert doc["error"]["message"] == "give needs or no_needs, not both"  # the tool's parameters (issue 35)
        assert ws.cli("plan", "edit", "1", "--needs", "comm-bound", "--no-needs", "--json", check=2).json["error"] \
            == {**doc["error"], "field": "--no-needs", "message": "give --needs or --no-needs, not both"}
        assert ok(call("plan_set", {"id": "2", "status": "in_progress", "detail": True})) == ws.j("plan", "show", "2")
        assert ok(call("plan_show", {"id": "2"})) == ws.j("plan", "show", "2")
        assert ok(call("plan_list", {"fields": "id,title,rank"})) == ws.j("plan", "list", "--fields", "id,title,rank")
        ws.cli("plan", "render")
        assert ok(call("plan_render", {"detail": True})) == ws.j("plan", "render")
        assert ok(call("plan_import", {})) == ws.j("plan", "import")
        rm = ok(call("plan_rm", {"id": "2", "why": "not worth it"}))
        assert rm["removed"] and rm["commit"] == ws.git("rev-parse", "HEAD").strip()
        assert not (ws.root / PLAN_FILE.format(2)).exists()
        assert [p["id"] for p in ws.j("plan", "list")["plans"]] == [1]
        rep = ok(call("report", {"out": "reports/r.md", "no_commit": True}))
        assert rep == ws.j("report", "--out", "reports/r.md", "--no-commit") and rep["commit"] is None
