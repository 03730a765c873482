"""The one service layer: every verb the CLI, the TUI and the MCP server offer lives here.

Faces parse input and print; they call these functions with a `Ctx` and get plain data back.
"""

from optlog.service.context import Ctx

__all__ = ["Ctx"]
