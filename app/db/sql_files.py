"""The rules the database enforces, as SQL files: one a function, the triggers, the grants.

``app/db/sql/`` holds today's definition of every function, trigger and grant of the
ledger, each file with comments that say what it refuses and why: the file is the rule.
A migration never patches another's text. The one that changes a rule copies the files
it installs into a folder of its own, ``migrations/sql/<its number>/``, and installs that
frozen copy, so every old revision still makes what it made. The head's copy equals
``app/db/sql/`` (tests/unit/test_frozen_sql.py), and so does what the head installs
(tests/integration/test_sql_files.py).

The files are plain SQL that psql runs as they are (``psql -v runtime_role=... -v
writer_role=... -f``): the only thing filled in here is the two roles' names, written
``:"runtime_role"`` and ``:"writer_role"`` as psql writes its variables. Nothing else is
changed, so what a migration installs is what its folder says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import Connection

FOLDER = Path(__file__).with_name("sql")
# A role name as app.config checks DB_RUNTIME_ROLE: quoting it is then only a formality.
_ROLE = re.compile(r"[a-z_][a-z0-9_]*")
# The trigger statements a migration compares with the database, and never runs.
TRIGGERS = "triggers.sql"


def writer_role(runtime_role: str) -> str:
    """Return the name of the NOLOGIN role that owns the append functions."""
    return f"{runtime_role}_writer"


def sql_text(path: Path, runtime_role: str) -> str:
    """Return the SQL of ``path`` with the runtime and writer roles' names filled in."""
    if not _ROLE.fullmatch(runtime_role):
        raise ValueError(f"runtime role {runtime_role!r} is not a plain lower-case name")
    return (path.read_text(encoding="utf-8")
            .replace(':"runtime_role"', f'"{runtime_role}"')
            .replace(':"writer_role"', f'"{writer_role(runtime_role)}"'))


def install(connection: Connection, folder: Path, files: Iterable[str],
            runtime_role: str) -> None:
    """Run each of ``files`` of ``folder``, in order, in ``connection``'s transaction.

    Sent on the driver's cursor without parameters, so the text reaches the server as it
    is (a ``%`` in a message is not taken for a placeholder)."""
    cursor = connection.connection.cursor()
    try:
        for name in files:
            cursor.execute(sql_text(folder / name, runtime_role))
    finally:
        cursor.close()


def _statements(sql: str) -> list[str]:
    """Return the statements of ``sql`` that holds no dollar-quoted body: its comments
    dropped, each statement's whitespace made one space."""
    bare = re.sub(r"--[^\n]*", "", sql)
    return [" ".join(part.split()) for part in bare.split(";") if part.strip()]


TRIGGER_DEFINITIONS = """
SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
WHERE NOT t.tgisinternal AND t.tgrelid IN (
    SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace)
"""


def trigger_differences(connection: Connection, folder: Path) -> tuple[list[str], list[str]]:
    """Return the triggers ``folder``'s triggers.sql names that the database lacks, and
    those the database has that it does not name (each as pg_get_triggerdef gives it)."""
    wanted = set(_statements((folder / TRIGGERS).read_text(encoding="utf-8")))
    found = {" ".join(str(d).split())
             for d in connection.exec_driver_sql(TRIGGER_DEFINITIONS).scalars()}
    return sorted(wanted - found), sorted(found - wanted)


def check_triggers(connection: Connection, folder: Path) -> None:
    """Raise unless the database's triggers are those ``folder``'s triggers.sql names."""
    missing, extra = trigger_differences(connection, folder)
    if missing or extra:
        raise RuntimeError(f"the append-only triggers are not those of {folder}/{TRIGGERS}: "
                           f"missing {missing}, not named there {extra}")
