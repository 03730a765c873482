"""Documents in (YAML and JSON) and YAML out, with locations: every error names file, line and field.

PyYAML's composed node tree keeps start marks; a pydantic error location (a path of keys and
indices) is walked through that tree to find the line a person must fix.

Every document is guarded before it is built (files arrive through `git pull`): its size, its
encoding (invalid UTF-8 names the line), its nesting depth, its size *after alias expansion* (a
462-byte "billion laughs" once took 591 MB) and duplicate mapping keys (PyYAML keeps the last one
silently) are checked on libyaml's event stream, which is flat and iterative, so no input reaches
the recursive composer or Python's stack unchecked. Then every string is checked with the one
text rule (`optlog.core.text`). The bounds are `optlog.core.limits.LIMITS`.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import yaml

from optlog.core import jsondoc
from optlog.core import text as TX
from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count
from optlog.errors import BadInput
from optlog.paths import read_regular

try:  # the C loader is 5-10x faster where libyaml is present
    from yaml import CSafeDumper as _Dumper
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml (third-party C extension)
    from yaml import SafeDumper as _Dumper  # type: ignore[assignment]
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

T = TypeVar("T")


def _node_at(node: yaml.Node | None, loc: tuple[Any, ...]) -> yaml.Node | None:
    """The node a pydantic location points at. For a mapping key the *key* node is returned at the
    last step, so an unknown (extra) key or a block value is reported at the line that names it."""
    for i, key in enumerate(loc):
        if node is None:
            return None
        last = i == len(loc) - 1
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if str(k.value) == str(key):
                    nxt = k if last else v
                    break
            if nxt is None:
                return node
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            if key >= len(node.value):
                return node
            node = node.value[key]
        else:
            return node
    return node


def line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the value at `loc` in the YAML `text` (None if unknown)."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    node = _node_at(root, loc)
    return node.start_mark.line + 1 if node is not None else None


def scalar_text(text: str, loc: tuple[Any, ...]) -> str | None:
    """The text a scalar value at `loc` is written as in the YAML `text` (`1.0e+400` where the loaded
    value is inf; `.inf` for YAML's own infinity), or None when there is no such scalar."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    node: yaml.Node | None = root
    for key in loc:  # (the value at each step, where `_node_at` gives a mapping's key at the last)
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if str(k.value) == str(key)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            node = node.value[key]
        else:
            return None
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None


def read_text(path: Path, shown: str | None = None) -> str:
    """A document's text: refused (BadInput, exit 2) when larger than the limit or not UTF-8."""
    shown = shown or str(path)
    # a regular file only, and at most the limit: a spec or todo list named as /dev/zero or a FIFO
    # would never finish reading (optlog.paths.read_regular)
    return decode(read_regular(path, LIMITS.file_bytes, shown=shown, what="document"), shown)


def decode(raw: bytes, shown: str) -> str:
    """UTF-8 text, or BadInput naming the line and column of the first bad byte."""
    if len(raw) > LIMITS.file_bytes:
        raise BadInput(f"the document is {fmt_count(len(raw))} bytes; optlog reads documents of at most "
                       f"{fmt_count(LIMITS.file_bytes)}", file=shown, code="too_large")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        before = raw[:e.start]
        line = before.count(b"\n") + 1
        col = e.start - (before.rfind(b"\n") + 1) + 1
        raise BadInput(f"not valid UTF-8 (byte 0x{raw[e.start]:02x})", file=shown, line=line, column=col,
                       code="bad_encoding") from None


def _guard_events(text: str, file: str) -> None:
    """Depth, expanded size and duplicate keys, from the event stream (before anything is built).

    Each open collection is a frame [nodes so far, anchor, is-mapping, position, keys seen]; an
    anchor remembers how many nodes it expands to, and each alias adds that many again, so the
    count is the size of the document a reader would see after expansion."""
    if len(text) > LIMITS.file_bytes:
        raise BadInput(f"the document is {fmt_count(len(text))} characters; optlog reads documents of at most "
                       f"{fmt_count(LIMITS.file_bytes)}", file=file, code="too_large")
    sizes: dict[str, int] = {}
    stack: list[list[Any]] = []
    total = 0

    def where(ev: Any) -> dict[str, Any]:
        m = ev.start_mark
        return {"file": file, "line": m.line + 1 if m else None, "column": m.column + 1 if m else None}

    def value(ev: Any, n: int, key: str | None) -> None:
        nonlocal total
        total += n
        if total > LIMITS.nodes:
            raise BadInput(f"the document expands to more than {fmt_count(LIMITS.nodes)} values (YAML aliases?)",
                           code="too_large", **where(ev))
        if stack:
            top = stack[-1]
            top[0] += n
            if top[2]:
                if top[3] % 2 == 0 and key is not None:
                    if key in top[4]:
                        raise BadInput(f"duplicate key {key!r} (YAML keeps only the last one; say it once)",
                                       field=key, code="duplicate_key", **where(ev))
                    top[4].add(key)
                top[3] += 1

    try:
        for ev in yaml.parse(text, Loader=_Loader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                value(ev, 1, None)
                stack.append([0, ev.anchor, isinstance(ev, yaml.MappingStartEvent), 0, set()])
                if len(stack) > LIMITS.depth:
                    raise BadInput(f"nested more than {LIMITS.depth} levels deep", code="too_deep", **where(ev))
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                n, anchor = stack.pop()[:2]
                if anchor is not None:
                    sizes[anchor] = n + 1
                if stack:
                    stack[-1][0] += n
            elif isinstance(ev, yaml.ScalarEvent):
                if ev.anchor is not None:
                    sizes[ev.anchor] = 1
                value(ev, 1, ev.value)
            elif isinstance(ev, yaml.AliasEvent):
                value(ev, sizes.get(ev.anchor or "", 1), None)
    except yaml.MarkedYAMLError:
        return  # the loader below reports it with its line and column
    except yaml.YAMLError:
        return


def check_tree(data: Any, file: str, text: str | None = None) -> None:
    """The text rule, depth and size on a parsed document (see `optlog.core.text.check_tree`)."""
    TX.check_tree(data, file, (lambda loc: line_of(text, loc)) if text else None)


class _NonFinite(ValueError):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _no_constant(token: str) -> Any:
    raise _NonFinite(token)


def parse_json(text: str | bytes, file: str) -> Any:
    """Parse JSON with the same guards as YAML; errors name line and column."""
    if isinstance(text, bytes):
        text = decode(text, file)
    if len(text) > LIMITS.file_bytes:
        raise BadInput(f"the document is {fmt_count(len(text))} characters; optlog reads documents of at most "
                       f"{fmt_count(LIMITS.file_bytes)}", file=file, code="too_large")
    try:
        data = jsondoc.loads(text, parse_constant=_no_constant)
    except jsondoc.DuplicateKey as e:  # Python's reader keeps the last silently, as PyYAML would
        raise e.in_file(file) from None
    except _NonFinite as e:  # JSON has no NaN or Infinity (PostgreSQL's JSON refuses them too)
        m = re.search(rf"(?<![\w\"]){re.escape(e.token)}(?![\w\"])", text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        col = m.start() - text.rfind("\n", 0, m.start()) if m else None
        raise BadInput(f"malformed JSON: {e.token} is not a JSON number (JSON has no NaN or Infinity: "
                       f"write a number, or null)", file=file, line=line, column=col, code="malformed_json") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"malformed JSON: {e.msg}", file=file, line=e.lineno, column=e.colno,
                       code="malformed_json") from None
    except RecursionError:
        raise BadInput(f"nested more than {LIMITS.depth} levels deep", file=file, code="too_deep") from None
    check_tree(data, file)
    return data


def parse_text(text: str, file: str) -> Any:
    """Parse YAML (guarded as the module says), turning syntax errors into BadInput with line and column."""
    _guard_events(text, file)
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise BadInput(
            f"malformed YAML: {e.problem or e}",
            file=file,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
            code="malformed_yaml",
        ) from None
    except yaml.YAMLError as e:
        raise BadInput(f"malformed YAML: {e}", file=file, code="malformed_yaml") from None
    except (ValueError, OverflowError) as e:  # e.g. a timestamp such as 2026-02-30
        raise BadInput(f"malformed YAML: {e}", file=file, code="malformed_yaml") from None
    check_tree(data, file, text)
    return data


def validate(model: type[T], data: Any, text: str | None, file: str) -> T:
    """Validate `data` with a pydantic model; the first error becomes BadInput(file, line, field)."""
    from pydantic import ValidationError  # deferred: pydantic (~20 ms); writers and readers of plain YAML skip it

    try:
        return model.model_validate(data)  # type: ignore[attr-defined]
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err.get("loc", ()))
        fld = ".".join(str(p) for p in loc) or None
        line = line_of(text, loc) if text is not None else None
        n = e.error_count()
        more = f" (and {n - 1} more)" if n > 1 else ""
        raise BadInput(f"{err['msg']}{more}", file=file, line=line, field=fld, code="invalid_field") from None


def load_model(model: type[T], path: Path, rel: str | None = None) -> T:
    text = read_text(path, rel or str(path))
    data = parse_text(text, rel or str(path))
    if data is None:
        data = {}
    return validate(model, data, text, rel or str(path))


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


def flow(data: Any) -> str:
    """`data` as one line of YAML flow text (`[1, a b, '1']`) that `parse_text` reads back as `data`."""
    return yaml.safe_dump(data, default_flow_style=True, allow_unicode=True, width=2**31 - 1).strip()


def current_umask() -> int:
    """The process umask (Linux reads it from /proc without changing it; elsewhere set and reset)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    m = os.umask(0o022)
    os.umask(m)
    return m


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so a reader never sees half a file.

    The file gets the mode a plain `open(path, "w")` would give it (an existing file keeps its
    mode; a new one 0666 less the umask), not the temporary file's private 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
