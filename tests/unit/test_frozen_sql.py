"""The head migration installs a frozen copy of app/db/sql, equal to it file for file.

A migration that changes a rule copies app/db/sql into migrations/sql/<its number>/ and
installs that copy (app.db.sql_files): the latest copy is the head's, and equals the
files a reader opens. Older copies stay as their migrations made them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from app.db.schema import alembic_config, head_revisions
from app.db.sql_files import FOLDER

REPO = Path(__file__).resolve().parents[2]
FROZEN = REPO / "migrations" / "sql"


def _files(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*"))}


def _head_module() -> ModuleType:
    from alembic.script import ScriptDirectory

    (head,) = head_revisions()
    path = Path(ScriptDirectory.from_config(alembic_config()).get_revision(head).path)
    spec = importlib.util.spec_from_file_location("head_revision", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_latest_frozen_copy_equals_the_sql_files():
    latest = max(FROZEN.iterdir(), key=lambda folder: folder.name)
    assert _files(latest) == _files(FOLDER)


def test_the_head_migration_installs_the_latest_frozen_copy():
    head = _head_module()
    latest = max(FROZEN.iterdir(), key=lambda folder: folder.name)
    assert latest == head.FROZEN
    # Every file but the triggers' (compared, never run) is installed.
    assert set(head.FILES) == set(_files(latest)) - {"triggers.sql"}


def test_each_frozen_copy_is_named_by_its_migration():
    revisions = {path.name[:4] for path in (REPO / "migrations" / "versions").glob("*.py")}
    assert {folder.name for folder in FROZEN.iterdir()} <= revisions
