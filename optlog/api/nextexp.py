"""`optlog next [ID]`: the experiment that would tell rival hypotheses apart (service.nextexp)."""

from __future__ import annotations

from typing import Annotated

from optlog.api.verb import Arg, Call, verb
from optlog.service import documents, nextexp


@verb("next")
def next_experiment(call: Call, *,
                    hid: Annotated[str | None, Arg(metavar="[ID]", help="Only the pairs of this hypothesis.")] = None,
                    ) -> documents.NextDoc:
    """The run that tells rivals apart. For each hypothesis with a rival or a pivot parent: the outcomes
    side by side, the untested levels where their predictions differ by more than the noise, and the
    best as runs/next-<hyp>.yaml (never launched; docs/next.md)."""
    return nextexp.analyse(call.ctx, hid)
