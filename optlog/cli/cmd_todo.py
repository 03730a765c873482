"""todo add|set|list|write."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.main import agent, emit, service_ctx
from optlog.core.todos import PRIORITIES, TODO_STATUSES
from optlog.errors import BadInput
from optlog.service import todos

TODO_ITEM = {"type": "object", "properties": {
    "content": {"type": "string", "description": "What to do, one sentence."},
    "status": {"type": "string", "enum": list(TODO_STATUSES)},
    "priority": {"type": "string", "enum": list(PRIORITIES)},
    "id": {"type": "string", "description": "Keep ids stable across writes (links survive)."},
    "hypothesis": {"type": "string", "description": "The hypothesis this todo serves."},
}, "required": ["content", "status"]}

MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


def _human(d: dict[str, Any]) -> str:
    if not d["todos"]:
        return "no todos"
    out = []
    for t in d["todos"]:
        pr = f" ({t['priority']})" if t.get("priority") else ""
        hy = f" → {t['hypothesis']}" if t.get("hypothesis") else ""
        out.append(f"{MARK.get(t['status'], '[?]')} {t['id']:<10} {t['content']}{pr}{hy}")
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
def todo_add(text: str, priority: str, hypothesis: str | None) -> None:
    """Add a todo at the end of the list."""
    ctx = service_ctx()
    t = todos.add(ctx, text, priority, hypothesis)
    emit(t, lambda r: f"added todo {r['id']}")


@todo.command("set")
@click.argument("tid", metavar="ID")
@click.option("--status", type=click.Choice(TODO_STATUSES), help="The new status.")
@click.option("--priority", type=click.Choice(PRIORITIES), help="The new priority.")
@click.option("--hypothesis", metavar="ID", help="Link to a hypothesis ('' unlinks).")
@click.option("--content", metavar="TEXT", help="New text for the todo.")
@agent(args={"tid": "The todo id (as todo_list shows it)."})
def todo_set(tid: str, status: str | None, priority: str | None, hypothesis: str | None, content: str | None) -> None:
    """Change a todo's status (or priority, link, text)."""
    ctx = service_ctx()
    t = todos.set_(ctx, tid, status, priority, hypothesis, content)
    emit(t, lambda r: f"{r['id']} is {r['status']}")


@todo.command("list")
@click.option("--status", type=click.Choice(TODO_STATUSES), help="Only todos with this status.")
@click.option("--hypothesis", metavar="ID", help="Only todos linked to this hypothesis.")
@click.option("--limit", type=int, default=None, metavar="N", help="At most N todos (in list order).")
@click.option("--offset", type=int, default=0, help="Skip this many: pass the previous page's next_offset.")
@agent(read_only=True, defaults={"limit": 30}, output="todo_list")
def todo_list(status: str | None, hypothesis: str | None, limit: int | None, offset: int) -> None:
    """List todos in order."""
    emit(todos.list_doc(service_ctx(), status, hypothesis, limit, offset), _human)


@todo.command("write")
@click.argument("source", metavar="FILE|-", required=False)
@click.option("--todos", "inline", metavar="JSON", help="The todowrite list inline instead of FILE.")
@click.option("--detail/--brief", "detail", default=True, show_default=True,
              help="The whole list back, or only each todo's id and status.")
@agent(defaults={"detail": False}, json={"inline": {"type": "array", "items": TODO_ITEM,
       "description": "Your whole todo list (TodoWrite/todowrite items; other keys such as activeForm are kept)."}},
       args={"source": "A file holding todowrite JSON (or a hook payload); '-' is stdin."})
def todo_write(source: str | None, inline: str | None, detail: bool) -> None:
    """Replace the list with todowrite JSON ({"todos": [...]}) from FILE or stdin.

    Hook payloads are taken as they come: Claude Code's PostToolUse for TodoWrite, OpenCode's
    todo.updated event and todowrite tool hooks.
    """
    if (source is None) == (inline is None):
        raise BadInput("give FILE (or - for stdin) or --todos JSON", field="--todos", code="usage")
    if inline is not None:
        from optlog.yamlio import parse_json  # deferred: optlog.yamlio loads PyYAML, which `todo list` never needs

        try:
            data, name = parse_json(inline, "--todos"), "--todos"
        except BadInput as e:  # the same guards as a file's (depth, size, the text rule)
            e.field, e.file = e.field or "--todos", None
            raise
    else:
        data, name = todos.read_todowrite(source or "-")
    doc = todos.write_doc(service_ctx(), data, name, detail)
    emit(doc, _human if detail else lambda d: f"{d['total']} todo(s) written")
