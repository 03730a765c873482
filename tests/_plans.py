"""Helpers for the plan and report tests: read rendered markdown back as markdown-it tokens."""

from __future__ import annotations

import yaml

from optlog.render import md


def tokens(text: str):
    return md.parser().parse(text)


def front(text: str) -> dict:
    toks = tokens(text)
    assert toks[0].type == "front_matter", [t.type for t in toks[:3]]
    return yaml.safe_load(toks[0].content)


def headings(text: str) -> list[tuple[str, str]]:
    toks = tokens(text)
    out = []
    for i, t in enumerate(toks):
        if t.type == "heading_open":
            out.append((t.tag, plain(toks[i + 1])))
    return out


def plain(inline_tok) -> str:
    """The text a reader sees in an inline token (breaks as newlines)."""
    out = []
    for c in inline_tok.children or []:
        if c.type in ("text", "code_inline"):
            out.append(c.content)
        elif c.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif c.type == "html_inline":
            out.append("\n" if c.content.lower().startswith("<br") else c.content)
    return "".join(out)


def tables(text: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    toks = tokens(text)
    res, cur, row = [], None, None
    for t in toks:
        if t.type == "table_open":
            cur = []
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(plain(t))
        elif t.type == "tr_close":
            cur.append(row)
            row = None
        elif t.type == "table_close":
            res.append(cur)
            cur = None
    return res


