"""Paging is exact (issue 31 item 2): following `next_offset` visits every item once, even when the
byte bound of the agent's face (core.shape.fit) cuts the page; a note never says it cut nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from optlog.core.shape import fit, page, size


def _follow(items: list[dict], limit: int | None, max_bytes: int) -> list[int]:
    seen: list[int] = []
    offset: int | None = 0
    for _ in range(len(items) + 2):
        rows, facts = page(items, limit, offset or 0)
        doc = fit({"runs": rows, **facts, "warnings": []}, max_bytes, "ask for less")
        got = [r["id"] for r in doc["runs"]]
        assert got or not items, doc  # every page moves on
        if "truncated" in doc:
            assert doc["truncated"]["cut"], doc  # it says what it cut
        seen += got
        offset = doc["next_offset"]
        if offset is None:
            return seen
    raise AssertionError("next_offset never ended")


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(0, 900), max_size=45), limit=st.one_of(st.none(), st.integers(1, 20)),
       max_bytes=st.sampled_from([600, 1500, 4096]))
def test_following_next_offset_visits_every_item_once(sizes, limit, max_bytes):
    items = [{"id": i, "note": "x" * n} for i, n in enumerate(sizes)]
    assert _follow(items, limit, max_bytes) == list(range(len(items)))


def test_a_document_fit_cannot_shrink_is_returned_as_it_is():
    doc = {"id": "4", "labels": {f"k{i}": "v" * 30 for i in range(200)}}  # big, with nothing to cut
    assert fit(doc, 4096, "hint") == doc and "truncated" not in fit(doc, 4096, "hint")
    assert size(fit({"runs": [{"x": "y" * 500}] * 20}, 1000, "h")) <= 1000
