"""The pre-registration vocabulary (DESIGN §5, issues 28 and 44): a prediction's `post_hoc` mark
read as a state, said in the words every face uses. Standard library only: `status` reads it on its
first read after a change (issue 47) without `core.posthoc`'s expression machinery, which
re-exports all of it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NOTE = "post-hoc"

# The pre-registration states (issue 44), the one vocabulary every face says them with. A mark's
# `state` is absent for post-hoc (marks written before the middle state existed are post-hoc) and
# "baseline-known" for a prediction some of whose groups had runs when it was written but whose
# outcome could not be computed then: the common "new variant against a measured baseline". It is
# weaker than pre-registered (the baseline's numbers were seen) and not post-hoc (the claim could
# not have been fitted to its outcome), and a hypothesis's status does not rest on post-hoc
# predictions because of it.
PRE_REGISTERED = "pre-registered"
BASELINE_KNOWN = "baseline-known"
POST_HOC = "post-hoc"
STATES = (PRE_REGISTERED, BASELINE_KNOWN, POST_HOC)
SAID = {PRE_REGISTERED: "pre-registered", BASELINE_KNOWN: "baseline known", POST_HOC: NOTE}


def state(mark: Any) -> str:
    """A mark's pre-registration state: pre-registered (no mark), baseline-known or post-hoc."""
    if not mark:
        return PRE_REGISTERED
    return BASELINE_KNOWN if mark_field(mark, "state") == BASELINE_KNOWN else POST_HOC


def is_post_hoc(mark: Any) -> bool:
    """Written when its outcome could be computed (the mark that qualifies a hypothesis's status)."""
    return state(mark) == POST_HOC


def mark_field(mark: Any, key: str) -> Any:
    """A field of a mark: the model's attribute or its JSON dump's key."""
    return mark.get(key) if isinstance(mark, Mapping) else getattr(mark, key, None)
