"""A small markdown writer with escaping that holds for any text: `|`, backticks, HTML, newlines.

Whatever a person typed (a title, a rationale, a table cell) is escaped so that it renders as that
text and never as structure: inline punctuation that means something in CommonMark or GFM is
backslash-escaped, characters that start a block at the beginning of a line are escaped there, and
newlines become `<br>` in table cells and spaces in headings. The output parses with markdown-it-py
(`MarkdownIt("commonmark").enable("table")`) into the headings and tables it looks like, and renders
the same on GitHub.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

# Punctuation that can start inline structure anywhere (emphasis, code, links, HTML, entities,
# strikethrough, table cells). `!` only matters before `[`, which is escaped anyway.
_INLINE = re.compile(r"([\\`*_\[\]<>|&~#])")
# At the start of a line: headings, block quotes, lists, thematic breaks, setext underlines, fences.
_LINE_START = re.compile(r"^([#>+=\-])")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")


def _norm(text: Any) -> str:
    s = "" if text is None else str(text)
    return s.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")


def _esc_line(line: str, block: bool = True) -> str:
    line = line.strip()
    line = _INLINE.sub(r"\\\1", line)
    if block:  # only where the text starts a line of the document (not inside a table cell)
        line = _LINE_START.sub(r"\\\1", line)
        line = _ORDERED.sub(r"\1\\\2", line)
    return line


def inline(text: Any) -> str:
    """One line of literal text (newlines become spaces)."""
    return _esc_line(" ".join(_norm(text).split()))


def text(text: Any) -> str:
    """Literal text in the middle of a line or in a table cell (newlines become spaces)."""
    return _esc_line(" ".join(_norm(text).split()), block=False)


def cell(text: Any) -> str:
    """A table cell: literal text, newlines kept as `<br>`."""
    lines = [_esc_line(ln, block=False) for ln in _norm(text).split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "<br>".join(lines) if lines else ""


def paragraphs(text: Any) -> str:
    """A block of literal text: blank lines separate paragraphs, single newlines are kept as
    hard line breaks (a trailing backslash), nothing becomes a list, heading or code block."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", _norm(text).strip()):
        lines = [_esc_line(ln) for ln in para.split("\n")]
        lines = [ln for ln in lines if ln]
        if lines:
            out.append("\\\n".join(lines))
    return "\n\n".join(out)


def code(text: Any) -> str:
    """An inline code span holding `text` literally (backticks inside included)."""
    s = " ".join(_norm(text).split("\n"))
    runs = [len(m) for m in re.findall(r"`+", s)]
    fence = "`" * ((max(runs) + 1) if runs else 1)
    if not s.strip():
        return inline(s) or ""
    if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")):
        s = f" {s} "
    return f"{fence}{s}{fence}"


def heading(level: int, text: Any) -> str:
    body = inline(text) or "\\(untitled\\)"
    return f"{'#' * level} {body}"


def link(text: Any, url: str) -> str:
    """`[text](url)` with the URL in angle brackets (spaces and parentheses survive)."""
    u = _norm(url).strip().replace("\n", "")
    u = u.replace("\\", "%5C").replace("<", "%3C").replace(">", "%3E").replace(" ", "%20")
    return f"[{inline(text) or inline(u)}](<{u}>)"


def table(header: Sequence[Any], rows: Iterable[Sequence[Any]], align: Sequence[str] | None = None) -> str:
    """A GFM table; every cell escaped. `align` per column: 'l', 'r' or 'c'."""
    head = [cell(h) or " " for h in header]
    n = len(head)
    marks = []
    for i in range(n):
        a = (align[i] if align and i < len(align) else "l")
        marks.append({"l": "---", "r": "--:", "c": ":-:"}.get(a, "---"))
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(marks) + " |"]
    for r in rows:
        cells = [cell(c) for c in list(r)[:n]]
        cells += [""] * (n - len(cells))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def raw_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: Sequence[str] | None = None) -> str:
    """A GFM table whose cells are markdown already (links, code spans): only `|` and newlines are
    made safe."""
    def safe(c: str) -> str:
        return re.sub(r"(?<!\\)\|", r"\\|", _norm(c)).replace("\n", "<br>")

    n = len(header)
    marks = []
    for i in range(n):
        a = (align[i] if align and i < len(align) else "l")
        marks.append({"l": "---", "r": "--:", "c": ":-:"}.get(a, "---"))
    lines = ["| " + " | ".join(safe(h) for h in header) + " |", "| " + " | ".join(marks) + " |"]
    for r in rows:
        cells = [safe(c) for c in list(r)[:n]]
        cells += [""] * (n - len(cells))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bullets(items: Iterable[str], ordered: bool = False) -> str:
    """A list whose items are markdown already (escape text with `inline` first)."""
    out = []
    for i, it in enumerate(items, 1):
        mark = f"{i}." if ordered else "-"
        out.append(f"{mark} {it}")
    return "\n".join(out)


# ---------------------------------------------------------------- front matter


def _yaml_dumper() -> Any:
    base: type[Any]
    try:
        base = yaml.CSafeDumper
    except AttributeError:  # pragma: no cover
        base = yaml.SafeDumper

    class FrontMatterDumper(base):
        pass

    def rep_str(d: Any, v: str) -> Any:
        # One line per value: a multi-line or long string is double-quoted with escapes, so no line
        # of the front matter can read as the closing `---` (or any other YAML document marker).
        if "\n" in v or "\r" in v or v != v.strip() or len(v) > 60 or v.startswith(("---", "...")):
            return d.represent_scalar("tag:yaml.org,2002:str", v, style='"')
        return d.represent_scalar("tag:yaml.org,2002:str", v)

    FrontMatterDumper.add_representer(str, rep_str)
    return FrontMatterDumper


def front_matter(data: dict[str, Any]) -> str:
    text = yaml.dump(data, Dumper=_yaml_dumper(), sort_keys=False, allow_unicode=True, width=1_000_000_000,
                     default_flow_style=False)
    return f"---\n{text}---\n"


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter YAML or None, body)."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 3)
    if end < 0:
        if text.endswith("\n---"):
            return text[4:-4], ""
        return None, text
    return text[4:end + 1], text[end + 5:]


def parser() -> Any:
    """The markdown-it parser rendered files are checked with (tables and front matter on)."""
    from markdown_it import MarkdownIt  # deferred: markdown-it only to read a report
    from mdit_py_plugins.front_matter import front_matter_plugin  # deferred: markdown-it only to read a report

    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
