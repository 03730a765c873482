"""YAML in and out with locations: every validation error names file, line and field.

PyYAML's composed node tree keeps start marks; a pydantic error location (a path of keys and
indices) is walked through that tree to find the line a person must fix.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import yaml

from optlog.errors import BadInput

try:  # the C loader is 5-10x faster where libyaml is present
    from yaml import CSafeDumper as _Dumper
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
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


def parse_text(text: str, file: str) -> Any:
    """Parse YAML, turning syntax errors into BadInput with line and column."""
    try:
        return yaml.load(text, Loader=_Loader)
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


def validate(model: type[T], data: Any, text: str | None, file: str) -> T:
    """Validate `data` with a pydantic model; the first error becomes BadInput(file, line, field)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)  # type: ignore[attr-defined,no-any-return]
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err.get("loc", ()))
        fld = ".".join(str(p) for p in loc) or None
        line = line_of(text, loc) if text is not None else None
        n = e.error_count()
        more = f" (and {n - 1} more)" if n > 1 else ""
        raise BadInput(f"{err['msg']}{more}", file=file, line=line, field=fld, code="invalid_field") from None


def load_model(model: type[T], path: Path, rel: str | None = None) -> T:
    text = path.read_text(encoding="utf-8")
    data = parse_text(text, rel or str(path))
    if data is None:
        data = {}
    return validate(model, data, text, rel or str(path))


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


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
