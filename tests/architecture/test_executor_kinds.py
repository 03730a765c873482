"""Executor kinds are known in one package (issue 46, item 4): outside `optlog/runs/executors/`, no
code compares a value with a kind's name (`executor == "local"`, `kind != "ssh"`, `x in (None,
"local")`) or parses a kind's target syntax (`.startswith("ssh:")`, `"slurm" in executor`). Such
code asks the registry (`on_this_machine`, `lock_target`, `make_executor`, `parse_on`, …) or the
executor (`ex.on_this_machine`, `ex.telemetry`, `ex.same_python`) instead, so a new executor is one
file plus one registration line. Read from the source with `ast`; the kinds' names come from the
registry, so a new kind is covered too. On ffc05ad (before the registry) it finds 26 sites in 8 modules
besides the executor modules themselves."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "optlog/runs/executors/"

# (file, the constant): a comparison with a kind's name that is about something else
NOT_A_KIND = {
    ("optlog/core/codeargs.py", "ssh"): "the program `ssh` on a command line (a secret's hiding place), not an executor",
}


def _names() -> set[str]:
    from optlog.runs.executors.registry import KINDS

    return set(KINDS)


def _kind_word(v: object, names: set[str]) -> str | None:
    """The kind a string constant names (`local`, `ssh:…`, `slurm:`), None when none."""
    if not isinstance(v, str):
        return None
    head = v.split(":", 1)[0]
    return head if head in names and (v == head or v.startswith(head + ":")) else None


def _constants(node: ast.AST) -> list[object]:
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def violations(text: str, rel: str, names: set[str]) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(text)):
        words: list[str] = []
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                words += [w for c in _constants(operand) if (w := _kind_word(c, names))]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith", "removeprefix", "partition", "split") and node.args):
            words += [w for c in _constants(node.args[0]) if (w := _kind_word(c, names)) and ":" in str(c)]
        for w in words:
            if (rel, w) not in NOT_A_KIND:
                out.append(f"{rel} line {node.lineno}: compares with executor kind {w!r} (ask optlog.runs.executors)")
    return out


def test_no_executor_kind_comparisons_outside_the_executors_package() -> None:
    names = _names()
    assert {"local", "ssh", "slurm"} <= names
    found = []
    for path in sorted((ROOT / "optlog").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(PACKAGE):
            found += violations(path.read_text(encoding="utf-8"), rel, names)
    assert not found, "\n".join(found)


def test_the_check_can_fail() -> None:
    """Each shape the executor code had on main before the registry is caught."""
    bad = (
        'if executor == "local": pass\n'
        'if self.executor.kind != "local": pass\n'
        'if executor in (None, "local"): pass\n'
        'if isinstance(v, str) and v.startswith("ssh:"): pass\n'
        'if host.startswith("slurm:"): pass\n'
        'if isinstance(v, dict) and "slurm" in v: pass\n'
        'if on == "slurm" or on.startswith("slurm:"): pass\n'
        'if ex.kind == "wrapped": pass\n'
    )
    got = violations(bad, "optlog/x.py", {"local", "ssh", "slurm", "wrapped"})
    assert sorted(int(g.split(" line ")[1].split(":")[0]) for g in got) == [1, 2, 3, 4, 5, 6, 7, 7, 8], got
    # what is not a kind comparison passes: a kind's name as a value, or another word
    good = 'doc.get("executor", "local")\nif p == "sshd": pass\nx = f"slurm:{t}"\nif kind == "cpu": pass\n'
    assert violations(good, "optlog/x.py", {"local", "ssh", "slurm"}) == []
    # the allowance is for its file only
    assert violations('if p == "ssh": pass\n', "optlog/core/codeargs.py", {"ssh"}) == []
    assert violations('if p == "ssh": pass\n', "optlog/core/other.py", {"ssh"}) != []
