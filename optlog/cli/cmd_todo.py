"""todo add|set|list|write."""

from __future__ import annotations

from typing import Any

import click

from optlog.cli.main import emit, service_ctx

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
@click.option("--priority", type=click.Choice(["high", "medium", "low"]), default="medium", show_default=True)
@click.option("--hypothesis", metavar="ID")
def todo_add(text: str, priority: str, hypothesis: str | None) -> None:
    """Add a todo at the end of the list."""
    from optlog.service import todos

    ctx = service_ctx()
    t = todos.add(ctx, text, priority, hypothesis)
    emit(t, lambda r: f"added todo {r['id']}")


@todo.command("set")
@click.argument("tid", metavar="ID")
@click.option("--status", metavar="S", help="pending|in_progress|completed|cancelled")
@click.option("--priority", metavar="P", help="high|medium|low")
@click.option("--hypothesis", metavar="ID", help="Link to a hypothesis ('' unlinks).")
@click.option("--content", metavar="TEXT")
def todo_set(tid: str, status: str | None, priority: str | None, hypothesis: str | None, content: str | None) -> None:
    """Change a todo's status (or priority, link, text)."""
    from optlog.service import todos

    ctx = service_ctx()
    t = todos.set_(ctx, tid, status, priority, hypothesis, content)
    emit(t, lambda r: f"{r['id']} is {r['status']}")


@todo.command("list")
@click.option("--status", metavar="S")
@click.option("--hypothesis", metavar="ID")
def todo_list(status: str | None, hypothesis: str | None) -> None:
    """List todos in order."""
    from optlog.service import todos

    ctx = service_ctx()
    emit({"todos": todos.list_(ctx, status, hypothesis)}, _human)


@todo.command("write")
@click.argument("source", metavar="FILE|-")
def todo_write(source: str) -> None:
    """Replace the list with todowrite JSON ({"todos": [...]}) from FILE or stdin."""
    from optlog.service import todos

    ctx = service_ctx()
    data, name = todos.read_todowrite(source)
    emit({"todos": todos.write(ctx, data, name)}, _human)
