"""Tamper evidence on real PostgreSQL: chains that never fork, verify naming edited rounds.

Each test settles under a fresh operator, so verifying "the operator's period" sees only
its own rounds. Edits behind the service's back disable the append-only trigger for one
statement inside one transaction, as a superuser repairing data by hand would.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ledger_rows import fresh_id
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from app.api.schemas import RoundRequestSchema
from app.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from app.db.models import Round
from app.db.unit_of_work import SqlUnitOfWorkFactory, UnitOfWork
from app.domain.cards import DECK
from app.services import audit, rounds
from app.services.signing import Signer
from tests.worked_examples import EX_000, EX_004, round_request

# Receipts are signed at append; these tests verify chains, not signatures.
SIGNER = Signer(Ed25519PrivateKey.generate())

def _settle(sessions: sessionmaker[Session], operator: str, table: str,
            case: dict[str, Any] = EX_004) -> dict[str, Any]:
    raw = round_request(case, table)
    return rounds.settle(RoundRequestSchema().load(raw), raw, operator_id=operator,
                         idempotency_key=uuid.uuid4().hex, uows=SqlUnitOfWorkFactory(sessions),
                            signer=SIGNER).body


def _reverse(sessions: sessionmaker[Session], operator: str, round_id: str) -> dict[str, Any]:
    raw = {"reason": "wrong table"}
    return rounds.reverse(uuid.UUID(round_id), raw["reason"], raw, operator_id=operator,
                          idempotency_key=uuid.uuid4().hex, uows=SqlUnitOfWorkFactory(sessions),
                            signer=SIGNER).body


def _verify(sessions: sessionmaker[Session], operator: str, **kwargs: Any) -> audit.Verification:
    now = datetime.now(UTC)
    return audit.verify(SqlUnitOfWorkFactory(sessions), SIGNER.keys, operator_id=operator,
                        created_from=now - timedelta(hours=1),
                        created_to=now + timedelta(hours=1), **kwargs)


def _chain(sessions: sessionmaker[Session], operator: str, table: str) -> list[Round]:
    with UnitOfWork(sessions) as uow:
        return list(uow.session.scalars(
            select(Round).where(Round.operator_id == operator, Round.table_id == table)
            .order_by(Round.chain_seq)))


# Triggers off for one transaction, as the owner: on Citus the setting reaches the workers.
REPLICA = ("SET LOCAL citus.propagate_set_commands = 'local'; "
           "SET LOCAL session_replication_role = replica")


def _tamper(engine: Engine, table: str, statement: str, **params: Any) -> None:
    """Run one statement with the append-only trigger of ``table`` off, in one transaction
    (the replica role, sent to the workers too on Citus)."""
    with engine.begin() as connection:
        connection.exec_driver_sql(REPLICA)
        changed = connection.execute(text(statement), params).rowcount
    assert changed >= 1, "the tampering statement changed nothing"


def _named(verification: audit.Verification) -> dict[str, set[str]]:
    named: dict[str, set[str]] = {}
    for difference in verification.differences:
        named.setdefault(difference.round_id, set()).add(difference.what)
    return named


# --- the chain ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def patient_sessions(settings: Settings) -> Iterator[sessionmaker[Session]]:
    """Sessions that wait for a chain's lock as long as a loaded CI machine may need.

    These tests pile rounds onto one chain on purpose; the service's 2 s lock timeout is
    for production traffic, where one table plays one round at a time.
    """
    engine = make_engine(replace(settings, db_lock_timeout_ms=60_000,
                                 db_statement_timeout_ms=60_000, db_pool_size=12,
                                 db_pool_timeout_s=60))
    yield make_sessionmaker(engine)
    engine.dispose()


def test_ten_concurrent_rounds_on_one_table_form_one_unbroken_chain(patient_sessions):
    sessions = patient_sessions
    operator, table = fresh_id("op"), fresh_id("t")
    start = threading.Barrier(10)
    errors: list[BaseException] = []

    def post() -> None:
        try:
            start.wait(timeout=60)
            _settle(sessions, operator, table)
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=post) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []

    chain = _chain(sessions, operator, table)
    assert [r.chain_seq for r in chain] == list(range(1, 11))
    assert chain[0].prev_hash is None
    for before, after in zip(chain, chain[1:], strict=False):
        assert after.prev_hash == before.content_hash
        assert after.created_at >= before.created_at
    verification = _verify(sessions, operator)
    assert verification.ok, verification.differences
    assert (verification.rounds, verification.chains) == (10, 1)


def test_a_locked_chain_holds_back_its_own_table_but_not_another(patient_sessions):
    sessions = patient_sessions
    operator, busy, free = fresh_id("op"), fresh_id("busy"), fresh_id("free")
    _settle(sessions, operator, busy)
    waiting = threading.Event()
    done: list[dict[str, Any]] = []

    def settle_busy() -> None:
        waiting.set()
        done.append(_settle(sessions, operator, busy))

    with UnitOfWork(sessions) as holder:
        holder.appends.start(operator, busy, fresh_id("key"))
        # Another table settles while this transaction holds the busy table's chain.
        other = _settle(sessions, operator, free)
        assert other["chain"]["seq"] == 1
        blocked = threading.Thread(target=settle_busy)
        blocked.start()
        waiting.wait(timeout=60)
        blocked.join(timeout=0.5)
        assert blocked.is_alive() and done == [], "the busy table's append did not wait"
    blocked.join(timeout=120)
    assert [body["chain"]["seq"] for body in done] == [2]


def test_the_content_hash_reads_back_the_same_in_any_session_time_zone(sessions, engine):
    operator, table = fresh_id("op"), fresh_id("t")
    body = _settle(sessions, operator, table)
    with Session(engine) as session:
        session.execute(text("SET TIME ZONE 'Asia/Taipei'"))
        round_ = session.get_one(Round, (operator, uuid.UUID(body["round_id"])))
        assert round_.created_at.utcoffset() == timedelta(hours=8)
        assert (rounds.content_hash(round_, round_.players, round_.lines)
                == round_.content_hash == body["chain"]["content_hash"])


def test_a_new_round_is_every_column_of_the_rounds_table_and_is_stored_as_made(sessions,
                                                                               engine):
    from dataclasses import FrozenInstanceError, fields

    from app.services.repositories import LINE_COLUMNS, PLAYER_COLUMNS, ROUND_COLUMNS

    assert sorted(f.name for f in fields(rounds.NewRound) if not f.name.startswith("_")
                  and f.name not in ("players", "lines")) == sorted(ROUND_COLUMNS)
    operator, table = fresh_id("op"), fresh_id("t")
    body = _settle(sessions, operator, table)
    with Session(engine) as session:
        stored = session.get_one(Round, (operator, uuid.UUID(body["round_id"])))
        made = rounds.NewRound(
            **{name: getattr(stored, name) for name in ROUND_COLUMNS if name not in (
                "content_hash", "content_version", "receipt_key_id", "receipt_signature")},
            players=[{name: getattr(p, name) for name in PLAYER_COLUMNS} for p in stored.players],
            lines=[{name: getattr(line, name) for name in LINE_COLUMNS} for line in stored.lines],
            signer=SIGNER)
        stored_players, stored_lines = list(stored.players), list(stored.lines)
    assert made.content_hash == stored.content_hash == body["chain"]["content_hash"]
    # Hashed over the request's and result's text written once, or over the values again
    # (as verify does): the same bytes.
    assert rounds.content_hash(made, stored_players, stored_lines) == made.content_hash
    assert (made.receipt_key_id, made.receipt_signature) == (
        stored.receipt_key_id, stored.receipt_signature)
    assert set(made.row()) == set(ROUND_COLUMNS)
    with pytest.raises(FrozenInstanceError):  # sealed: no column changes after its hash
        made.result = {}  # type: ignore[misc]


# --- verify -----------------------------------------------------------------------------------


def test_a_clean_ledger_with_a_reversal_verifies_clean(sessions):
    operator, first, second = fresh_id("op"), fresh_id("t"), fresh_id("t")
    played = [_settle(sessions, operator, first, EX_000) for _ in range(2)]
    _settle(sessions, operator, second, EX_004)
    _reverse(sessions, operator, played[0]["round_id"])
    verification = _verify(sessions, operator)
    assert verification.ok, verification.differences
    report = verification.to_json()
    assert {k: report[k] for k in ("checked", "ok", "findings", "next_cursor")} == {
        "checked": {"rounds": 4, "chains": 2}, "ok": True, "findings": [],
        "next_cursor": None}
    # The period reaches the present, so each chain is checked to its head.
    heads = {first: (3, _chain(sessions, operator, first)[-1].content_hash),
             second: (1, _chain(sessions, operator, second)[-1].content_hash)}
    assert {c["table_id"]: (c["last_seq"], c["head_hash"]) for c in report["chains"]} == heads
    only_second = _verify(sessions, operator, table_id=second)
    assert (only_second.rounds, only_second.chains) == (1, 1)


def _three_rounds(sessions: sessionmaker[Session]) -> tuple[str, str, list[dict[str, Any]]]:
    operator, table = fresh_id("op"), fresh_id("t")
    return operator, table, [_settle(sessions, operator, table, EX_000) for _ in range(3)]


def test_verify_names_the_round_whose_ledger_amount_was_changed(sessions, owner_engine):
    operator, _, played = _three_rounds(sessions)
    target = played[1]["round_id"]
    _tamper(owner_engine, "ledger_lines", "UPDATE ledger_lines SET amount = amount + 1 "
            "WHERE round_id = :r AND line_no = 1", r=target)
    verification = _verify(sessions, operator)
    # The lines are in the round's content (version 2): its hash fails too.
    assert _named(verification) == {target: {"lines_changed", "content_hash"}}
    details = [d.detail for d in verification.differences]
    assert any("line 1: amount" in d for d in details), details
    assert any("sum to 1" in d for d in details), details


def _unused_card(request: dict[str, Any]) -> str:
    used = {card for p in request["players"] for row in ("front", "middle", "back")
            for card in p[row]}
    return next(str(card) for card in DECK if str(card) not in used)


def test_verify_names_the_round_whose_stored_request_card_was_changed(sessions, owner_engine):
    operator, table, played = _three_rounds(sessions)
    target = played[2]["round_id"]
    card = _unused_card(round_request(EX_000, table))
    _tamper(owner_engine, "rounds", "UPDATE rounds SET request = jsonb_set(request, "
            "'{players,2,front,0}', to_jsonb(CAST(:card AS text))) WHERE id = :r",
            r=target, card=card)
    verification = _verify(sessions, operator)
    named = _named(verification)
    # Rows are judged against the round scored again, so its money moves may differ too.
    assert set(named) == {target} and {"content_hash", "result"} <= named[target]
    result = next(d for d in verification.differences if d.what == "result")
    assert result.detail.startswith("stored result differs from the round scored again: ")


def test_verify_names_the_round_whose_stored_result_was_changed(sessions, owner_engine):
    operator, _, played = _three_rounds(sessions)
    target = played[0]["round_id"]
    _tamper(owner_engine, "rounds", "UPDATE rounds SET result = jsonb_set(result::jsonb, "
            "'{players,0,points}', '999')::text WHERE id = :r", r=target)
    verification = _verify(sessions, operator)
    assert _named(verification) == {target: {"content_hash", "result"}}
    result = next(d for d in verification.differences if d.what == "result")
    points = EX_000["points"]["A"]
    assert f"players[0].points: expected {points}, stored 999" in result.detail, result.detail


def test_verify_names_the_round_whose_stored_player_row_was_changed(sessions, owner_engine):
    operator, _, played = _three_rounds(sessions)
    target = played[1]["round_id"]
    _tamper(owner_engine, "round_players", "UPDATE round_players SET balance_after = 0 "
            "WHERE round_id = :r AND seat = 0", r=target)
    assert _named(_verify(sessions, operator)) == {target: {"players_changed", "content_hash"}}


def test_verify_names_the_round_whose_seat_was_moved_to_another_table(sessions, owner_engine):
    """A seat's table and chain_seq place it in the primary key and on a table's pages
    (migration 0018); a place that is not its round's is named, though its money is
    unchanged."""
    operator, _, played = _three_rounds(sessions)
    target = played[2]["round_id"]
    _tamper(owner_engine, "round_players", "UPDATE round_players SET table_id = 'elsewhere' "
            "WHERE round_id = :r AND seat = 1", r=target)
    verification = _verify(sessions, operator)
    # Named by the walk of its round, and as a seat placed where no round of its is.
    assert _named(verification) == {target: {"players_changed", "stray_seats"}}
    [difference] = [d for d in verification.differences if d.what == "players_changed"]
    assert difference.detail.startswith("seat 1 carries table_id elsewhere, the round's is ")
    _tamper(owner_engine, "round_players", "UPDATE round_players SET chain_seq = 99 "
            "WHERE round_id = :r AND seat = 0", r=target)
    details = [d.detail for d in _verify(sessions, operator).differences]
    assert "seat 0 carries chain_seq 99, the round's is 3" in details, details


def test_verify_names_the_round_with_a_seat_stored_twice(sessions, owner_engine):
    """The key is (operator, table, chain_seq, seat): a second seat 0 under another table (and
    another player, for the unique (operator, round, player)) is a row the schema takes,
    and verify names it."""
    operator, _, played = _three_rounds(sessions)
    target = played[0]["round_id"]
    columns = ("operator_id, round_id, seat, balance_before, points, amount, fee, "
               "balance_after, foul, special, chain_seq")
    with owner_engine.begin() as connection:
        connection.execute(text(
            f"INSERT INTO round_players ({columns}, player_id, table_id) "
            f"SELECT {columns}, player_id || '-copy', 'copy' "
            "FROM round_players WHERE round_id = :r AND seat = 0"), {"r": target})
    details = [d.detail for d in _verify(sessions, operator).differences]
    assert "seat 0 is stored more than once" in details, details


def test_a_rewritten_hash_breaks_the_link_of_the_next_round(sessions, owner_engine):
    operator, _, played = _three_rounds(sessions)
    first, second = played[0]["round_id"], played[1]["round_id"]
    _tamper(owner_engine, "rounds",
            "UPDATE rounds SET content_hash = repeat('0', 64) WHERE id = :r",
            r=first)
    # The receipt signs the hash the round was appended with, not this one.
    assert _named(_verify(sessions, operator)) == {first: {"content_hash", "receipt_invalid"},
                                                   second: {"prev_hash"}}


def test_a_removed_round_is_a_gap_in_the_sequence(sessions, owner_engine):
    operator, _, played = _three_rounds(sessions)
    gone, after = played[1]["round_id"], played[2]["round_id"]
    for table in ("ledger_lines", "round_players"):
        _tamper(owner_engine, table, f"DELETE FROM {table} WHERE round_id = :r", r=gone)
    _tamper(owner_engine, "rounds", "DELETE FROM rounds WHERE id = :r", r=gone)
    verification = _verify(sessions, operator)
    assert _named(verification) == {after: {"seq_gap"}}
    assert verification.rounds == 2


def test_a_reversal_whose_line_no_longer_mirrors_its_round_is_named(sessions, owner_engine):
    operator, table = fresh_id("op"), fresh_id("t")
    original = _settle(sessions, operator, table)
    reversal = _reverse(sessions, operator, original["round_id"])
    _tamper(owner_engine, "ledger_lines", "UPDATE ledger_lines SET balance_after = 1 "
            "WHERE round_id = :r AND line_no = 2", r=reversal["round_id"])
    assert _named(_verify(sessions, operator)) == {
        reversal["round_id"]: {"lines_changed", "content_hash"}}


def test_verify_refuses_an_empty_period(sessions):
    now = datetime.now(UTC)
    with pytest.raises(ValueError, match="empty"):
        audit.verify(SqlUnitOfWorkFactory(sessions), SIGNER.keys, operator_id="x", created_from=now,
                     created_to=now)


def test_verify_names_the_missing_round_a_stray_line_names(sessions, owner_engine):
    """The lines have no foreign key to their round: a line added for a round no one
    stored is money a reader would see, and verify reports it."""
    operator, table, played = _three_rounds(sessions)
    ghost = uuid.uuid4()
    with owner_engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO ledger_lines (round_id, operator_id, table_id, created_at, line_no, "
            "account, kind, amount) SELECT :ghost, operator_id, table_id, created_at, n, "
            "'A', 'win', 5 FROM rounds, generate_series(1, 2) AS n WHERE id = :r"),
            {"ghost": ghost, "r": played[0]["round_id"]})
    verification = _verify(sessions, operator)
    assert _named(verification) == {str(ghost): {"stray_lines"}}
    (stray,) = verification.differences
    assert (stray.operator_id, stray.table_id, stray.chain_seq) == (operator, table, 0)
    assert "2 ledger line(s)" in stray.detail, stray.detail
    # Another operator's period does not see them; a page that stops early does not check.
    assert _verify(sessions, fresh_id("op")).ok
    assert _verify(sessions, operator, limit=1).differences == ()


def test_verify_names_no_stray_line_when_every_line_has_its_round(sessions):
    operator, _, _ = _three_rounds(sessions)
    assert _verify(sessions, operator).ok


def test_verify_names_every_round_whose_shared_ruleset_was_changed(sessions, owner_engine):
    """A ruleset is kept once per operator and hash (round_rulesets): changing it changes
    the content of every round played by it, and verify names each of them."""
    operator, _, played = _three_rounds(sessions)
    _tamper(owner_engine, "round_rulesets",
            "UPDATE round_rulesets SET ruleset = jsonb_set(ruleset, '{fee_rate}', '\"0.5\"') "
            "WHERE operator_id = :o", o=operator)
    verification = _verify(sessions, operator)
    named = _named(verification)
    assert set(named) == {body["round_id"] for body in played}
    assert all({"content_hash", "ruleset_hash"} <= whats for whats in named.values()), named


def test_the_ruleset_rows_refuse_change_like_the_ledger(sessions, owner_engine):
    _three_rounds(sessions)
    for statement in ("UPDATE round_rulesets SET ruleset = '{}'", "DELETE FROM round_rulesets",
                      "TRUNCATE round_rulesets"):
        with owner_engine.begin() as connection, pytest.raises(DBAPIError) as refused:
            connection.exec_driver_sql(statement)
        assert "append-only" in str(refused.value) or "refused" in str(refused.value), statement
