"""A small modal form: labelled inputs (text or a choice), OK/Cancel, keyboard only.

Every TUI action that asks something (a title, a reason, a status) uses this one screen, so
validation errors come back from the service layer as notifications, never from ad-hoc checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select


@dataclass
class Field:
    name: str
    label: str
    value: str = ""
    placeholder: str = ""
    choices: list[str] = field(default_factory=list)
    required: bool = False


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
