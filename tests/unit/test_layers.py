"""Dependencies point inward (style.md): each layer imports only what it may.

``app/domain`` imports only the standard library; ``app/services`` reaches storage only
through its own protocols (app.services.uow), so it imports no database driver, no web
framework and none of the outer layers; ``app/db`` implements those protocols and knows
nothing of the API or the console.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
FORBIDDEN = {
    "services": ("sqlalchemy", "psycopg", "flask", "app.db", "app.api", "app.console"),
    "db": ("app.api", "app.console"),
}


def imports_of(path: Path) -> set[str]:
    """Return every module ``path`` imports by absolute name (in functions too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            # ``from app import db`` imports app.db.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _modules(layer: str) -> list[Path]:
    """Every module of the layer, those of its packages (app/domain/rulesets) included."""
    return sorted((APP / layer).rglob("*.py"))


@pytest.mark.parametrize("path", _modules("domain"),
                         ids=lambda p: str(p.relative_to(APP / "domain")))
def test_the_domain_imports_only_the_standard_library(path: Path) -> None:
    foreign = {name for name in imports_of(path)
               if name.split(".")[0] not in sys.stdlib_module_names
               and not _within(name, "app.domain")}
    assert not foreign, f"domain/{path.relative_to(APP / 'domain')} imports {sorted(foreign)}"


@pytest.mark.parametrize(("layer", "path"),
                         [(layer, p) for layer in FORBIDDEN for p in _modules(layer)],
                         ids=lambda v: v if isinstance(v, str) else v.name)
def test_a_layer_imports_nothing_it_may_not(layer: str, path: Path) -> None:
    found = {name for name in imports_of(path)
             if any(_within(name, banned) for banned in FORBIDDEN[layer])}
    assert not found, f"{layer}/{path.name} imports {sorted(found)}"


def test_the_rule_sees_every_way_of_importing(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import sqlalchemy.orm\nfrom app import db\n"
                      "def later():\n    from flask import g\n")
    found = imports_of(module)
    assert {"sqlalchemy.orm", "app.db", "flask"} <= found
    assert _within("sqlalchemy.orm", "sqlalchemy") and not _within("app.dbx", "app.db")
