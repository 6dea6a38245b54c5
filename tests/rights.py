"""What the runtime role is refused for want of a right, on one server and on a Citus node.

Citus refuses function DDL on a worker before PostgreSQL checks any right ("operation is
not allowed on this node", XX000): an app entering by a worker (``TEST_ENTRY_NODE``) meets
that refusal first. It is not what keeps the runtime role out: any session may turn Citus's
propagation off, and then the worker's PostgreSQL decides alone. So a refusal by Citus is
tried again that way, and must then be PostgreSQL's, for want of a right.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

INSUFFICIENT_PRIVILEGE = "42501"
NOT_ON_THIS_NODE = "operation is not allowed on this node"


def _refusal(engine: Engine, statement: str, params: dict[str, Any],
             *, without_citus: bool = False) -> Any:
    with engine.connect() as connection, pytest.raises(DBAPIError) as caught:
        if without_citus:
            connection.execute(text("SET LOCAL citus.enable_ddl_propagation TO off"))
        connection.execute(text(statement), params)
    return caught.value.orig


def assert_refused_a_right(engine: Engine, statement: str,
                           params: dict[str, Any] | None = None) -> None:
    """Run ``statement`` on ``engine`` and check that it is refused for want of a right."""
    error = _refusal(engine, statement, params or {})
    if error.sqlstate == "XX000" and NOT_ON_THIS_NODE in str(error):
        error = _refusal(engine, statement, params or {}, without_citus=True)
    assert error.sqlstate == INSUFFICIENT_PRIVILEGE, error
