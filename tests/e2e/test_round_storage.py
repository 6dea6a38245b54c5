"""Where a round's result is stored: in its row, compressed (migration 0037)."""

from __future__ import annotations

import uuid

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from bench.load import make_bodies


def test_settled_results_stay_in_their_rows_compressed(own_ledger) -> None:
    ledger = own_ledger()
    # Rounds of every game, as bench.load makes them (4 players, or a banker and 4).
    for body in make_bodies(8, seed=5, tables=2):
        answer = ledger.client.post("/v1/rounds", json=body,
                                    headers={"Idempotency-Key": uuid.uuid4().hex})
        assert answer.status_code == 201, answer.get_json()
    engine = create_engine(ledger.owner, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            options, toast = connection.execute(text(
                "SELECT reloptions, reltoastrelid::regclass::text FROM pg_class "
                "WHERE oid = 'rounds'::regclass")).one()
            assert "toast_tuple_target=4080" in (options or [])
            sizes = connection.execute(text(
                "SELECT octet_length(result), pg_column_size(result), "
                "pg_column_compression(result) FROM rounds")).all()
            chunks = connection.execute(text(f"SELECT count(*) FROM {toast}")).scalar()
    finally:
        engine.dispose()
    assert len(sizes) == 8
    # Each result compressed (lz4, or pglz where the server has no lz4) and in its row:
    # the TOAST table holds nothing of them.
    assert all(stored < written and method in ("lz4", "pglz")
               for written, stored, method in sizes), sizes
    assert chunks == 0
