"""The report's Findings, "What was measured" (issue 44): each line gives the absolute numbers of
its levels (the key metric's median at each, with its unit), never "→ evidence for X" about runs that
falsified X; and the "as measured" table says why its medians may differ from the verdict's figure."""

from __future__ import annotations

from tests.integration.test_demo_branches import _demo


def test_what_was_measured_gives_numbers_and_never_evidence_for_a_falsified_story(ws, monkeypatch):
    out, _ = _demo(ws, monkeypatch, "does not pay")  # 1 slot ~13,200 tok/s, 4 slots ~13,900: memory-bound falsified
    rep = out["report"]
    text = ((ws.root / rep) if not str(rep).startswith("/") else __import__("pathlib").Path(rep)).read_text()
    sec = text.split("**What was measured**", 1)[1].split("**What was decided**", 1)[0]
    assert "evidence for" not in sec, sec
    assert "13,200 tok/s at parallel=1" in sec and "13,900 tok/s at parallel=4" in sec, sec
    assert "output\\_throughput (median)" in sec, sec
    assert "evidence for" not in text  # the timeline neither
    assert "not from these medians" in text


def test_a_launch_for_a_falsified_hypothesis_says_so():
    """Runs launched for memory-bound that falsified it: the line names it with its status now."""
    from optlog.core.findings import measured_line

    runs = [{"id": i, "launch_id": 1, "status": "succeeded", "hypothesis": "memory-bound", "host": "vm",
             "labels": {"parallel": par, "concurrency": 4}, "metrics": {"output_throughput": v, "mean_tpot_ms": 9.0}}
            for i, (par, v) in enumerate([(1, 13_200.0), (1, 13_900.0), (4, 13_900.0), (4, 14_400.0)], 1)]
    line = measured_line(runs, {}, {}, {"memory-bound": "falsified"}, {"memory-bound": ["output_throughput"]})
    assert "evidence for" not in line
    assert line.endswith("→ run for memory-bound (now falsified)"), line
    assert "output_throughput (median): 13,550 tok/s at parallel=1, 14,150 tok/s at parallel=4" in line, line
