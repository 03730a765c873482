"""todo add|set|list|write: the agent's todo list (todowrite JSON is a first-class input)."""

from __future__ import annotations

from typing import Annotated, Any, cast

from optlog.api.params import Detail, Limit, Offset
from optlog.api.verb import AgentDefault, AgentJson, Arg, Call, JsonText, Opt, group, verb
from optlog.core.todos import PRIORITIES, TODO_STATUSES
from optlog.errors import BadInput, param
from optlog.service import documents, todos
from optlog.service.envelope import listing

group("todo", "The todo list (todowrite JSON is a first-class input).")

TODO_ITEM = {"type": "object", "properties": {
    "content": {"type": "string", "description": "What to do, one sentence."},
    "status": {"type": "string", "enum": list(TODO_STATUSES)},
    "priority": {"type": "string", "enum": list(PRIORITIES)},
    "id": {"type": "string", "description": "Keep ids stable across writes (links survive)."},
    "hypothesis": {"type": "string", "description": "The hypothesis this todo serves."},
}, "required": ["content", "status"]}


@verb("todo add")
def todo_add(call: Call, *,
             text: Annotated[str, Arg(help="What to do, one sentence.")],
             priority: Annotated[str, Opt(choices=PRIORITIES, show_default=True, help="How urgent it is.")] = "medium",
             hypothesis: Annotated[str | None, Opt(metavar="ID", help="The hypothesis this todo serves.")] = None,
             ) -> dict[str, Any]:
    """Add a todo at the end of the list."""
    return todos.add(call.ctx, text, priority, hypothesis)


@verb("todo set")
def todo_set(call: Call, *,
             tid: Annotated[str, Arg(metavar="ID", help="The todo id (as todo_list shows it).")],
             status: Annotated[str | None, Opt(choices=TODO_STATUSES, help="The new status.")] = None,
             priority: Annotated[str | None, Opt(choices=PRIORITIES, help="The new priority.")] = None,
             hypothesis: Annotated[str | None, Opt(metavar="ID", help="Link to a hypothesis ('' unlinks).")] = None,
             content: Annotated[str | None, Opt(metavar="TEXT", help="New text for the todo.")] = None,
             ) -> dict[str, Any]:
    """Change a todo's status (or priority, link, text)."""
    return todos.set_(call.ctx, tid, status, priority, hypothesis, content)


@verb("todo list", read_only=True)
def todo_list(call: Call, *,
              status: Annotated[str | None, Opt(choices=TODO_STATUSES, help="Only todos with this status.")] = None,
              hypothesis: Annotated[str | None, Opt(metavar="ID", help="Only todos linked to this hypothesis.")] = None,
              limit: Annotated[Limit, AgentDefault(30), Opt(metavar="N", help="At most N todos (in list order).")] = None,
              offset: Annotated[Offset, Opt(help="Skip this many: pass the previous page's next_offset.")] = 0,
              ) -> documents.TodoList:
    """List todos in order."""
    return cast(documents.TodoList, listing("todos", todos.list_(call.ctx, status, hypothesis), limit, offset))


@verb("todo write")
def todo_write(call: Call, *,
               source: Annotated[str | None, Arg(metavar="FILE|-",
                                                 help="A file holding todowrite JSON (or a hook payload); '-' is stdin.")] = None,
               inline: Annotated[Any, Opt("--todos", help="The todowrite list inline instead of FILE."),
                                 JsonText(), AgentJson({"type": "array", "items": TODO_ITEM,
                                 "description": "Your whole todo list (TodoWrite/todowrite items; other keys such as activeForm are kept)."})] = None,
               detail: Annotated[Detail, Opt("--detail/--brief", show_default=True,
                                             help="The whole list back, or only each todo's id and status.")] = True,
               queue: Annotated[bool, AgentDefault(False), Opt(
                   help="Validate, queue and answer at once ({\"queued\": N}); the next optlog call applies it (for hooks).")] = False,
               ) -> documents.TodoList | documents.TodoWriteAck | dict[str, Any]:
    """Replace the list with todowrite JSON ({"todos": [...]}) from FILE or stdin.

    Hook payloads are taken as they come: Claude Code's PostToolUse for TodoWrite, OpenCode's
    todo.updated event and todowrite tool hooks.
    """
    if queue and source is not None and inline is None:
        return {"queued": todos.queue(call.ctx, source)}
    if (source is None) == (inline is None):
        raise BadInput(f"give FILE (or - for stdin) or {param('inline')} JSON", field="inline", code="usage")
    data, file = (inline, "--todos") if source is None else todos.read_todowrite(source)
    rows = todos.write(call.ctx, data, file)
    if detail:
        return {"todos": cast(list[documents.Todo], rows)}
    return {"todos": [{"id": t["id"], "status": t["status"]} for t in rows], "total": len(rows)}
