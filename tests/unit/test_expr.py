"""The prediction language and --where conditions (pure, no I/O)."""

from __future__ import annotations

import math

import pytest

from optlog.core import expr as E

CEIL = {"peak_tflops": 989.0, "mem_bw_gbps": 4800.0}


@pytest.mark.parametrize("text", [
    "a > b", "a >= b * 1.1", "a / b in [0.3, 0.6]", "a < 0.05 * peak_tflops",
    "a.tensor_active < 20 and a.gpu_util > 90", "not (a <= b)", "(a - b) / b > 0.1", "a > b or a.x < -1",
    "b.raw.total > 1e3", "a / b in [0.3, 0.6] and a > 100",
])
def test_every_form_of_the_design_parses(text):
    node = E.parse_expect(text, CEIL)
    assert E.atoms(node)


def test_tree_shapes():
    n = E.parse_expect("a.tensor_active < 20 and a.gpu_util > 90", CEIL)
    assert isinstance(n, E.And) and len(n.items) == 2
    assert [r.metric for r in E.refs(n)] == ["tensor_active", "gpu_util"]
    n = E.parse_expect("a < 0.05 * peak_tflops", CEIL)
    assert isinstance(n, E.Cmp) and E.const_value(n.right, CEIL) == pytest.approx(49.45)
    n = E.parse_expect("b.raw.total > 3", CEIL)
    assert E.refs(n)[0].group == "b" and E.refs(n)[0].metric == "raw.total"


@pytest.mark.parametrize("text,col,words", [
    ("a >> b", 3, "only + - * /"),
    ("a > b and", 10, "ends too early"),
    ("a == b", 3, "`==` is not allowed"),
    ("a < 0.05 * peak_tflop", 12, "unknown name 'peak_tflop'"),
    ("a < b < c", 9, "chained"),
    ("a / b in [0.6, 0.3]", 10, "empty range"),
    ("__import__('os') > a", 1, "not allowed"),
    ("a.x > b; 1", 8, "syntax"),
    ("a ** 2 > b", 3, "only + - * /"),
    ("a(b) > 1", 1, "not allowed"),
    ("x.y > 3", 1, "unknown group 'x'"),
    ("peak_tflops > 3", 1, "must mention group a or b"),
    ("a > b\n", 6, "one line"),
    ("", 1, "empty"),
    ("a / b in [b, 1]", 11, "bounds"),
    ("a", 1, "expected a comparison"),
])
def test_malformed_expressions_name_the_column(text, col, words):
    with pytest.raises(E.ExprError) as ei:
        E.parse_expect(text, CEIL)
    assert ei.value.column == col, ei.value.pretty()
    assert words in ei.value.message
    assert "^" in ei.value.pretty()


def test_no_ceiling_check_when_none_given():
    assert E.parse_expect("a < 0.5 * anything", None)


def test_evaluation_never_uses_python_eval():
    n = E.parse_expect("(a - b) / b > 0.1", CEIL)
    vals = {"a": 12.0, "b": 10.0}
    assert E.num_eval(n.left, lambda r: vals[r.name]) == pytest.approx(0.2)
    assert E.num_eval(E.parse_expect("a / b > 1", CEIL).left, lambda r: {"a": 1.0, "b": 0.0}[r.name]) == math.inf


@pytest.mark.parametrize("text,kind,region", [
    ("a > b", "ratio", (1.0, math.inf)),
    ("a >= b * 1.1", "ratio", (1.1, math.inf)),
    ("b > a", "ratio", (-math.inf, 1.0)),  # oriented a over b: a/b < 1
    ("a * 2 < b", "ratio", (-math.inf, 0.5)),
    ("a / b in [0.3, 0.6]", "ratio", (0.3, 0.6)),
    ("a / b > 0.5", "ratio", (0.5, math.inf)),
    ("0.5 < a / b", "ratio", (0.5, math.inf)),
    ("a / b in [1.6, inf]", "ratio", (1.6, math.inf)),
    ("a - b > 100", "diff", (100, math.inf)),
    ("a > b + 100", "diff", (100, math.inf)),
    ("a.tensor_active < 20", "value", (-math.inf, 20)),
    ("a < 0.5 * peak_tflops", "value", (-math.inf, 494.5)),
    ("k(input_len) in [0.9, 1.1]", "fit", (0.9, 1.1)),
    ("0.3 > slope(input_len, a.ttft)", "fit", (-math.inf, 0.3)),
    ("(a - b) / b > 0.1", None, None),
])
def test_claims(text, kind, region):
    """Every comparison reduces to the quantity it tests and the region it claims (DESIGN §5)."""
    c = E.claim(E.atoms(E.parse_expect(text, CEIL))[0], CEIL)
    assert (c.kind, (c.region.lo, c.region.hi)) == (kind, pytest.approx(region)) if kind else c is None


def test_fits_stand_alone_and_take_a_label():
    for bad in ("k(input_len) * 2 < 1", "k(input_len) < a", "k() < 1", "k(a) < 1", "fit(x) < 1", "k(x, peak) < 1"):
        with pytest.raises(E.ExprError):
            E.parse_expect(bad, CEIL)
    assert E.unparse(E.parse_expect("k(input_len, a.ttft) < 0.3", CEIL)) == "k(input_len, a.ttft) < 0.3"


def test_region_overlap():
    R = E.Region
    assert E.regions_overlap(R(0.3, 0.6), R(0.25, 0.55))
    assert not E.regions_overlap(R(1.0, math.inf), R(0.3, 0.6))
    assert not E.regions_overlap(R(0.0, 1.0), R(1.0, math.inf))  # touching is not overlapping


def test_where_conditions():
    c = E.parse_where("m <= 64 and dataset != sharegpt")
    assert E.where_match(c, {"m": "64", "dataset": "random"})
    assert not E.where_match(c, {"m": 128, "dataset": "random"})
    assert not E.where_match(c, {"m": 8, "dataset": "sharegpt"})
    assert not E.where_match(c, {"dataset": "random"})  # a run without the label does not match
    assert sorted(E.where_labels(c)) == ["dataset", "m"]
    assert E.where_match(E.parse_where("tp in [4, 8]"), {"tp": "8"})
    assert E.where_match(E.parse_where("not tp in [4, 8]"), {"tp": 2})
    assert E.where_match(E.parse_where('dataset == "share-gpt"'), {"dataset": "share-gpt"})
    assert E.where_match(E.parse_where("concurrency > 256"), {"concurrency": 1024})  # numeric, not text order
    for bad, col in (("concurrency <= ", 15), ("x", 1), ("1 < x", 1), ("a < b < c", 9)):
        with pytest.raises(E.ExprError) as ei:
            E.parse_where(bad)
        assert ei.value.column == col
