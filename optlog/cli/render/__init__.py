"""The CLI's human texts: how a verb's document reads for a person (without --json).

A verb returns data (`optlog.api`); its text is the CLI face's. Each module here renders the verbs
of the API module of the same name (`optlog.api.todos` → `optlog.cli.render.todos`) in a `HUMAN`
table: the verb's path ("todo list") → a fixed text or a pure function of the document. A verb
with no entry prints its document as JSON. Imported only when its verb is called, as the API
module is; neither the TUI nor the MCP face imports any of it (tests/architecture/test_faces.py).
"""

from __future__ import annotations

import importlib
from typing import Any

from optlog.api import verb as V

# a document rendered for a person: a fixed text, a function of the document, or None (JSON)
Human = Any


def human(v: V.Verb) -> Human:
    """The human rendering of a verb's document: its entry in the render module of the verb's API
    module, or None (the document as JSON)."""
    mod = __name__ + "." + v.fn.__module__.rsplit(".", 1)[-1]
    try:
        table = importlib.import_module(mod).HUMAN
    except ModuleNotFoundError as e:
        if e.name != mod:
            raise
        return None
    return table.get(" ".join(v.path))
