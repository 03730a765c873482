"""The architecture's figures, for the closing notes and BENCHMARKS-style before/after tables:
import-linter contracts broken, internal imports deferred inside functions (and how many of those
name optlog's own modules), `except ImportError` around optlog's own imports, README lines.

    python scripts/arch_figures.py [ROOT]      # ROOT: a checkout (default: this one)

Prints one JSON document. mypy is run separately (`mypy optlog`), as CI does.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path


def deferred_imports(pkg: Path) -> dict[str, int]:
    own = third = total_internal = 0
    guarded = 0
    for f in sorted(pkg.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                if isinstance(node, ast.ImportFrom) and node.level:
                    mod = "optlog"
                if (mod or "").startswith("optlog"):
                    total_internal += 1
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        mod = sub.module if isinstance(sub, ast.ImportFrom) else sub.names[0].name
                        if (mod or "").startswith("optlog"):
                            own += 1
                        else:
                            third += 1
            if isinstance(node, ast.Try):
                catches = [h for h in node.handlers if isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")]
                if catches and any(isinstance(s, ast.ImportFrom) and (s.module or "").startswith("optlog") for s in node.body):
                    guarded += 1
    return {"internal_imports": total_internal, "deferred_internal": own, "deferred_third_party": third,
            "except_importerror_around_optlog": guarded}


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    out: dict[str, object] = deferred_imports(root / "optlog")
    out["readme_lines"] = len((root / "README.md").read_text(encoding="utf-8").splitlines())
    p = subprocess.run(["lint-imports", "--no-cache"], cwd=root, capture_output=True, text=True)
    out["lint_imports"] = next((l for l in p.stdout.splitlines() if l.startswith("Contracts:")), p.stdout[-300:])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
