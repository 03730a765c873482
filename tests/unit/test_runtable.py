"""core.runtable: the runs table's columns, filter, sort and groups (pure; the TUI draws them)."""

from __future__ import annotations

import pytest

from optlog.core import runtable as RT
from optlog.core.expr import ExprError
from optlog.errors import BadInput


def _row(i, labels, metrics=None, **kw):
    return {"id": i, "status": kw.get("status", "succeeded"), "invalidated": kw.get("invalidated", False),
            "launch": kw.get("launch"), "hypothesis": kw.get("hypothesis"), "labels": labels, "metrics": metrics or {}}


ROWS = [
    _row(1, {"config": "tp8", "concurrency": 64, "repeat": 0, "model": "glm5"}, {"tput": 900.0}, launch=1),
    _row(2, {"config": "tp8", "concurrency": 512, "repeat": 1, "model": "glm5"}, {"tput": 1500.0}, launch=1),
    _row(3, {"config": "tp4pp2", "concurrency": 256, "repeat": 0, "model": "glm5", "loaded": "true"}, {"tput": 1200.0},
         launch=2, hypothesis="comm-bound"),
    _row(4, {"config": "tp4pp2", "concurrency": 64, "model": "glm5", "concurrent": "true"}, {}, invalidated=True,
         status="failed", hypothesis="comm-bound"),
]


def test_a_column_per_varying_label_and_per_chosen_metric():
    # model is the same everywhere; repeat tells repeats apart; loaded and concurrent are marks
    assert RT.columns(ROWS, ["tput"]) == ["id", "flags", "status", "m:tput", "l:concurrency", "l:config"]
    assert RT.columns(ROWS[:2], []) == ["id", "flags", "status", "l:concurrency"]
    assert [RT.flag_text(r) for r in ROWS] == ["", "", "≈", "✘⇄"]


@pytest.mark.parametrize("text, ids", [
    ("config=tp8", [1, 2]),  # the --a selector
    ("config=tp4pp2, concurrency=64", [4]),
    ("config=tp4pp2 concurrency=64", [4]),
    ("concurrency=64.0", [1, 4]),  # typed: 64 and 64.0 are one value
    ("concurrency >= 256", [2, 3]),  # the --where condition, numbers by value (512 > 256)
    ("concurrency >= 256 and config != tp8", [3]),
    ("config in [tp8, tp4pp2] and not concurrency == 64", [2, 3]),
    ("status == failed", [4]),  # the run's own fields, besides its labels
    ("launch == 1", [1, 2]),
    ('hypothesis == "comm-bound"', [3, 4]),  # quoted, as --where needs it
    ("id > 2", [3, 4]),
    ("nosuch=1", []),
    ("", [1, 2, 3, 4]),
])
def test_filter_speaks_the_cli_selector_syntax(text, ids):
    pred = RT.parse_filter(text)
    assert [r["id"] for r in ROWS if pred is None or pred(r)] == ids


@pytest.mark.parametrize("text, err", [("concurrency >> 3", ExprError), ("concurrency < 3 < 5", ExprError),
                                       ("9bad=1", BadInput), ("config=tp8 and", ExprError)])
def test_a_bad_filter_is_the_parsers_own_error(text, err):
    with pytest.raises(err):
        RT.parse_filter(text)


def test_sort_by_any_column_missing_values_last():
    ids = lambda rows: [r["id"] for r in rows]  # noqa: E731
    assert ids(RT.sort_rows(ROWS, "m:tput")) == [1, 3, 2, 4]
    assert ids(RT.sort_rows(ROWS, "m:tput", desc=True)) == [2, 3, 1, 4]  # no value: last either way
    assert ids(RT.sort_rows(ROWS, "l:concurrency")) == [1, 4, 3, 2]  # 64 < 256 < 512: numbers, not text
    assert ids(RT.sort_rows(ROWS, "l:config", desc=True)) == [1, 2, 3, 4]
    assert ids(RT.sort_rows(ROWS, "flags", desc=True)) == [4, 3, 1, 2]
    assert ids(RT.sort_rows(ROWS, "id", desc=True)) == [4, 3, 2, 1]


def test_groups_by_launch_newest_first_and_by_hypothesis():
    assert [(g, [r["id"] for r in rs]) for g, rs in RT.group_rows(ROWS, "launch")] == \
        [("L2", [3]), ("L1", [1, 2]), ("no launch", [4])]
    assert [(g, [r["id"] for r in rs]) for g, rs in RT.group_rows(ROWS, "hypothesis")] == \
        [("comm-bound", [3, 4]), ("no hypothesis", [1, 2])]
    assert RT.group_rows(ROWS, None) == [(None, ROWS)]


def test_pareto_view_keeps_the_runs_no_other_beats_on_both_rates():
    from optlog.core.report import pareto_view

    rows = [{"id": i, "labels": {"concurrency": c, "gpus": g}, "metrics": {"output_throughput": t}}
            for i, (c, g, t) in enumerate([(1, 8, 160), (64, 8, 4000), (64, 4, 1600), (16, 4, 1200)], 1)]
    rows.append({"id": 9, "labels": {"concurrency": 1}, "metrics": {"output_throughput": 10 ** 6}, "invalidated": True})
    rows.append({"id": 10, "labels": {}, "metrics": {"output_throughput": 5}})  # no concurrency: not a serving point
    pv = pareto_view(rows)
    assert [p["id"] for p in pv["points"]] == [1, 2, 3, 4]
    assert [(p["id"], p["per_user"], p["per_gpu"]) for p in pv["front"]] == [(1, 160, 20), (4, 75, 300), (2, 62.5, 500)]
    # TPOT, where recorded, is what a user sees: 1000 / median TPOT
    r = {"id": 1, "labels": {"concurrency": 8}, "metrics": {"output_throughput": 800, "median_tpot_ms": 20}}
    assert pareto_view([r])["points"][0]["per_user"] == 50


def test_no_constant_metric_column_before_a_label_that_varies():
    """Issue 48 item 5: at 80x24 the demo's all-0 cached_prompt_fraction (a chosen metric) stood
    before `parallel`, the label the comparison was about, and pushed it off the edge."""
    rows = [_row(i, {"parallel": p, "concurrency": 4}, {"output_throughput": t, "cached_prompt_fraction": 0.0})
            for i, (p, t) in enumerate([(1, 5.0), (4, 10.0), (1, 5.5)], 1)]
    cols = RT.columns(rows, ["output_throughput", "cached_prompt_fraction"])
    assert cols == ["id", "flags", "status", "m:output_throughput", "l:parallel", "m:cached_prompt_fraction"]
    assert RT.columns(rows[:1], ["output_throughput"]) == ["id", "flags", "status", "m:output_throughput"]
