"""todo add|set|list|write."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.cli.options import JsonValue
from optlog.core.todos import PRIORITIES, TODO_MARK, TODO_STATUSES
from optlog.service import todos

TODO_ITEM = {"type": "object", "properties": {
    "content": {"type": "string", "description": "What to do, one sentence."},
    "status": {"type": "string", "enum": list(TODO_STATUSES)},
    "priority": {"type": "string", "enum": list(PRIORITIES)},
    "id": {"type": "string", "description": "Keep ids stable across writes (links survive)."},
    "hypothesis": {"type": "string", "description": "The hypothesis this todo serves."},
}, "required": ["content", "status"]}

def _human(d: dict[str, Any]) -> str:
    if not d["todos"]:
        return "no todos"
    out = []
    for t in d["todos"]:
        pr = f" ({t['priority']})" if t.get("priority") else ""
        hy = f" → {t['hypothesis']}" if t.get("hypothesis") else ""
        out.append(f"{TODO_MARK.get(t['status'], '[?]')} {t['id']:<10} {t['content']}{pr}{hy}")
    return "\n".join(out)


@click.group("todo")
def todo() -> None:
    """The todo list (todowrite JSON is a first-class input)."""


@todo.command("add")
@click.argument("text")
@click.option("--priority", type=click.Choice(PRIORITIES), default="medium", show_default=True,
              help="How urgent it is.")
@click.option("--hypothesis", metavar="ID", help="The hypothesis this todo serves.")
@agent(args={"text": "What to do, one sentence."})
@verb(lambda r: f"added todo {r['id']}")
def todo_add(call: Call, text: str, priority: str, hypothesis: str | None) -> dict[str, Any]:
    """Add a todo at the end of the list."""
    return todos.add(call.ctx, text, priority, hypothesis)


@todo.command("set")
@click.argument("tid", metavar="ID")
@click.option("--status", type=click.Choice(TODO_STATUSES), help="The new status.")
@click.option("--priority", type=click.Choice(PRIORITIES), help="The new priority.")
@click.option("--hypothesis", metavar="ID", help="Link to a hypothesis ('' unlinks).")
@click.option("--content", metavar="TEXT", help="New text for the todo.")
@agent(args={"tid": "The todo id (as todo_list shows it)."})
@verb(lambda r: f"{r['id']} is {r['status']}")
def todo_set(call: Call, tid: str, status: str | None, priority: str | None, hypothesis: str | None,
             content: str | None) -> dict[str, Any]:
    """Change a todo's status (or priority, link, text)."""
    return todos.set_(call.ctx, tid, status, priority, hypothesis, content)


@todo.command("list")
@click.option("--status", type=click.Choice(TODO_STATUSES), help="Only todos with this status.")
@click.option("--hypothesis", metavar="ID", help="Only todos linked to this hypothesis.")
@click.option("--limit", type=int, default=None, metavar="N", help="At most N todos (in list order).")
@click.option("--offset", type=int, default=0, help="Skip this many: pass the previous page's next_offset.")
@agent(read_only=True, defaults={"limit": 30}, output="todo_list")
@verb(_human)
def todo_list(call: Call, status: str | None, hypothesis: str | None, limit: int | None, offset: int) -> Any:
    """List todos in order."""
    return todos.list_doc(call.ctx, status, hypothesis, limit, offset)


@todo.command("write")
@click.argument("source", metavar="FILE|-", required=False)
@click.option("--todos", "inline", type=JsonValue("--todos"), help="The todowrite list inline instead of FILE.")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="The whole list back, or only each todo's id and status.")
@click.option("--queue", is_flag=True,
              help="Validate, queue and answer at once ({\"queued\": N}); the next optlog call applies it (for hooks).")
@agent(defaults={"detail": False, "queue": False}, json={"inline": {"type": "array", "items": TODO_ITEM,
       "description": "Your whole todo list (TodoWrite/todowrite items; other keys such as activeForm are kept)."}},
       args={"source": "A file holding todowrite JSON (or a hook payload); '-' is stdin."})
@verb(lambda d: _human(d) if "total" not in d else f"{d['total']} todo(s) written")
def todo_write(call: Call, source: str | None, inline: Any, detail: bool, queue: bool) -> Any:
    """Replace the list with todowrite JSON ({"todos": [...]}) from FILE or stdin.

    Hook payloads are taken as they come: Claude Code's PostToolUse for TodoWrite, OpenCode's
    todo.updated event and todowrite tool hooks.
    """
    if queue and source is not None and inline is None:
        return todos.queue_doc(call.ctx, source)
    return todos.write_doc(call.ctx, inline, "--todos", detail, source=source)
