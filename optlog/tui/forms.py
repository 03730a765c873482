"""A small modal form: labelled inputs (text or a choice), OK/Cancel, keyboard only.

Every TUI action that asks something (a title, a reason, a status) uses this one screen, so
validation errors come back from the service layer as notifications, never from ad-hoc checks.

A form that calls a verb is made from the verb's parameters (`verb_form`): a field's name, label,
hint (the parameter's help), choices, default and whether it is required are read from the verb's
declaration (`optlog.api.verb`), so a parameter is spelt where it is declared; the action only names
which parameters it asks for and what the selection fills in. `verb_values` turns the form's texts
back into the verb's typed values (a repeatable: comma-separated; K=V pairs; numbers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from optlog.core.labels import parse_pairs


@dataclass
class Field:
    name: str
    label: str
    value: str = ""
    placeholder: str = ""
    choices: list[str] = field(default_factory=list)
    required: bool = False


def _param(fn: Callable[..., Any], name: str) -> Any:
    from optlog.api import verb as V  # deferred: the catalogue loads after the first frame

    v = V.of(fn)
    if v is None:
        raise TypeError(f"{fn.__qualname__} is not a verb")
    p = next((p for p in v.params() if p.name == name), None)
    if p is None:
        raise TypeError(f"verb {' '.join(v.path)!r} has no parameter {name!r}")
    return p


def _label(p: Any) -> str:
    from optlog.api import verb as V  # deferred: the catalogue loads after the first frame

    words = p.name.replace("_", " ")
    label = words[:1].upper() + words[1:]
    if isinstance(p.kind, V.Pairs):
        return label + " (K=V, comma-separated)"
    return label + (" (comma-separated)" if p.many else "")


def _hint(p: Any) -> str:
    """The parameter's help, less what only the command line means by it (a repeatable option)."""
    return " ".join(re.sub(r"\s*\(repeatable(, ([^)]*))?\)", lambda m: f" ({m.group(2)})" if m.group(2) else "",
                           p.spec.help or "").split())


def verb_form(fn: Callable[..., Any], names: Sequence[str], values: Mapping[str, Any] | None = None,
              required: Collection[str] = ()) -> list[Field]:
    """The fields asking for the parameters `names` of the verb `fn`, in that order: each labelled by
    its name, hinted by its help, a choice where it has choices, pre-filled with `values` (what the
    selection gives) or else its default, and required where the verb requires it or the action asks
    for it (`required`: a reason the verb checks itself, asked before the call)."""
    from optlog.api import verb as V  # deferred: the catalogue loads after the first frame

    out = []
    for n in names:
        p = _param(fn, n)
        given = (values or {}).get(n)
        default = None if p.default is V.REQUIRED else p.default
        shown = given if given is not None else (default if isinstance(default, (str, int, float)) and
                                                 not isinstance(default, bool) else "")
        out.append(Field(p.name, _label(p), str(shown), _hint(p), list(p.spec.choices or []),
                         p.required or n in required))
    return out


def verb_values(fn: Callable[..., Any], vals: Mapping[str, Any]) -> dict[str, Any]:
    """The verb's typed arguments from a form's texts: blank is the parameter's default (None where
    it has none), a repeatable is comma-separated, K=V pairs are parsed as the CLI parses them, a
    number is read as one. Raises ValueError naming the field on a number that is not one."""
    from optlog.api import verb as V  # deferred: the catalogue loads after the first frame

    out: dict[str, Any] = {}
    for n, raw in vals.items():
        p = _param(fn, n)
        text = "" if raw is None else str(raw)
        if p.many:
            items = [x.strip() for x in text.split(",") if x.strip()]
            if isinstance(p.kind, V.Pairs):
                flag = next((f for f in getattr(p.spec, "flags", ()) if f.startswith("--")), "--" + n.replace("_", "-"))
                out[n] = tuple(parse_pairs(items, flag).items())
            else:
                out[n] = tuple(items)
        elif not text.strip() and not p.required:
            out[n] = None if p.default is V.REQUIRED else p.default
        elif p.item in (int, float):
            try:
                out[n] = p.item(text.strip())
            except ValueError:
                raise ValueError(f"{_label(p)}: not a number: {text.strip()!r}") from None
        else:
            out[n] = text
    return out


class FormScreen(ModalScreen[dict[str, Any] | None]):
    """Returns {name: value} on OK (enter in the last field or ctrl+s), None on escape."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "submit", "OK"),
    ]

    DEFAULT_CSS = """
    FormScreen { align: center middle; }
    FormScreen > Vertical {
        width: 72; max-width: 95%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    FormScreen .form-title { text-style: bold; padding: 0 0 1 0; }
    FormScreen Label { padding: 0 0 0 0; color: $text-muted; }
    FormScreen Input, FormScreen Select { margin: 0 0 1 0; }
    FormScreen Horizontal { height: auto; align-horizontal: right; }
    FormScreen Button { margin: 0 0 0 1; min-width: 10; }
    """

    def __init__(self, title: str, fields: list[Field]) -> None:
        super().__init__()
        self.form_title = title
        self.fields = fields

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.form_title, classes="form-title")
            with VerticalScroll():
                for f in self.fields:
                    yield Label(f.label + (" *" if f.required else ""))
                    if f.choices:
                        yield Select([(c, c) for c in f.choices], value=f.value or f.choices[0],
                                     allow_blank=False, id=f"f-{f.name}")
                    else:
                        yield Input(value=f.value, placeholder=f.placeholder, id=f"f-{f.name}")
            with Horizontal():
                yield Button("OK", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(f"#f-{self.fields[0].name}").focus()

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in self.fields:
            w = self.query_one(f"#f-{f.name}")
            if isinstance(w, Select):
                out[f.name] = None if w.value is Select.BLANK else w.value
            elif isinstance(w, Input):
                out[f.name] = w.value
        return out

    def action_submit(self) -> None:
        vals = self.values()
        missing = [f.label for f in self.fields if f.required and not str(vals.get(f.name) or "").strip()]
        if missing:
            self.notify(f"required: {', '.join(missing)}", severity="warning")
            return
        self.dismiss(vals)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        inputs = list(self.query(Input))
        if event.input is inputs[-1]:
            self.action_submit()
        else:
            self.focus_next()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self.action_submit()
        else:
            self.action_cancel()
