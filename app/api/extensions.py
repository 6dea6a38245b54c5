"""Names under which create_app keeps shared objects in ``app.extensions``."""

from __future__ import annotations

# The app's SchemaGate (app.db.schema): requests that need the database pass it first.
SCHEMA_GATE = "schema_gate"
