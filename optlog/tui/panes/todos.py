"""The Todos tab: the agent's todo list, as `todo list` gives it."""

from __future__ import annotations

from typing import Any

from optlog.core.todos import TODO_MARK
from optlog.tui.widgets import EMPTY, PlainTable

# space on a todo: its next status (the dashboard's own cycle)
TODO_NEXT = {"pending": "in_progress", "in_progress": "completed", "completed": "pending", "cancelled": "pending"}


class TodosTable(PlainTable):
    """One row a todo: its mark, id, priority, text and hypothesis; the cursor stays on its row."""

    def on_mount(self) -> None:
        self.add_columns("", "id", "priority", "todo", "hypothesis")

    def show(self, todos: list[dict[str, Any]]) -> None:
        cur = self.cursor_row
        self.clear()
        for td in todos:
            self.add_row(TODO_MARK.get(td["status"], "[?]"), td["id"], td.get("priority") or "", td["content"],
                         td.get("hypothesis") or "", key=td["id"])
        if todos:
            self.move_cursor(row=min(cur, len(todos) - 1))
        else:
            self.say_empty("no todos yet: t adds one; an agent's todo list shows here once `optlog agent setup` "
                           "wired its hook", 3)

    def selected(self) -> str | None:
        """The todo under the cursor, if any."""
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return str(key.value) if key and key.value is not None and key.value != EMPTY else None
