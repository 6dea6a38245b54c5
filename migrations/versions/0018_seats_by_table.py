"""A table's page of rounds reads its seats from a few index pages.

After 0017 a table's page of 50 rounds, cold, still read 60 to 80 blocks for its seats
(``bench.ledger --cold``, 1,000,000 rounds at 2,000 tables): the primary key of
``round_players`` was ordered by round id, a table's rounds lie among every other table's,
so each round's seats were an index page of their own.

Here a seat carries its round's table and place in the chain (``table_id``, ``chain_seq``,
as a ledger line already carries the table) and the primary key is (operator_id, table_id,
chain_seq, seat), covering what a page shows. A page of a table is a run of its chain, so
its seats lie together between its lowest and highest chain_seq, whatever the round ids
(the service makes random ones). A page of every table reads its seats through the unique
(operator_id, round_id, player_id) and their rows, which lie in append order, together too.
``ledger_append`` copies both from the round's row: the caller does not pass them. Audit
verify reports a seat that does not carry its round's.

Every step locks only ``round_players``, never while it waits for ``rounds`` (a settle
locks rounds, then round_players), and waits at most LOCK_TIMEOUT for the settles and
readers in progress:

1. the columns, nullable, and ``ledger_append`` writing them: from here on every seat has
   them (one whose append began earlier may still commit without);
2. the seats written before are given their round's (BACKFILL, in batches, each its own
   transaction, which holds appends back for its own time only);
3. NOT NULL, by a CHECK added NOT VALID and validated under a lock appends do not wait
   for, so that SET NOT NULL need not scan the table under an exclusive one; VACUUM;
4. the new key, built CONCURRENTLY beside the old one, then swapped in.

At 1,000,000 rounds (4,000,000 seats) on the development machine it took about 3.6 min,
while a probe taking round_players' append lock every 20 ms waited at most 1.4 s. A run
stopped part way may be run again: each step checks what is done. Downgrade swaps 0017's
key back, restores 0014's ``ledger_append`` and drops the columns.

Revision ID: 0018_seats_by_table
Revises: 0017_page_reads
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0018_seats_by_table"
down_revision: str | None = "0017_page_reads"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CONSTRAINT = "pk_round_players"
BUILDING = "pk_round_players_building"
KEY = "operator_id, table_id, chain_seq, seat"
INCLUDE = "round_id, player_id, points, amount"
KEY_0017 = "operator_id, round_id, seat"
INCLUDE_0017 = "player_id, points, amount"
TRIGGER = "round_players_refuse_update_delete"
LOCK_TIMEOUT = "5s"

# Frozen with this revision, as 0014's (tests/e2e/test_append_functions.py compares them
# with the models): a seat's table_id is not among them, ledger_append copies the round's.
ROUND_COLUMNS = ("id, operator_id, table_id, kind, ruleset_name, ruleset, ruleset_hash, "
                 "stake, request, result, idempotency_key, body_hash, created_at, "
                 "content_hash, prev_hash, chain_seq, reverses_round_id")
PLAYER_FIELDS = ("operator_id text, round_id uuid, seat smallint, player_id text, "
                 "balance_before numeric, points integer, amount numeric, fee numeric, "
                 "balance_after numeric, foul boolean, special text")
LINE_FIELDS = ("round_id uuid, line_no integer, account text, kind text, amount numeric, "
               "balance_before numeric, balance_after numeric, operator_id text, "
               "table_id text, created_at timestamp with time zone")


def _names(fields: str) -> str:
    return ", ".join(field.split()[0] for field in fields.split(", "))


def _append(copies_table: bool) -> str:
    """``ledger_append`` as 0014 made it, or copying the round's table and chain_seq to its
    seats."""
    players = _names(PLAYER_FIELDS)
    columns, values = ((f"{players}, table_id, chain_seq",
                        f"{players}, p_round ->> 'table_id', (p_round ->> 'chain_seq')::bigint")
                       if copies_table else (players, players))
    return f"""
CREATE OR REPLACE FUNCTION ledger_append(p_round jsonb, p_players jsonb, p_lines jsonb)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO rounds ({ROUND_COLUMNS})
    SELECT {ROUND_COLUMNS} FROM jsonb_populate_record(NULL::rounds, p_round);
    INSERT INTO round_players ({columns})
    SELECT {values} FROM jsonb_to_recordset(p_players) AS row_({PLAYER_FIELDS});
    INSERT INTO ledger_lines ({_names(LINE_FIELDS)})
    SELECT {_names(LINE_FIELDS)} FROM jsonb_to_recordset(p_lines) AS row_({LINE_FIELDS});
    EXECUTE 'UPDATE chains SET seq = $1, head_hash = $2 '
            'WHERE operator_id = $3 AND table_id = $4'
        USING (p_round ->> 'chain_seq')::bigint, p_round ->> 'content_hash',
              p_round ->> 'operator_id', p_round ->> 'table_id';
END;
$$
"""


def _lock_timeout() -> None:
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")


def _commit() -> None:
    """End the migration's transaction here: the next step starts a transaction of its own."""
    with op.get_context().autocommit_block():
        pass


def _primary_key(key: str, include: str) -> None:
    """Build the key's new index beside the old one, then make it the primary key."""
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {BUILDING}")  # a failed earlier try
        op.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {BUILDING} ON round_players ({key}) "
                   f"INCLUDE ({include})")
    _lock_timeout()
    op.execute(f"ALTER TABLE round_players DROP CONSTRAINT {CONSTRAINT}, "
               f"ADD CONSTRAINT {CONSTRAINT} PRIMARY KEY USING INDEX {BUILDING}")


# The seats written before this revision are given their round's table a few hundred
# table pages at a time, each batch in a transaction of its own (a DO block run outside
# one may COMMIT), with the append-only trigger off only inside it. A batch locks
# round_players against appends for its own time, a fraction of a second here, not the
# minutes one UPDATE of every seat took (183 s at 1,000,000 rounds). The table's size is
# read under that lock, after every append that began before the column: a seat such an
# append wrote without its table lies below it.
BATCH_PAGES = 128
BACKFILL = f"""
DO $$
DECLARE
    first_page bigint := 0;
    last_page bigint;
BEGIN
    PERFORM set_config('lock_timeout', '{LOCK_TIMEOUT}', true);
    LOCK TABLE round_players IN SHARE ROW EXCLUSIVE MODE;
    last_page := pg_relation_size('round_players') / current_setting('block_size')::bigint;
    COMMIT;
    WHILE first_page <= last_page LOOP
        PERFORM set_config('lock_timeout', '{LOCK_TIMEOUT}', true);
        ALTER TABLE round_players DISABLE TRIGGER {TRIGGER};
        UPDATE round_players p SET table_id = r.table_id, chain_seq = r.chain_seq
        FROM rounds r
        WHERE p.ctid >= format('(%s,0)', first_page)::tid
          AND p.ctid < format('(%s,0)', first_page + {BATCH_PAGES})::tid
          AND p.table_id IS NULL AND r.operator_id = p.operator_id AND r.id = p.round_id;
        ALTER TABLE round_players ENABLE TRIGGER {TRIGGER};
        COMMIT;
        first_page := first_page + {BATCH_PAGES};
    END LOOP;
END
$$
"""
# NOT NULL without scanning the table under an exclusive lock: a CHECK added NOT VALID,
# validated under a lock that appends do not wait for, lets SET NOT NULL skip its scan.
TABLE_SET = "ck_round_players_place_set"


def upgrade() -> None:
    _lock_timeout()
    op.execute("ALTER TABLE round_players ADD COLUMN IF NOT EXISTS table_id text, "
               "ADD COLUMN IF NOT EXISTS chain_seq bigint")
    op.execute(_append(copies_table=True))
    _commit()
    with op.get_context().autocommit_block():
        op.execute(BACKFILL)
    _lock_timeout()
    op.execute(f"ALTER TABLE round_players DROP CONSTRAINT IF EXISTS {TABLE_SET}, "
               f"ADD CONSTRAINT {TABLE_SET} CHECK (table_id IS NOT NULL AND chain_seq IS NOT NULL) "
               "NOT VALID")
    _commit()
    _lock_timeout()
    op.execute(f"ALTER TABLE round_players VALIDATE CONSTRAINT {TABLE_SET}")
    _commit()
    _lock_timeout()
    op.execute("ALTER TABLE round_players ALTER COLUMN table_id SET NOT NULL, "
               "ALTER COLUMN chain_seq SET NOT NULL")
    op.execute(f"ALTER TABLE round_players DROP CONSTRAINT {TABLE_SET}")
    with op.get_context().autocommit_block():
        # The UPDATEs left every earlier seat's old version dead: reclaim them (appends go
        # on meanwhile) before the key is built over the table.
        op.execute("VACUUM (ANALYZE) round_players")
    _primary_key(KEY, INCLUDE)


def downgrade() -> None:
    _primary_key(KEY_0017, INCLUDE_0017)
    _commit()
    _lock_timeout()
    op.execute(_append(copies_table=False))
    op.execute("ALTER TABLE round_players DROP COLUMN table_id, DROP COLUMN chain_seq")
