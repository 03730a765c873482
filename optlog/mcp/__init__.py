"""The MCP face: every verb of the catalogue (`optlog.api`) as an MCP tool over stdio, for coding agents.

A face of its own beside the CLI and the TUI (issue 46), importing only `optlog.api` (an import
contract in pyproject.toml: no click, no service, store or launcher). `tools` makes each tool from
its verb: the input schema and the validation of a call are the verb's argument model's
(`optlog.api.verb.model`, on the MCP SDK's `ArgModelBase`); `face` holds the one long-lived session
and calls the verbs; `server` is the protocol's wiring, importing only the MCP SDK until a call
needs the face. `optlog mcp` (the CLI) starts `server.serve`.
"""
