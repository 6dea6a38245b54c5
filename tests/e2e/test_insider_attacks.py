"""The money rows are inside the evidence: what an insider tries, and what stops or names it.

Two insiders. One holds the service's own database login (``engine``, a member of the
runtime role): every write of a money row or a key outside the append functions is
refused, and the append functions refuse a round that is not whole, balanced and chained.
The other holds the owner's rights (``owner_engine``) and edits seats and lines with the
triggers off: every verify (the period's, a kept checkpoint's, a kept receipt's, the
command line's) names the round, the table, the seq and the row with its figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.models import Round
from app.services.rounds import content_hash
from tests.append_calls import APPEND_FROM_JSON
from tests.e2e.test_audit_api import (
    _as_attacker,
    _checkpoint,
    _kinds,
    _period,
    _receipt,
    _settle,
    _verify,
)
from tests.worked_examples import EX_000

REPO = Path(__file__).resolve().parents[2]
INSUFFICIENT_PRIVILEGE = "42501"
CHECK_VIOLATION = "23514"


@pytest.fixture
def auditor(api: Any, make_key: Callable[..., str]) -> Any:
    """A contract client acting for a fresh operator, holding every scope."""
    return api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))


def _table() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def _line_of(body: dict[str, Any], account: str) -> dict[str, Any]:
    return next(line for line in body["lines"] if line["account"] == account)


# --- as the service's own database login ---------------------------------------------------

# Balanced lines added to a committed round: A +7,777, C -7,777.
ADD_LINES = ("INSERT INTO ledger_lines (round_id, line_no, account, kind, amount, operator_id, "
             "table_id, created_at) VALUES (:round_id, 50, 'A', 'win', 7777, :operator, "
             ":table, now()), (:round_id, 51, 'C', 'loss', -7777, :operator, :table, now())")
ADD_SEAT = ("INSERT INTO round_players (operator_id, round_id, table_id, chain_seq, seat, "
            "player_id, balance_before, points, amount, fee, balance_after, foul) VALUES "
            "(:operator, :round_id, :table, 1, 9, 'Z', 0, 0, 7777, 0, 7777, false)")
ADD_ROUND = ("INSERT INTO rounds SELECT * FROM rounds WHERE id = :round_id")
MOVE_HEAD = "UPDATE chains SET seq = 0, head_hash = NULL WHERE operator_id = :operator"
MINT_KEY = ("INSERT INTO api_keys (id, operator_id, scopes, secret_hash) VALUES "
            "('aaaaaaaaaaaa', :operator, ARRAY['admin'], repeat('0', 64))")
UNREVOKE = "DELETE FROM api_key_revocations WHERE key_id = :key_id"
REWRITE_REVOCATION = "UPDATE api_key_revocations SET key_id = 'x' WHERE key_id = :key_id"
EXTEND_KEY = "UPDATE api_keys SET expires_at = NULL WHERE id = :key_id"
REVOKE_AS_SERVICE = "INSERT INTO api_key_revocations (key_id) VALUES ('bbbbbbbbbbbb')"

INSIDER_WRITES = {"add-lines": ADD_LINES, "add-seat": ADD_SEAT, "add-round": ADD_ROUND,
                  "move-chain-head": MOVE_HEAD, "mint-key": MINT_KEY, "unrevoke": UNREVOKE,
                  "rewrite-revocation": REWRITE_REVOCATION, "extend-key": EXTEND_KEY,
                  "revoke": REVOKE_AS_SERVICE}


@pytest.mark.parametrize("statement", list(INSIDER_WRITES.values()), ids=list(INSIDER_WRITES))
def test_the_service_login_cannot_write_money_rows_or_keys_outside_the_append(
        auditor, api, engine, make_key, owner_uows, count_rows, statement):
    from app.services.keys import parse_token, revoke_key

    body = _settle(auditor, _table())
    token = make_key("rounds:read", operator_id=body["operator_id"])
    key_id = parse_token(token)[0]
    revoke_key(owner_uows, key_id)
    before = count_rows()
    with engine.begin() as connection, pytest.raises(DBAPIError) as caught:
        connection.execute(text(statement), {"round_id": body["round_id"], "key_id": key_id,
                                             "operator": body["operator_id"],
                                             "table": body["table_id"]})
    assert caught.value.orig.sqlstate == INSUFFICIENT_PRIVILEGE, caught.value.orig
    assert count_rows() == before
    # The revoked key stays revoked, whatever the service's login tried.
    answer = api.with_key(token).get(f"/v1/rounds/{body['round_id']}")
    assert answer.status_code == 401


def _append_call(engine: Engine, body: dict[str, Any], *, skew: int = 0,
                 seq: int | None = None, shift: timedelta = timedelta()) -> DBAPIError:
    """Call ledger_take then ledger_append as the service's login, with a copy of a stored
    round under a new id: its lines skewed by ``skew``, at chain position ``seq``, or its
    time ``shift``ed from the one the take read."""
    round_id = uuid.uuid4()
    with engine.begin() as connection, pytest.raises(DBAPIError) as caught:
        taken = connection.execute(text(
            "SELECT * FROM ledger_take(:lock, :operator, :table, :key)"),
            {"lock": f"insider-{round_id}", "operator": body["operator_id"],
             "table": body["table_id"], "key": f"insider-{round_id}"}).mappings().one()
        row = connection.execute(text(
            "SELECT to_jsonb(r) - 'txid' FROM rounds r WHERE id = :id"),
            {"id": body["round_id"]}).scalar_one()
        row.update(id=str(round_id), idempotency_key=f"insider-{round_id}",
                   chain_seq=taken["seq"] + 1 if seq is None else seq,
                   prev_hash=taken["head_hash"],
                   created_at=(taken["locked_at"] + shift).isoformat())
        lines = [{"line_no": n, "account": line["account"], "kind": line["kind"],
                  "amount": str(int(line["amount"]) + (skew if n == 1 else 0)),
                  "balance_before": None, "balance_after": None}
                 for n, line in enumerate(body["lines"], start=1)]
        connection.execute(text(APPEND_FROM_JSON),
                           {"r": json.dumps(row), "p": "[]", "l": json.dumps(lines),
                            "result": row["result"], "ruleset": None})
    return caught.value


def test_an_unbalanced_round_through_the_append_function_is_refused(auditor, engine,
                                                                    count_rows):
    body = _settle(auditor, _table())
    before = count_rows()
    refused = _append_call(engine, body, skew=7777)
    assert refused.orig.sqlstate == CHECK_VIOLATION
    assert refused.orig.diag.constraint_name == "ledger_append_balanced"
    assert "sum to 7777, not zero" in str(refused.orig)
    assert count_rows() == before


@pytest.mark.parametrize("seq", [1, 5], ids=["over-the-first", "past-the-head"])
def test_a_round_off_its_chains_head_through_the_append_function_is_refused(
        auditor, engine, count_rows, seq):
    body = _settle(auditor, _table())
    before = count_rows()
    refused = _append_call(engine, body, seq=seq)
    assert refused.orig.sqlstate == CHECK_VIOLATION
    assert refused.orig.diag.constraint_name == "ledger_append_chained"
    assert count_rows() == before


@pytest.mark.parametrize("shift", [timedelta(hours=-1), timedelta(hours=1)],
                         ids=["before-the-head", "in-the-future"])
def test_a_round_out_of_time_order_through_the_append_function_is_refused(
        auditor, engine, count_rows, shift):
    body = _settle(auditor, _table())
    before = count_rows()
    refused = _append_call(engine, body, shift=shift)
    assert refused.orig.sqlstate == CHECK_VIOLATION
    assert refused.orig.diag.constraint_name == "ledger_append_chained"
    assert "in time order" in str(refused.orig)
    assert count_rows() == before


# --- as the owner: every verify names the edited money rows ---------------------------------


def _move_money(owner_engine: Engine, body: dict[str, Any], amount: int) -> None:
    """Move ``amount`` from the first player to the last in a round's lines and seats, as
    the owner with the triggers off: balanced, so zero-sum checks see nothing."""
    first, last = body["players"][0]["player_id"], body["players"][-1]["player_id"]
    _as_attacker(
        owner_engine,
        "UPDATE ledger_lines SET amount = amount + :m WHERE round_id = :r AND line_no = :a",
        "UPDATE ledger_lines SET amount = amount - :m WHERE round_id = :r AND line_no = :b",
        "UPDATE round_players SET amount = amount + :m, balance_after = balance_after + :m "
        "WHERE round_id = :r AND player_id = :p",
        "UPDATE round_players SET amount = amount - :m, balance_after = balance_after - :m "
        "WHERE round_id = :r AND player_id = :q",
        m=amount, r=body["round_id"], a=_line_of(body, first)["line_no"],
        b=_line_of(body, last)["line_no"], p=first, q=last)


def test_moved_money_in_seats_and_lines_is_named_by_every_verify(auditor, owner_engine,
                                                                 settings, tmp_path):
    table = _table()
    body = _settle(auditor, table, EX_000)
    checkpoint = _checkpoint(auditor)
    _move_money(owner_engine, body, 3000)
    # The period's verify, a kept checkpoint's, a kept receipt's.
    period = {d["what"] for d in _period(auditor, table)["findings"]}
    assert {"content_hash", "lines_changed", "players_changed"} <= period
    for kept in ({"checkpoint": checkpoint}, {"receipts": [_receipt(body)]}):
        findings = _verify(auditor, **kept)
        assert {("content_hash", table, 1), ("lines_changed", table, 1)} <= _kinds(findings)
        details = [f["detail"] for f in findings
                   if f["what"] in ("lines_changed", "players_changed")]
        assert any(d.startswith("ledger_lines: line ") and " stored as " in d
                   for d in details), details
        assert any(d.startswith("round_players: seat ") for d in details), details
    # The auditor's command line.
    kept_file = tmp_path / "checkpoint.json"
    kept_file.write_text(json.dumps(checkpoint))
    env = {**os.environ, "DATABASE_URL": settings.database_url,
           "AUDIT_SIGNING_KEY_FILE": str(settings.audit_signing_key_file)}
    found = subprocess.run([sys.executable, "-m", "flask", "--app", "app", "audit", "verify",
                            "--checkpoint", str(kept_file)], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 3, found.stderr
    assert f"lines_changed\ttable {table}\tseq 1\t" in found.stdout


def test_a_line_added_to_a_stored_round_by_the_owner_is_named(auditor, owner_engine):
    table = _table()
    body = _settle(auditor, table, EX_000)
    checkpoint = _checkpoint(auditor)
    _as_attacker(owner_engine, ADD_LINES, round_id=body["round_id"],
                 operator=body["operator_id"], table=table)
    findings = _verify(auditor, checkpoint=checkpoint)
    details = [f["detail"] for f in findings if f["what"] == "lines_changed"]
    assert "ledger_lines: line 50 is not in the result" in details, findings


def test_a_stored_round_is_read_back_with_the_receipt_made_at_append(auditor):
    body = _settle(auditor, _table())
    again = auditor.get(f"/v1/rounds/{body['round_id']}").get_json()
    assert again["chain"] == body["chain"]
    assert body["chain"]["signature"] and body["chain"]["key_id"]


def _as_version_1(owner_engine: Engine, round_id: str) -> None:
    """Store a round as the service did before content version 2: its hash over its row."""
    with owner_engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL citus.propagate_set_commands = 'local'; "
                                   "SET LOCAL session_replication_role = replica")
        session = Session(bind=connection)
        round_ = session.scalars(select(Round).where(Round.id == uuid.UUID(round_id))).one()
        round_.content_version = 1
        round_.receipt_key_id = round_.receipt_signature = None
        round_.content_hash = content_hash(round_)
        session.flush()


def test_a_round_without_a_receipt_is_named_by_every_verify_and_not_served(auditor,
                                                                          owner_engine):
    """A round stored as the service did before receipts (content version 1, its hash over
    its row alone, no receipt): nothing vouches for it, so every verify names it and a read
    refuses it; its rows are still compared with its answer."""
    table = _table()
    body = _settle(auditor, table, EX_000)
    _as_version_1(owner_engine, body["round_id"])
    read = auditor.get(f"/v1/rounds/{body['round_id']}")
    assert read.status_code == 409, read.get_json()
    assert read.get_json()["errors"][0]["code"] == "receipt_missing"
    checkpoint = _checkpoint(auditor)
    assert _kinds(_verify(auditor, checkpoint=checkpoint)) == {("receipt_missing", table, 1)}
    assert {d["what"] for d in _period(auditor, table)["findings"]} == {"receipt_missing"}
    _move_money(owner_engine, body, 10)
    # Its hash does not cover the rows, but the rows are still what it answered with.
    assert _kinds(_verify(auditor, checkpoint=checkpoint)) == {
        ("receipt_missing", table, 1), ("lines_changed", table, 1),
        ("players_changed", table, 1)}
    assert {d["what"] for d in _period(auditor, table)["findings"]} == {
        "receipt_missing", "lines_changed", "players_changed"}


def test_the_match_function_counts_only_a_settlement_at_the_matchs_table(
        api, engine) -> None:
    """The service's login calling match_round_add itself with a round of another table, or
    out of turn, is refused by the function."""
    from sqlalchemy.exc import IntegrityError

    from tests.worked_examples import EX_004, round_request

    table, elsewhere = (f"t-{uuid.uuid4().hex[:8]}" for _ in range(2))
    opened = api.post("/v1/matches", json={"ruleset": "bonus3", "table_id": table,
                                           "stake": "200", "seats": ["A", "B", "C"]},
                      headers={"Idempotency-Key": uuid.uuid4().hex})
    assert opened.status_code == 201, opened.get_json()
    other = api.post("/v1/rounds", json=round_request(EX_004, elsewhere),
                     headers={"Idempotency-Key": uuid.uuid4().hex}).get_json()
    here = api.post("/v1/rounds", json=round_request(EX_004, table),
                    headers={"Idempotency-Key": uuid.uuid4().hex}).get_json()
    call = text("SELECT match_round_add(:o, :m, :n, :r, NULL)")
    for played, number, constraint in ((other, 1, "match_round_add_at_table"),
                                       (here, 5, "match_round_add_next")):
        with pytest.raises(IntegrityError) as caught, engine.begin() as connection:
            connection.execute(call, {"o": played["operator_id"],
                                      "m": opened.get_json()["match_id"], "n": number,
                                      "r": played["round_id"]})
        assert caught.value.orig.diag.constraint_name == constraint


def _forged(engine: Engine, body: dict[str, Any], *, round_: dict[str, Any] | None = None,
            request: str = "CAST(:r AS jsonb) -> 'request'", result: str | None = None,
            rows: bool = True, seat: dict[str, Any] | None = None,
            line: dict[str, Any] | None = None, owner: tuple[Engine, str] | None = None) -> int:
    """Append, as the service's login, a copy of a stored round under a new id at its
    chain's head (``round_`` changing its columns, ``request`` the SQL of its request,
    ``result`` its result's text, ``rows`` False: no seats and no lines, ``seat`` and
    ``line`` changing the first seat's and line's columns); then, given ``owner`` (the
    owner's engine and a statement), have the owner edit it with the triggers off (``:id``,
    its id). Returns its seq."""
    round_id = uuid.uuid4()
    with engine.begin() as connection:
        taken = connection.execute(text(
            "SELECT * FROM ledger_take(:lock, :operator, :table, :key)"),
            {"lock": f"forged-{round_id}", "operator": body["operator_id"],
             "table": body["table_id"], "key": f"forged-{round_id}"}).mappings().one()
        row = connection.execute(text("SELECT to_jsonb(r) - 'txid' FROM rounds r WHERE id = :id"),
                                 {"id": body["round_id"]}).scalar_one()
        seats, lines = ([dict(found) for found in connection.execute(text(
            f"SELECT {columns} FROM {table} WHERE round_id = :id"),
            {"id": body["round_id"]}).mappings()] if rows else []
            for table, columns in (
                ("round_players", "seat, player_id, balance_before, points, amount, fee, "
                                  "balance_after, foul, special"),
                ("ledger_lines", "line_no, account, kind, amount, balance_before, "
                                 "balance_after")))
        row.update(id=str(round_id), idempotency_key=f"forged-{round_id}",
                   chain_seq=taken["seq"] + 1, prev_hash=taken["head_hash"],
                   created_at=taken["locked_at"].isoformat(), **(round_ or {}))
        for changed, rows_ in ((seat, seats), (line, lines)):
            if changed:
                rows_[0].update(changed)
        connection.execute(text(APPEND_FROM_JSON.replace(
            "CAST(:r AS jsonb) -> 'request'", request)),
            {"r": json.dumps(row), "p": json.dumps(seats, default=str),
             "l": json.dumps(lines, default=str),
             "result": row["result"] if result is None else result, "ruleset": None})
    if owner is not None:
        _as_attacker(owner[0], owner[1], id=str(round_id))
    return int(row["chain_seq"])


# Rounds the service never writes: each must be named by every verify, and none may stop a
# verify from naming the rest of its table. The runtime login's append takes a result that
# is not JSON (it stores the text unparsed) and a round without rows; the rest, which it
# refuses (below), only the owner writes, by editing a round it took.
FORGED = {
    "request-a-string": {"owner": "UPDATE rounds SET request = '\"x\"' WHERE id = :id"},
    "request-an-array": {"owner": "UPDATE rounds SET request = '[]' WHERE id = :id"},
    "result-not-json": {"result": "not json"},
    "stake-nan": {"owner": "UPDATE rounds SET stake = 'NaN' WHERE id = :id"},
    "no-seats-no-lines": {"rows": False},
}


@pytest.mark.parametrize("forgery", list(FORGED.values()), ids=list(FORGED))
def test_a_forged_round_the_constraints_take_is_named_by_every_verify(
        forgery, auditor, engine, owner_engine, settings, tmp_path):
    table = _table()
    body = _settle(auditor, table, EX_000)
    if "owner" in forgery:
        forgery = {"owner": (owner_engine, forgery["owner"])}
    seq = _forged(engine, body, **forgery)
    checkpoint = _checkpoint(auditor)
    # The period's verify answers (no 500) and names the round; so do a kept checkpoint's
    # and the auditor's command line.
    assert any(f["chain_seq"] == seq for f in _period(auditor, table)["findings"])
    assert any(f["seq"] == seq for f in _verify(auditor, checkpoint=checkpoint)
               if f["table_id"] == table)
    kept_file = tmp_path / "checkpoint.json"
    kept_file.write_text(json.dumps(checkpoint))
    env = {**os.environ, "DATABASE_URL": settings.database_url,
           "AUDIT_SIGNING_KEY_FILE": str(settings.audit_signing_key_file)}
    found = subprocess.run([sys.executable, "-m", "flask", "--app", "app", "audit", "verify",
                            "--checkpoint", str(kept_file)], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 3, found.stderr
    assert f"table {table}\tseq {seq}\t" in found.stdout


# What the runtime login's append refuses that the tables' checks take: an amount that is
# not a number (NaN sorts above every number, Infinity passes a lower bound), and a request
# that is not a JSON object. Before migration 0039 such a round went in, and the table's
# next settle (a NaN or infinite balance read back) and its list of rounds answered 500;
# a line's amount that is not a number was refused then too, by the lines' sum, and its
# cases keep it so.
NOT_NUMBERS = {
    **{f"stake-{v}": {"round_": {"stake": v}} for v in ("NaN", "Infinity", "-Infinity")},
    **{f"seat-{column}-{v}": {"seat": {column: v}}
       for column in ("balance_before", "amount", "fee", "balance_after")
       for v in ("NaN", "Infinity", "-Infinity")},
    **{f"line-{column}-{v}": {"line": {column: v}}
       for column in ("amount", "balance_before", "balance_after")
       for v in ("NaN", "Infinity", "-Infinity")},
}


@pytest.mark.parametrize("forgery", list(NOT_NUMBERS.values()), ids=list(NOT_NUMBERS))
def test_an_amount_that_is_not_a_number_is_refused_and_the_table_serves_on(
        forgery, auditor, engine, count_rows):
    table = _table()
    body = _settle(auditor, table, EX_000)
    before = count_rows()
    with pytest.raises(DBAPIError) as caught:
        _forged(engine, body, **forgery)
    assert caught.value.orig.sqlstate == CHECK_VIOLATION
    [(column, _)] = [*forgery.get("round_", {}).items(), *forgery.get("seat", {}).items(),
                         *forgery.get("line", {}).items()]
    named = caught.value.orig.diag.constraint_name
    if "line" in forgery and column == "amount":  # the lines' sum is no number either
        assert named == "ledger_append_balanced"
    else:  # before a table's own bound (stake > 0, fee >= 0) is looked at
        assert named == "ledger_money_finite", str(caught.value.orig)
        assert "ledger_money" in str(caught.value.orig)
    assert count_rows() == before
    # The table goes on: its next settle and its list of rounds.
    assert _settle(auditor, table, EX_000)["chain"]["seq"] == 2
    listed = auditor.get(f"/v1/rounds?table_id={table}")
    assert listed.status_code == 200 and len(listed.get_json()["items"]) == 2


@pytest.mark.parametrize("request_sql", ["'\"x\"'::jsonb", "'[]'::jsonb", "'null'::jsonb"],
                         ids=["a-string", "an-array", "json-null"])
def test_a_request_that_is_not_an_object_is_refused(auditor, engine, count_rows, request_sql):
    body = _settle(auditor, _table(), EX_000)
    before = count_rows()
    with pytest.raises(DBAPIError) as caught:
        _forged(engine, body, request=request_sql)
    assert caught.value.orig.sqlstate == CHECK_VIOLATION
    assert caught.value.orig.diag.constraint_name == "ledger_append_request"
    assert count_rows() == before


# Fair-play figures, which the service's login appends itself (flask fairplay run): a
# stake that is not a positive number is refused (migration 0039). A refund is the figures'
# points times it.
_FAIRPLAY_ROWS = {
    "fairplay_rounds": "INSERT INTO fairplay_rounds (operator_id, round_id, advisor_version, "
                       "table_id, played_at, ruleset_name, stake, pairs, evidence) VALUES "
                       "('op', gen_random_uuid(), 'v', 't', now(), 'bonus3', :stake, 0, '{}')",
    "fairplay_pairs": "INSERT INTO fairplay_pairs (operator_id, round_id, advisor_version, "
                      "player_a, player_b, table_id, played_at, stake, seat_a, seat_b, t, d, "
                      "scoop, agreed, moved, seed) VALUES ('op', gen_random_uuid(), 'v', 'A', "
                      "'B', 't', now(), :stake, 0, 1, 0, 0, 0, true, 0, 's')",
}


@pytest.mark.parametrize("stake", ["NaN", "Infinity", "-Infinity", "0"])
@pytest.mark.parametrize("table", list(_FAIRPLAY_ROWS))
def test_fair_play_figures_refuse_a_stake_that_is_not_a_positive_number(engine, table,
                                                                        stake):
    with pytest.raises(DBAPIError) as caught, engine.begin() as connection:
        connection.execute(text(_FAIRPLAY_ROWS[table]), {"stake": stake})
    assert caught.value.orig.sqlstate == CHECK_VIOLATION
    # Named in the message: a Citus coordinator does not pass the field on, and a shard's
    # copy of a check added after distribution carries the shard's id after the name.
    assert f'check constraint "ck_{table}_stake_finite' in str(caught.value.orig)


@pytest.mark.parametrize("table", list(_FAIRPLAY_ROWS))
def test_fair_play_figures_take_a_rounds_stake(engine, table):
    """The control: the same row with a stake a round has goes in (and is rolled back)."""
    with engine.connect() as connection, connection.begin() as transaction:
        connection.execute(text(_FAIRPLAY_ROWS[table]), {"stake": "0.01"})
        transaction.rollback()
