"""Read a page of rounds from fewer pages of disk.

A table's page of 50 rounds read, cold, about 250 blocks, one random read each
(``bench.ledger --cold``, 1,000,000 rounds): per round, its ``rounds`` row, then the TOAST
index and TOAST heap for the ruleset (the page reads the money precision from it), then
its seats' index entries and their ``round_players`` rows. Two changes bring that to about
135 (about 55 for the rounds, about 80 for their seats):

- ``rounds.ruleset`` is stored MAIN: kept in the row (compressed only if the row is still
  too large), moved out of line only as a last resort. At about 1.2 KB it crossed the 2 KB
  TOAST target together with the rest of the row, so it went out of line, and reading a
  round's precision cost two or three more blocks. The request and the result (the
  explanation) still go out of line first. Only rows written from now on are stored so;
  nothing is rewritten, and older rounds read as before.
- the primary key of ``round_players`` carries the columns a page shows (player_id,
  points, amount), so a page's seats are read from the index alone.

Each table is locked in a transaction of its own, so the migration never holds one while
it waits for the other (a settle locks rounds, then round_players: holding both, in the
other order, deadlocked with it). The storage is set first, under ``rounds``'s ACCESS
EXCLUSIVE lock. The new key is built CONCURRENTLY, so a live ledger keeps taking rounds
meanwhile, then takes the constraint's name under ``round_players``'s. Each lock waits at
most LOCK_TIMEOUT for the settles and readers in progress: past that the migration stops
and may simply be run again. A key built but not swapped in is left valid, and written by
every settle, until that second run drops it and builds it again; one whose build was
interrupted is left invalid, and ``flask --app app reindex`` drops that too.

Revision ID: 0017_page_reads
Revises: 0016_unread_line_index
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017_page_reads"
down_revision: str | None = "0016_unread_line_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CONSTRAINT = "pk_round_players"
KEY = "operator_id, round_id, seat"
INCLUDE = "player_id, points, amount"
BUILDING = "pk_round_players_building"
LOCK_TIMEOUT = "5s"


def _storage(storage: str) -> None:
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    op.execute(f"ALTER TABLE rounds ALTER COLUMN ruleset SET STORAGE {storage}")


def _primary_key(include: str | None) -> None:
    """Build the key's new index beside the old one, then make it the primary key; this
    commits the transaction before it, so no lock on rounds is held meanwhile."""
    covering = f" INCLUDE ({include})" if include else ""
    with op.get_context().autocommit_block():
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {BUILDING}")  # a failed earlier try
        op.execute(f"CREATE UNIQUE INDEX CONCURRENTLY {BUILDING} ON round_players ({KEY})"
                   f"{covering}")
    op.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    op.execute(f"ALTER TABLE round_players DROP CONSTRAINT {CONSTRAINT}, "
               f"ADD CONSTRAINT {CONSTRAINT} PRIMARY KEY USING INDEX {BUILDING}")


def upgrade() -> None:
    _storage("MAIN")
    _primary_key(INCLUDE)


def downgrade() -> None:
    _storage("EXTENDED")  # first, as in upgrade: the key's build then commits it
    _primary_key(None)
