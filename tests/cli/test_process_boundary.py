"""The thin tier of real `optlog` processes: what only a process shows, for every command.

Most CLI tests call `ws.cli(...)` in-process (tests/conftest.py): the same entry point, bindings,
error documents and exit codes, without an interpreter start per call. What that cannot show is
checked here in a real process, once per command of the tree (aliases included): the program
starts and imports the command, a usage error is exit code 2 at the process boundary, stdout carries
exactly one JSON document and the narration goes to stderr. tests/cli/test_smoke.py (marker
`cli_process`) runs a session of successful calls as processes; the commands that always run as a
process (`PROCESS_COMMANDS`: launches, tune, bench, telemetry, the TUI, the MCP server) have their own
process tests in tests/integration and tests/tui.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import _clean_env


def _commands() -> list[str]:
    from optlog.api import ALIAS_NOUNS
    from optlog.cli.commands import walk

    return [" ".join(p) for p, _ in walk()] + sorted(ALIAS_NOUNS)


@pytest.mark.parametrize("command", _commands())
def test_a_usage_error_is_exit_2_with_one_json_document_on_stdout(command: str, tmp_path) -> None:
    p = subprocess.run([sys.executable, "-m", "optlog", *command.split(), "--no-such-option", "--json"],
                       cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)  # exactly one document: json.loads refuses anything after it
    assert doc["error"]["code"] == "usage" and "--no-such-option" in doc["error"]["message"], doc
    assert p.stderr.startswith(f"optlog: error: {doc['error']['message']}"), p.stderr
    assert "Traceback" not in p.stderr


def test_the_tier_covers_every_command() -> None:
    """A command added to the tree is in the parametrisation above (it is read from the tree), and
    the in-process default routes the commands that need a process to one."""
    from tests.conftest import needs_process

    cmds = _commands()
    assert {"init", "status", "run launch", "tune run", "predict"} <= set(cmds)
    assert needs_process(("run", "launch", "spec.yaml")) and needs_process(("-C", "x", "tune", "run", "--json"))
    assert needs_process(("runs", "launch")) and not needs_process(("run", "list", "--json"))
    assert not needs_process(("--json", "hyp", "add", "x")) and needs_process(("tui",))
