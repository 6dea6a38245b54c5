"""Fair-play figures: what each player's choice gave each other, per stored round.

``flask fairplay run`` (app/services/fairplay.py) reads settled 十三支 rounds and appends,
per round and advisor version, one ``fairplay_rounds`` row (the round was analysed, with
each chooser's evidence: cards, rows played, rows advised) and one ``fairplay_pairs`` row
per ordered pair of seats (T, D, scoop, agreement, points moved, the advisor's seed). The
figures never touch the money tables and are never changed: a new advisor version appends
its own. The runtime role may read and append them, nothing else; the triggers refuse an
UPDATE, DELETE or TRUNCATE even to the owner. API keys may now hold ``fairplay:read``, the
scope of ``GET /v1/fairplay/pairs`` and ``/cases`` (a downgrade refuses while a key holds
it). Both tables are keyed by operator (Citus: created here, distributed with their
triggers by the next ``citus distribute``).

Revision ID: 0032_fairplay
Revises: 0031_cash_movements
Create Date: 2026-12-04
"""

from collections.abc import Sequence
from pathlib import Path

from alembic import context, op

from app.db.sql_files import check_triggers, install

revision: str = "0032_fairplay"
down_revision: str | None = "0031_cash_movements"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("fairplay_rounds", "fairplay_pairs")
# The rules as files (app/db/sql): this revision's grants and triggers name the new tables.
FROZEN = Path(__file__).resolve().parents[1] / "sql" / "0032"
FILES = ("ledger_refuse_change.sql", "keys_refuse_change.sql", "ledger_canonical_json.sql",
         "ledger_take.sql", "ledger_append.sql", "match_open.sql", "match_round_add.sql",
         "match_leave_add.sql", "checkpoint_add.sql", "grants.sql")
BEFORE = FROZEN.with_name("0030")
OLD_SCOPES = "'rounds:write', 'rounds:read', 'ledger:read', 'reconcile:read', 'admin'"
NEW_SCOPES = OLD_SCOPES[:-len(", 'admin'")] + ", 'fairplay:read', 'admin'"


def _scopes(listed: str) -> None:
    """Let keys hold the scopes ``listed``: one constraint change per statement (Citus)."""
    op.execute("ALTER TABLE api_keys DROP CONSTRAINT ck_api_keys_scopes_known")
    op.execute("ALTER TABLE api_keys ADD CONSTRAINT ck_api_keys_scopes_known CHECK "
               f"(cardinality(scopes) >= 1 AND scopes <@ ARRAY[{listed}]::text[])")


def upgrade() -> None:
    role: str = context.config.attributes["runtime_role"]
    op.execute("CREATE TABLE fairplay_rounds ("
               "operator_id text NOT NULL, round_id uuid NOT NULL, "
               "advisor_version text NOT NULL, table_id text NOT NULL, "
               "played_at timestamp with time zone NOT NULL, ruleset_name text NOT NULL, "
               "stake numeric NOT NULL, pairs integer NOT NULL, evidence jsonb NOT NULL, "
               "analysed_at timestamp with time zone NOT NULL DEFAULT now(), "
               "CONSTRAINT pk_fairplay_rounds PRIMARY KEY "
               "(operator_id, advisor_version, round_id), "
               "CONSTRAINT ck_fairplay_rounds_pairs_nonnegative CHECK (pairs >= 0))")
    op.execute("CREATE INDEX ix_fairplay_rounds_operator_id_advisor_version_played_at "
               "ON fairplay_rounds (operator_id, advisor_version, played_at)")
    op.execute("CREATE TABLE fairplay_pairs ("
               "operator_id text NOT NULL, round_id uuid NOT NULL, "
               "advisor_version text NOT NULL, player_a text NOT NULL, player_b text NOT NULL, "
               "table_id text NOT NULL, played_at timestamp with time zone NOT NULL, "
               "stake numeric NOT NULL, seat_a smallint NOT NULL, seat_b smallint NOT NULL, "
               "t integer NOT NULL, d double precision NOT NULL, scoop smallint NOT NULL, "
               "agreed boolean NOT NULL, moved integer NOT NULL, seed text NOT NULL, "
               "CONSTRAINT pk_fairplay_pairs PRIMARY KEY "
               "(operator_id, advisor_version, player_a, player_b, round_id), "
               "CONSTRAINT ck_fairplay_pairs_scoop CHECK (scoop IN (-1, 0, 1)), "
               "CONSTRAINT ck_fairplay_pairs_two_players CHECK (player_a <> player_b))")
    op.execute("CREATE INDEX ix_fairplay_pairs_operator_id_advisor_version_played_at "
               "ON fairplay_pairs (operator_id, advisor_version, played_at)")
    for table in TABLES:
        op.execute(f"CREATE TRIGGER {table}_refuse_update_delete BEFORE UPDATE OR DELETE "
                   f"ON {table} FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()")
        op.execute(f"CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table} "
                   "FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()")
    _scopes(NEW_SCOPES)
    check_triggers(op.get_bind(), FROZEN)
    install(op.get_bind(), FROZEN, FILES, role)


def downgrade() -> None:
    op.execute("DO $$ BEGIN IF EXISTS (SELECT FROM api_keys WHERE 'fairplay:read' = ANY(scopes)) "
               "THEN RAISE EXCEPTION 'keys hold fairplay:read: revoke and remove them first'; "
               "END IF; END $$")
    _scopes(OLD_SCOPES)
    for table in reversed(TABLES):
        op.execute(f"DROP TABLE {table}")
    install(op.get_bind(), BEFORE, FILES, context.config.attributes["runtime_role"])
