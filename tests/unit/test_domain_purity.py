"""The domain core imports only the standard library (style.md: a pure core with thin edges)."""

import ast
import sys
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[2] / "app" / "domain"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(DOMAIN.glob("*.py")), ids=lambda p: p.name)
def test_domain_module_imports_only_stdlib_and_the_domain(path: Path) -> None:
    foreign = {
        name for name in _imports(path)
        if name.split(".")[0] not in sys.stdlib_module_names
        and not name.startswith("app.domain")
    }
    assert not foreign, f"{path.name} imports {sorted(foreign)}"


def test_the_purity_check_sees_a_foreign_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import flask\nfrom app.db import models\n")
    assert _imports(module) == {"flask", "app.db"}
