"""The dashboard's shape (issue 35, after the second architecture review's P3): the app module
wires panes and stays small; what the parts tell each other is a typed message, handled by its
class, never a string turned into a method name.

* `optlog/tui/app.py` has at most APP_MAX_LINES lines and defines one class (the App) and no
  function but `run_tui`: a widget, a pane or a renderer lives in its own module (`panes/`,
  `widgets.py`).
* Nowhere under optlog/tui/ is a handler chosen by string: no call of `getattr(obj, <computed
  name>)` and no getattr by a name built from a string (the old `getattr(self, f"_show_{msg.what}")`),
  no call of a subscripted dict literal
  (`{"runs": self._show_runs}[what](data)`), and no Message class with a `what: str` field.
* Every Message class of the TUI is in `optlog/tui/messages.py`.

Each rule is shown able to fail on the shape the app had before the split (a 1,496-line module
with `Loaded(what, data)` and `getattr` dispatch).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUI = ROOT / "optlog" / "tui"
APP_MAX_LINES = 300


def _is_message_class(node: ast.ClassDef) -> bool:
    return any(isinstance(b, (ast.Name, ast.Attribute)) and (getattr(b, "id", None) or getattr(b, "attr", "")) in
               ("Message", "Loaded") for b in node.bases) or node.name.endswith(("Loaded", "Message"))


def _getattr(node: ast.AST) -> ast.expr | None:
    """The name argument of `getattr(obj, name, ...)` when it is not a constant, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
        return node.args[1]
    return None


def _built_string(e: ast.expr) -> bool:
    """An f-string, a concatenation, `%` or `.format`/`.replace` on a string: a name made from a kind."""
    return isinstance(e, (ast.JoinedStr, ast.BinOp)) or (
        isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("format", "replace", "join"))


def string_dispatch(source: str, name: str) -> list[str]:
    """Each handler chosen by a string in one module, as `name:line: what`."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _getattr(node.func) is not None:
            out.append(f"{name}:{node.lineno}: a method called by a computed name (getattr(...)(...))")
        elif _getattr(node) is not None and _built_string(_getattr(node)):
            out.append(f"{name}:{node.lineno}: getattr with a name built from a string")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Dict):
            out.append(f"{name}:{node.lineno}: a call chosen from a dict by key")
        elif isinstance(node, ast.ClassDef) and _is_message_class(node):
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id == "what":
                    out.append(f"{name}:{st.lineno}: message {node.name} names its kind by a string field")
    return out


def app_shape(source: str, name: str = "optlog/tui/app.py") -> list[str]:
    """What is wrong with the app module itself: its length, and classes beside the App."""
    out: list[str] = []
    n = len(source.splitlines())
    if n > APP_MAX_LINES:
        out.append(f"{name}: {n} lines (at most {APP_MAX_LINES}: move a pane, a worker or an action out)")
    classes = [c.name for c in ast.parse(source).body if isinstance(c, ast.ClassDef)]
    if len(classes) > 1:
        out.append(f"{name}: classes {', '.join(classes)} (one App; a widget goes to panes/ or widgets.py)")
    funcs = [f.name for f in ast.parse(source).body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if [f for f in funcs if f != "run_tui"]:
        out.append(f"{name}: functions {', '.join(f for f in funcs if f != 'run_tui')} beside the App "
                   "(a renderer goes to its pane's module)")
    nested = [c.name for top in ast.parse(source).body if isinstance(top, ast.ClassDef)
              for c in top.body if isinstance(c, ast.ClassDef)]
    if nested:
        out.append(f"{name}: classes nested in the App: {', '.join(nested)} (a message goes to messages.py)")
    return out


def stray_messages(source: str, name: str) -> list[str]:
    return [f"{name}:{c.lineno}: message class {c.name} outside messages.py"
            for c in ast.walk(ast.parse(source)) if isinstance(c, ast.ClassDef) and _is_message_class(c)]


def _modules() -> list[tuple[str, str]]:
    return [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in sorted(TUI.rglob("*.py"))]


def test_the_app_module_is_small_and_only_wires() -> None:
    problems = app_shape((TUI / "app.py").read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_no_handler_is_chosen_by_a_string() -> None:
    found = [v for name, src in _modules() for v in string_dispatch(src, name)]
    assert not found, "string-dispatched handlers (use a typed message and its on_<message> handler):\n" + "\n".join(found)


def test_messages_live_in_messages_py() -> None:
    found = [v for name, src in _modules() if not name.endswith("tui/messages.py") for v in stray_messages(src, name)]
    assert not found, "\n".join(found)


# the shape before the split, in little: a message naming its kind, a getattr dispatch, a dict dispatch
_OLD = '''
from dataclasses import dataclass
from textual.app import App
from textual.message import Message
from textual.widgets import DataTable


class RunsTable(DataTable):
    pass


class OptlogApp(App[None]):
    @dataclass
    class Loaded(Message):
        what: str
        data: object

    def on_optlog_app_loaded(self, msg: "OptlogApp.Loaded") -> None:
        getattr(self, f"_show_{msg.what.replace('-', '_')}")(msg.data)

    def other(self, what: str, data: object) -> None:
        {"runs": self._show_runs, "todos": self._show_todos}[what](data)


def _run_renderable(r: dict) -> object:
    return r
''' + "\n" * 300


def test_the_rules_can_fail() -> None:
    dispatch = string_dispatch(_OLD, "old.py")
    assert any("called by a computed name" in v for v in dispatch), dispatch
    assert any("built from a string" in v for v in string_dispatch("h = getattr(self, 'on_' + kind)\n", "old.py"))
    assert any("chosen from a dict" in v for v in dispatch), dispatch
    assert any("names its kind by a string field" in v for v in dispatch), dispatch
    shape = app_shape(_OLD, "old.py")
    assert any("lines (at most 300" in v for v in shape) and any("classes OptlogApp" in v or "RunsTable" in v for v in shape), shape
    assert any("nested in the App: Loaded" in v for v in shape), shape
    assert any("functions _run_renderable beside the App" in v for v in shape), shape
    assert stray_messages(_OLD, "old.py"), "a Message class outside messages.py went unseen"
    # and a getattr by a constant name (`getattr(self, "_tree_labels", [])`) is no dispatch
    assert not string_dispatch("getattr(self, 'x', None)\n", "ok.py")
