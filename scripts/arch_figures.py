"""The architecture's figures, for the closing notes and BENCHMARKS-style before/after tables:
import-linter contracts broken, imports deferred inside functions (optlog's own, by package; third-party
ones, and how many of those lack a `# deferred: <reason>` comment), `except ImportError` around optlog's own imports,
breaches of the import-hygiene rules (tests/architecture/test_import_hygiene.py) by package, SQL outside `store/`
(modules outside optlog/store that import sqlalchemy or sqlmodel at run time), README lines.

    python scripts/arch_figures.py [ROOT]      # ROOT: a checkout (default: this one)

Prints one JSON document. mypy is run separately (`mypy optlog`), as CI does.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path


def deferred_imports(pkg: Path) -> dict[str, object]:
    """Imports inside functions: optlog's own (by package: `optlog/service/x.py` counts under
    `service`), third-party ones, and how many third-party ones lack a `# deferred: <reason>`."""
    own = third = total_internal = unreasoned = 0
    guarded = 0
    by_package: dict[str, int] = {}
    for f in sorted(pkg.rglob("*.py")):
        rel = f.relative_to(pkg)
        package = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        lines = f.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
        seen: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                if isinstance(node, ast.ImportFrom) and node.level:
                    mod = "optlog"
                if (mod or "").startswith("optlog"):
                    total_internal += 1
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)) and id(sub) not in seen:
                        seen.add(id(sub))
                        mod = sub.module if isinstance(sub, ast.ImportFrom) else sub.names[0].name
                        if (mod or "").startswith("optlog") or (isinstance(sub, ast.ImportFrom) and sub.level):
                            own += 1
                            by_package[package] = by_package.get(package, 0) + 1
                        else:
                            third += 1
                            if "# deferred:" not in " ".join(lines[sub.lineno - 1:sub.end_lineno]):
                                unreasoned += 1
            if isinstance(node, ast.Try):
                catches = [h for h in node.handlers if isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")]
                if catches and any(isinstance(s, ast.ImportFrom) and (s.module or "").startswith("optlog") for s in node.body):
                    guarded += 1
    return {"internal_imports": total_internal, "deferred_internal": own,
            "deferred_internal_by_package": dict(sorted(by_package.items(), key=lambda kv: -kv[1])),
            "deferred_third_party": third, "deferred_third_party_without_reason": unreasoned,
            "except_importerror_around_optlog": guarded}


def sql_outside_store(pkg: Path) -> dict[str, object]:
    """Run-time imports of sqlalchemy/sqlmodel (a TYPE_CHECKING block is no SQL) outside store/."""
    files: dict[str, int] = {}
    for f in sorted(pkg.rglob("*.py")):
        rel = f.relative_to(pkg.parent).as_posix()
        if rel.startswith("optlog/store/"):
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"))
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(m.split(".")[0] in ("sqlalchemy", "sqlmodel") for m in mods):
                files[rel] = files.get(rel, 0) + 1
    return {"sql_imports_outside_store": sum(files.values()), "sql_modules_outside_store": sorted(files)}


def hygiene(root: Path) -> dict[str, object]:
    """The import-hygiene rules of tests/architecture/test_import_hygiene.py (this checkout's, applied
    to ROOT): breaches by package, deferred imports of optlog's own modules other than the two
    doorways the rules allow (the ORM tables in store/, the service layer in the TUI)."""
    spec = importlib.util.spec_from_file_location(
        "import_hygiene", Path(__file__).resolve().parents[1] / "tests/architecture/test_import_hygiene.py")
    if spec is None or spec.loader is None:
        return {}
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    found: dict[str, list[str]] = mod.violations(root)
    by_package: dict[str, int] = {}
    for rel, vs in found.items():
        parts = rel.split("/")
        package = parts[1] if len(parts) > 2 else parts[1].removesuffix(".py")
        by_package[package] = by_package.get(package, 0) + len(vs)
    own = sum(1 for vs in found.values() for v in vs if "optlog's own" in v)
    return {"import_rule_breaches": sum(by_package.values()),
            "import_rule_breaches_by_package": dict(sorted(by_package.items(), key=lambda kv: -kv[1])),
            "files_breaking_import_rules": len(found), "deferred_internal_not_allowed": own}


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    return str(exe) if exe.exists() else "lint-imports"


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    out: dict[str, object] = deferred_imports(root / "optlog")
    out.update(hygiene(root))
    out.update(sql_outside_store(root / "optlog"))
    out["readme_lines"] = len((root / "README.md").read_text(encoding="utf-8").splitlines())
    p = subprocess.run([_lint_imports(), "--no-cache"], cwd=root, capture_output=True, text=True)
    out["lint_imports"] = next((l for l in p.stdout.splitlines() if l.startswith("Contracts:")), p.stdout[-300:])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
