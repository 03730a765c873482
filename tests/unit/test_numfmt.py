"""One definition per human number format (issue 18.4): every variant lives in `optlog.core.numfmt`,
and its output is pinned here. The record's formats (verdict and diagnosis reasons, plot labels)
are committed in hypothesis files and reports/: a change to them shows up here first, and would
rewrite history."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from optlog.core import numfmt as N

VALUES = [0.0, 0.004567, 0.0123, 0.5, 1.0, 3.14159, 12.345, 99.96, 123.456, 1234.5, 98765.4, -0.5, -1234.5]


def test_the_table_format() -> None:
    assert [N.fmt_num(v) for v in VALUES] == [
        "0", "0.00457", "0.0123", "0.5", "1", "3.14", "12.3", "100.0", "123.5", "1,234", "98,765", "-0.5", "-1,234"]
    assert (N.fmt_num(None), N.fmt_num(math.nan), N.fmt_num(7), N.fmt_num("x")) == ("–", "nan", "7", "x")


def test_the_markdown_value_format() -> None:
    assert [N.fmt_value(v) for v in (3, 1500, 0.25, 2.5, 12.5, 250.4, True, None, {"a": 1.0}, [1, 2])] == [
        "3", "1,500", "0.25", "2.5", "12.5", "250", "yes", "–", "a=1", "1, 2"]


def test_ratios_scores_percentages_and_written_numbers() -> None:
    assert (N.fmt_ratio(1.23456), N.fmt_ratio(1.23456, 2), N.fmt_ratio(None), N.fmt_ratio(math.inf)) == \
        ("1.235", "1.23", "–", "–")
    assert (N.fmt_score(4.8333), N.fmt_score(0)) == ("4.83", "0.00")
    assert (N.fmt_pct(12.5), N.fmt_pct(-3), N.fmt_pct(None)) == ("12.5%", "-3%", "–")
    assert (N.fmt_gain(20, 60), N.fmt_gain(5, 5)) == ("20–60%", "5%")
    assert (N.fmt_written(0.5), N.fmt_written(300.0), N.fmt_written(1.2)) == ("0.5", "300", "1.2")
    assert (N.fmt_signed(12.5), N.fmt_signed(-3.0), N.fmt_signed(74.96, 3), N.fmt_signed(0.0)) == ("+12.5", "-3", "+75", "+0")
    assert (N.fmt_count(999), N.fmt_count(1_048_576), N.fmt_count(1000.0)) == ("999", "1,048,576", "1,000")
    assert (N.fmt_seconds(12.345), N.fmt_seconds(0)) == ("12.3s", "0.0s")
    assert [N.fmt_duration(x) for x in (44.6, 210, 8640)] == ["45s", "3.5 min", "2.4 h"]


def test_verdict_texts_read_as_the_tables_with_units() -> None:
    """Issues 43/44: an estimate and its interval in a verdict's text read as in the report's tables
    (thousands separated, rounded, never scientific notation for a measured figure), with the unit."""
    assert [N.fmt_verdict(v) for v in VALUES] == [
        "0.00", "0.00457", "0.01", "0.50", "1.00", "3.14", "12.3", "100.0", "123", "1,234", "98,765", "-0.50", "-1,234"]
    assert N.fmt_verdict(None) == "–"
    assert N.fmt_interval(0.91234, 1.0567) == "[0.91, 1.06]"
    assert N.fmt_interval(15770.4, 17460.2, "tok/s") == "[15,770, 17,460] tok/s"
    assert (N.fmt_amount(16420.3, "tok/s"), N.fmt_amount(0.4707), N.fmt_amount(None, "ms")) == ("16,420 tok/s", "0.47", "–")


def test_the_record_formats_are_frozen() -> None:
    """As committed in diagnosis reasons and reports/*.svg (a diagnosis figure from 1,000 is thousands
    separated since issue 44: one number style, the tables')."""
    assert (N.fmt_share(0.05), N.fmt_share(-0.123, signed=True), N.fmt_share(0.9734, places=1)) == ("5%", "-12%", "97.3%")
    assert (N.fmt_whole(87.4), N.fmt_whole(2.6, signed=True)) == ("87", "+3")
    assert [N.fmt_diagnosis(v) for v in VALUES] == [
        "0", "0.00457", "0.0123", "0.5", "1.00", "3.14", "12.35", "99.96", "123", "1,234", "98,765", "-0.5", "-1,234"]
    assert [N.fmt_axis(v) for v in VALUES] == [
        "0", "0.00457", "0.0123", "0.5", "1", "3.14", "12.3", "100", "123", "1,234", "98,765", "-0.5", "-1,234"]
    assert [N.fmt_p(v) for v in (0.034, 0.000272, 3.14e-7, 1.0, None)] == [
        "p=0.034", "p=0.00027", "p=3.1e-07", "p=1", "p=–"]


def test_a_p_value_reads_the_same_in_a_verdict_and_in_the_report() -> None:
    """The same three repeats a side, judged by a prediction (its reason) and by a tune study's
    re-measure (the report's best against the runner-up): one p, one spelling (the report used to
    write `p < 0.001` where the verdict wrote `p=0.00027`)."""
    from optlog.core import tune as T
    from optlog.core import verdict as V
    from optlog.core.hypothesis import Prediction
    from optlog.render import report as R

    best, other = [110.0, 111.0, 109.0], [100.0, 101.0, 99.0]
    ev = V.Evidence([V.RunRow(i, {"config": c, "repeat": i}, {"tput": v})
                     for i, (c, v) in enumerate([*(("x", v) for v in best), *(("y", v) for v in other)], 1)])
    pred = Prediction(id="h.p1", expect="a > b", metric="tput", a={"config": "x"}, b={"config": "y"})
    level = V.evaluate([pred], ev, {})["h.p1"]["levels"][0]
    sep = {**T.separation(best, other), "runner_up": 2}
    study = {"study": "s", "objectives": ["tput"], "directions": ["maximize"], "best": [],
             "trials": [{"number": 1, "params": {}, "values": [110.0], "state": "complete", "feasible": True, "run": 1}],
             "remeasure": {"current": True, "rounds": 3, "separation": sep,
                           "trials": {"1": {"first": [110.0], "values": [110.0], "shrink_pct": [0.0], "n": 3}}}}
    text = R.render({"docs": {}, "runs": [], "notes": [], "plans": [], "todos": [], "name": "x", "studies": [study]}, {})
    shown = N.fmt_p(sep["p"])
    # a verdict states an interval against the claimed region, no p (DESIGN §5, engine v3); the tune
    # report's p keeps the one spelling fmt_p gives it
    assert level["method"] == "welch-log" and level["p"] is None
    assert "CI [" in level["reason"] and "p=" not in level["reason"], level["reason"]
    assert shown == "p=0.00027" and f"welch-log {shown}, told apart." in text, text


ROOT = Path(__file__).resolve().parents[2]
# The formatter helpers that used to live beside their callers, each a copy that disagreed.
FORMERLY_DUPLICATED = {"optlog/core/verdict.py": "_f", "optlog/core/diagnosis.py": "_fmt",
                       "optlog/render/plots.py": "_num", "optlog/telemetry/summary.py": "_f",
                       "optlog/core/plans.py": "fmt_ratio"}


@pytest.mark.parametrize("rel,name", sorted(FORMERLY_DUPLICATED.items()))
def test_no_module_keeps_its_own_number_formatter(rel: str, name: str) -> None:
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    assert name not in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_axis_ticks_are_round_and_read_as_the_tables():
    """A plot's ticks (issue 44): round positions covering the values, labelled as the tables write them."""
    assert N.axis_ticks([13859.9, 16020.7]) == (13000, 17000, [13000, 14000, 15000, 16000, 17000],
                                                ["13,000", "14,000", "15,000", "16,000", "17,000"])
    lo, hi, _, labels = N.axis_ticks([0.977, 1.255])
    assert (lo, hi, labels) == (0.9, 1.3, ["0.9", "1", "1.1", "1.2", "1.3"])
    assert N.axis_ticks([0, 34.7])[3] == ["0", "10", "20", "30", "40"]
    assert N.axis_ticks([5, 5])[3] == ["4.5", "5", "5.5"]  # one value: an axis around it
    assert N.axis_ticks([float("nan"), 2.0, float("inf"), 4.0])[3] == ["2", "2.5", "3", "3.5", "4"]
    assert N.axis_ticks([1000, 1000.3])[3] == ["1,000"]  # labels the style cannot tell apart: one
