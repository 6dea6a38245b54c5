"""Rounds no key of the service's signed: what a database login can append, and who names it.

The service's own database login (``engine``, a member of the runtime role) may call the
append functions, so it can append a round at its chain's head with a content hash it
computed itself. Only the receipt tells such a round from the service's: the signing key
never enters the database. Each attack here goes through the login, then through the three
verifies (the period's, a kept checkpoint's, the command line's with public keys alone) and
the read; each names the round. Seats placed by the owner beside no round of theirs are
named too, and never put a round on a player's list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Engine, text

from app.services.repositories import LINE_COLUMNS, PLAYER_COLUMNS
from app.services.rounds import content_hash
from app.services.signing import Signer, receipt_statement
from tests.append_calls import APPEND_FROM_JSON
from tests.e2e.test_audit_api import _as_attacker, _checkpoint, _kinds, _period, _settle, _verify
from tests.worked_examples import EX_000

REPO = Path(__file__).resolve().parents[2]
# A signature of the right shape (64 bytes of base64) that no key made.
GARBAGE = "A" * 86 + "=="


@pytest.fixture
def auditor(api: Any, make_key: Any) -> Any:
    return api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))


def _table() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def _rows(connection: Any, sql: str, round_id: str) -> list[dict[str, Any]]:
    return [dict(row) for row in connection.execute(text(sql), {"id": round_id}).mappings()]


def _forge(engine: Engine, body: dict[str, Any], *, signer: Signer | None = None,
           signature: str = GARBAGE, move: int = 0, key: str | None = None,
           body_hash: str | None = None, result_text: str | None = None) -> str:
    """Append, as the service's login, a copy of a stored round at its chain's head under a
    new id, with a content hash computed the service's way over what is appended. Its
    first player's seat and lines take ``move`` from its last's (balanced, so the function
    takes them). Signed by ``signer`` if given, else carrying ``signature`` under the
    service's real key id; its result stored as ``result_text`` if given (the same value).
    Returns the new round's id."""
    round_id = str(uuid.uuid4())
    key = key or f"forged-{round_id}"
    with engine.begin() as connection:
        taken = connection.execute(text(
            "SELECT * FROM ledger_take(:lock, :operator, :table, :key)"),
            {"lock": key, "operator": body["operator_id"], "table": body["table_id"],
             "key": key}).mappings().one()
        row = connection.execute(text("SELECT to_jsonb(r) - 'txid' FROM rounds r "
                                      "WHERE id = :id"), {"id": body["round_id"]}).scalar_one()
        ruleset = connection.execute(text(
            "SELECT ruleset FROM round_rulesets WHERE operator_id = :o AND ruleset_hash = :h"),
            {"o": body["operator_id"], "h": row["ruleset_hash"]}).scalar_one()
        seats = _rows(connection, f"SELECT {', '.join(PLAYER_COLUMNS)} FROM round_players "
                      "WHERE round_id = :id ORDER BY seat", body["round_id"])
        lines = _rows(connection, f"SELECT {', '.join(LINE_COLUMNS)} FROM ledger_lines "
                      "WHERE round_id = :id ORDER BY line_no", body["round_id"])
    first, last = seats[0]["player_id"], seats[-1]["player_id"]
    for seat in seats:
        shift = move if seat["player_id"] == first else -move if seat["player_id"] == last else 0
        seat["amount"] += shift
        seat["balance_after"] += shift
    for line in lines:
        if line["kind"] in ("win", "loss"):
            shift = (move if line["account"] == first
                     else -move if line["account"] == last else 0)
            line["amount"] += shift
            if line["balance_after"] is not None:
                line["balance_after"] += shift
    if body_hash is not None:
        row["body_hash"] = body_hash
    row.update(id=round_id, idempotency_key=key, chain_seq=taken["seq"] + 1,
               prev_hash=taken["head_hash"], created_at=taken["locked_at"].isoformat())
    columns = SimpleNamespace(**{**row, "id": uuid.UUID(round_id), "ruleset": ruleset,
                                 "result": json.loads(row["result"]),
                                 "stake": Decimal(str(row["stake"])),
                                 "created_at": datetime.fromisoformat(row["created_at"]),
                                 "reverses_round_id": None})
    row["content_hash"] = content_hash(columns, seats, lines)
    if signer is not None:
        row["receipt_key_id"] = signer.key_id
        row["receipt_signature"] = signer.sign(receipt_statement(
            row["operator_id"], row["table_id"], row["chain_seq"], row["prev_hash"],
            row["content_hash"]))
    else:
        row["receipt_signature"] = signature
    result = row.pop("result") if result_text is None else result_text
    row.pop("result", None)
    with engine.begin() as connection:
        connection.execute(text("SELECT * FROM ledger_take(:lock, :operator, :table, :key)"),
                           {"lock": key, "operator": body["operator_id"],
                            "table": body["table_id"], "key": key})
        connection.execute(text(APPEND_FROM_JSON),
                           {"r": json.dumps(row), "p": json.dumps(seats, default=str),
                            "l": json.dumps(lines, default=str), "result": result,
                            "ruleset": None})
    return round_id


def _cli_verify(settings: Any, checkpoint: dict[str, Any], tmp_path: Path) -> tuple[int, str]:
    """Run ``flask --app app audit verify`` with the published public keys alone."""
    kept = tmp_path / f"checkpoint-{uuid.uuid4().hex[:6]}.json"
    kept.write_text(json.dumps(checkpoint))
    published = settings.audit_signing_key_file.with_name(
        f"{settings.audit_signing_key_file.stem}.public-keys.json")
    env = {**os.environ, "DATABASE_URL": settings.database_url,
           "AUDIT_SIGNING_KEY_FILE": str(tmp_path / "no-private-key-here.pem")}
    found = subprocess.run([sys.executable, "-m", "flask", "--app", "app", "audit", "verify",
                            "--checkpoint", str(kept), "--public-keys", str(published)],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    return found.returncode, found.stdout


@pytest.mark.parametrize("how", ["garbage-signature", "unpublished-key"])
def test_a_round_appended_by_the_service_login_is_named_by_every_verify_and_not_served(
        auditor, engine, settings, tmp_path, how):
    table = _table()
    body = _settle(auditor, table, EX_000)
    if how == "garbage-signature":
        forged = _forge(engine, body)
        why = "does not verify"
    else:  # a key that signs for real, but that the service never published
        forged = _forge(engine, body, signer=Signer(Ed25519PrivateKey.generate()))
        why = "is not one of the service's published keys"
    refused = auditor.get(f"/v1/rounds/{forged}")
    assert refused.status_code == 409, refused.get_json()
    assert refused.get_json()["errors"][0]["code"] == "receipt_invalid"
    assert "chain" not in refused.get_json()
    # The honest round before it still reads.
    assert auditor.get(f"/v1/rounds/{body['round_id']}").status_code == 200
    period = _period(auditor, table)["findings"]
    assert [(f["what"], f["round_id"], f["chain_seq"]) for f in period] == [
        ("receipt_invalid", forged, 2)]
    assert why in period[0]["detail"]
    checkpoint = _checkpoint(auditor)
    assert _kinds(_verify(auditor, checkpoint=checkpoint)) == {("receipt_invalid", table, 2)}
    code, out = _cli_verify(settings, checkpoint, tmp_path)
    assert code == 3
    assert out.startswith(f"receipt_invalid\ttable {table}\tseq 2\t"), out


def test_rows_moved_away_from_the_answer_are_named_by_every_verify(auditor, engine, settings,
                                                                   tmp_path):
    """The content hash computed over the moved rows matches them: only comparing the rows
    with the stored answer shows the money moved, and every verify does, every time."""
    table = _table()
    body = _settle(auditor, table, EX_000)
    forged = _forge(engine, body, move=1000)
    period = {(f["what"], f["round_id"]) for f in _period(auditor, table)["findings"]}
    assert {("lines_changed", forged), ("players_changed", forged),
            ("receipt_invalid", forged)} <= period
    assert ("content_hash", forged) not in period
    checkpoint = _checkpoint(auditor)
    kinds = _kinds(_verify(auditor, checkpoint=checkpoint))
    assert {("lines_changed", table, 2), ("players_changed", table, 2)} <= kinds
    assert ("content_hash", table, 2) not in kinds
    code, out = _cli_verify(settings, checkpoint, tmp_path)
    assert code == 3
    assert f"lines_changed\ttable {table}\tseq 2\tledger_lines: line " in out, out
    assert f"players_changed\ttable {table}\tseq 2\tround_players: seat " in out, out


SEAT = ("INSERT INTO round_players (operator_id, round_id, table_id, chain_seq, seat, "
        "player_id, balance_before, points, amount, fee, balance_after, foul) VALUES "
        "(:operator, :round_id, :table, :seq, 9, :player, 0, 0, 7777, 0, 7777, false)")


@pytest.mark.parametrize("where", ["missing-round", "another-tables-round"])
def test_a_stray_seat_is_named_by_every_verify_and_shown_on_no_list(auditor, owner_engine,
                                                                    settings, tmp_path, where):
    table, elsewhere = _table(), _table()
    body = _settle(auditor, table, EX_000)
    _settle(auditor, elsewhere, EX_000)
    player = f"Z-{uuid.uuid4().hex[:6]}"
    named = str(uuid.uuid4()) if where == "missing-round" else body["round_id"]
    _as_attacker(owner_engine, SEAT, operator=body["operator_id"], round_id=named,
                 table=elsewhere, seq=1, player=player)
    listed = auditor.get(f"/v1/rounds?player_id={player}").get_json()
    assert listed["items"] == []
    shown = auditor.get(f"/v1/rounds?table_id={elsewhere}").get_json()["items"]
    assert player not in {p["player_id"] for r in shown for p in r["players"]}
    period = [(f["what"], f["table_id"], f["round_id"])
              for f in _period(auditor, elsewhere)["findings"]]
    assert ("stray_seats", elsewhere, named) in period, period
    checkpoint = _checkpoint(auditor)
    assert ("stray_seats", elsewhere, None) in _kinds(_verify(auditor, checkpoint=checkpoint))
    code, out = _cli_verify(settings, checkpoint, tmp_path)
    assert code == 3
    assert f"stray_seats\ttable {elsewhere}\tseq -\t1 seat(s) at table {elsewhere}" in out, out


def test_a_replay_does_not_serve_a_round_the_service_did_not_sign(auditor, engine):
    """A forged round under the Idempotency-Key and body hash a front-end will retry with:
    the retry is refused, not answered with the forgery."""
    from app.services.rounds import sha256
    from tests.worked_examples import round_request

    table = _table()
    body = _settle(auditor, table, EX_000)
    raw = round_request(EX_000, table)
    key = f"retry-{uuid.uuid4().hex}"
    _forge(engine, body, key=key, body_hash=sha256(raw))
    retried = auditor.post("/v1/rounds", json=raw, headers={"Idempotency-Key": key})
    assert retried.status_code == 409, retried.get_json()
    assert retried.get_json()["type"] == "/problems/unverified-round"


def test_a_result_changed_after_its_round_was_read_is_checked_again_and_not_served(
        auditor, owner_engine):
    """A read checks a round once per process, remembered under everything it serves: the
    result's stored text counts, so a text changed behind the service's back after the
    first read is checked again, and refused."""
    from tests.e2e.test_audit_api import _as_attacker

    body = _settle(auditor, _table(), EX_000)
    assert auditor.get(f"/v1/rounds/{body['round_id']}").status_code == 200
    amount = body["players"][0]["amount"]
    _as_attacker(owner_engine, "UPDATE rounds SET result = replace(result, :was, :now) "
                 "WHERE id = :id", was=f'"amount":"{amount}"', now='"amount":"1000000"',
                 id=body["round_id"])
    refused = auditor.get(f"/v1/rounds/{body['round_id']}")
    assert refused.status_code == 409, refused.get_json()
    assert refused.get_json()["errors"][0]["code"] == "content_hash"
