"""The typed documents the verbs return (`optlog.service.documents`), as the faces read them: the
MCP face derives its output schemas from these."""

from __future__ import annotations

from optlog.service.documents import (HypothesisBrief, HypothesisList, HypothesisShow, RunList, RunWait, StatusDoc,
                                      TodoList, VerdictDoc, Vocab)

__all__ = ["HypothesisBrief", "HypothesisList", "HypothesisShow", "RunList", "RunWait", "StatusDoc", "TodoList",
           "VerdictDoc", "Vocab"]
