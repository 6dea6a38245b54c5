"""Signed receipts and checkpoints over HTTP, and the attacks they catch.

Each test settles under a fresh operator, so a checkpoint covers only its own chains. An
attacker with the owner's database access works through ``owner_engine`` with every
trigger off (session_replication_role = replica): deleting a chain's tail, a reversal at
the tail or a whole table, and rewriting a round in another player's favour with the
project's own functions, re-chaining every round after it. Each of them verifies clean by
``GET /v1/audit/verify`` of the period; each is caught by a kept checkpoint or receipt.
The signatures are checked here with ``cryptography`` directly, not with the service's code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import Engine, delete, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.models import LedgerLine, Round, RoundPlayer
from app.json_codec import as_stored
from app.services.audit import load_request
from app.services.checkpoints import merkle_root
from app.services.ledger import line_rows, player_rows
from app.services.play import parse_round, play
from app.services.round_json import round_body
from app.services.rounds import content_hash
from tests.append_calls import APPEND_FROM_JSON
from tests.worked_examples import EX_000, EX_004, round_request

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def auditor(api: Any, make_key: Callable[..., str]) -> Any:
    """A contract client acting for a fresh operator, holding every scope."""
    return api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))


def _settle(api: Any, table_id: str, case: dict[str, Any] = EX_000) -> dict[str, Any]:
    answer = api.post("/v1/rounds", json=round_request(case, table_id),
                      headers={"Idempotency-Key": uuid.uuid4().hex})
    assert answer.status_code == 201, answer.get_json()
    body: dict[str, Any] = answer.get_json()
    return body


def _reverse(api: Any, round_id: str) -> dict[str, Any]:
    answer = api.post(f"/v1/rounds/{round_id}/reversal", json={"reason": "dealt twice"},
                      headers={"Idempotency-Key": uuid.uuid4().hex})
    assert answer.status_code == 201, answer.get_json()
    body: dict[str, Any] = answer.get_json()
    return body


def _checkpoint(api: Any) -> dict[str, Any]:
    answer = api.post("/v1/audit/checkpoints")
    assert answer.status_code == 201, answer.get_json()
    body: dict[str, Any] = answer.get_json()
    return body


def _verify(api: Any, **body: Any) -> list[dict[str, Any]]:
    """Walk every page of POST /v1/audit/verify; return all findings."""
    findings: list[dict[str, Any]] = []
    while True:
        answer = api.post("/v1/audit/verify", json=body)
        assert answer.status_code == 200, answer.get_json()
        page = answer.get_json()
        findings.extend(page["findings"])
        if page["next_cursor"] is None:
            return findings
        body = {**body, "cursor": page["next_cursor"]}


def _kinds(findings: list[dict[str, Any]]) -> set[tuple[str, str | None, int | None]]:
    return {(f["what"], f["table_id"], f["seq"]) for f in findings}


def _receipt(body: dict[str, Any]) -> dict[str, Any]:
    return {"table_id": body["table_id"], **body["chain"]}


def _period(api: Any, table_id: str) -> dict[str, Any]:
    now = datetime.now(UTC)
    query = urlencode({"from": (now - timedelta(hours=1)).isoformat(),
                       "to": (now + timedelta(hours=1)).isoformat(), "table_id": table_id})
    answer = api.get(f"/v1/audit/verify?{query}")
    assert answer.status_code == 200, answer.get_json()
    body: dict[str, Any] = answer.get_json()
    return body


def test_twenty_concurrent_settles_at_one_table_form_one_verified_chain_in_time_order(
        make_app, make_key):
    # Twenty appends wait for one chain in turn: the bounds are wide, so a loaded machine
    # slows the test down rather than turning a wait into a 503.
    app = make_app(db_lock_timeout_ms=120_000, db_statement_timeout_ms=120_000,
                   db_pool_timeout_s=120, db_deadline_s=300)
    token = make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}")
    headers = {"Authorization": f"Bearer {token}"}
    table = f"race-{uuid.uuid4().hex[:10]}"
    start = threading.Barrier(20)
    answers: list[Any] = []

    def post() -> None:
        client = app.test_client()
        start.wait()
        answers.append(client.post("/v1/rounds", json=round_request(EX_000, table),
                                   headers={**headers, "Idempotency-Key": uuid.uuid4().hex}))

    threads = [threading.Thread(target=post) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [a.status_code for a in answers] == [201] * 20, [a.get_json() for a in answers]
    rounds = sorted((a.get_json() for a in answers), key=lambda r: r["chain"]["seq"])
    assert [r["chain"]["seq"] for r in rounds] == list(range(1, 21))
    times = [datetime.fromisoformat(r["created_at"]) for r in rounds]
    assert times == sorted(times) and len(set(times)) == 20
    now = datetime.now(UTC)
    query = urlencode({"from": (now - timedelta(hours=1)).isoformat(),
                       "to": (now + timedelta(hours=1)).isoformat(), "table_id": table})
    verified = app.test_client().get(f"/v1/audit/verify?{query}", headers=headers).get_json()
    assert verified["ok"] is True and verified["findings"] == [], verified


def _as_attacker(owner_engine: Engine, *statements: str, **params: Any) -> None:
    with owner_engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL citus.propagate_set_commands = 'local'; "
                                   "SET LOCAL session_replication_role = replica")
        for statement in statements:
            connection.execute(text(statement), params)


def _delete_round(owner_engine: Engine, round_id: str) -> None:
    _as_attacker(owner_engine, "DELETE FROM ledger_lines WHERE round_id = :r",
                 "DELETE FROM round_players WHERE round_id = :r",
                 "DELETE FROM rounds WHERE id = :r", r=round_id)


# --- the key and the receipts --------------------------------------------------------------


def _public_key(api: Any) -> Ed25519PublicKey:
    answer = api.with_key(None).get("/v1/audit/public-key")
    assert answer.status_code == 200
    body = answer.get_json()
    assert body["algorithm"] == "ed25519" and len(body["key_id"]) == 8
    raw = base64.b64decode(body["public_key"])
    name_hash = hashlib.sha256(body["key_name"].encode() + b"\n\x01" + raw).digest()[:4]
    assert name_hash.hex() == body["key_id"]
    return Ed25519PublicKey.from_public_bytes(raw)


def _statement(operator: str, body: dict[str, Any]) -> bytes:
    chain = body["chain"]
    return (f"thirteen-receipt/v1\noperator {operator}\ntable {body['table_id']}\n"
            f"seq {chain['seq']}\nprev {chain['prev_hash'] or '-'}\n"
            f"content {chain['content_hash']}\n").encode()


def test_settle_reversal_and_read_answers_carry_a_signed_receipt(auditor):
    key = _public_key(auditor)
    table = f"t-{uuid.uuid4().hex[:10]}"
    settled = _settle(auditor, table)
    reversal = _reverse(auditor, settled["round_id"])
    read = auditor.get(f"/v1/rounds/{settled['round_id']}").get_json()
    assert read["chain"] == settled["chain"]
    operator = settled["operator_id"]
    for body in (settled, reversal, read):
        key.verify(base64.b64decode(body["chain"]["signature"]), _statement(operator, body))
    assert reversal["chain"]["prev_hash"] == settled["chain"]["content_hash"]


# --- checkpoints ---------------------------------------------------------------------------


def test_a_checkpoint_is_a_signed_note_over_the_merkle_root_of_every_chain_head(auditor):
    key = _public_key(auditor)
    tables = sorted(f"t-{uuid.uuid4().hex[:10]}" for _ in range(3))
    heads = {}
    for n, table in enumerate(tables):
        for _ in range(n + 1):
            heads[table] = _settle(auditor, table)["chain"]
    checkpoint = _checkpoint(auditor)
    assert [(h["table_id"], h["seq"], h["head_hash"]) for h in checkpoint["heads"]] == [
        (t, heads[t]["seq"], heads[t]["content_hash"]) for t in tables]
    text_part, signatures = checkpoint["note"].split("\n\n")
    lines = text_part.split("\n")
    operator = checkpoint["operator_id"]
    assert lines[:2] == [f"thirteen-settlement/{operator}", "3"]
    assert lines[3:] == [f"checkpoint {checkpoint['checkpoint_id']}",
                         f"time {checkpoint['created_at']}"]
    # RFC 6962: leaves under 0x00, nodes under 0x01; three leaves split as (2, 1).
    leaves = [hashlib.sha256(b"\x00" + f"{t} {heads[t]['seq']} {heads[t]['content_hash']}\n"
                             .encode()).digest() for t in tables]
    left = hashlib.sha256(b"\x01" + leaves[0] + leaves[1]).digest()
    root = hashlib.sha256(b"\x01" + left + leaves[2]).digest()
    assert lines[2] == base64.b64encode(root).decode() and checkpoint["root_hash"] == root.hex()
    dash, name, signature = signatures.rstrip("\n").split(" ")
    raw = base64.b64decode(signature)
    assert (dash, name, raw[:4].hex()) == ("\u2014", "thirteen-settlement", checkpoint["key_id"])
    key.verify(raw[4:], (text_part + "\n").encode())
    # Stored and read back as signed.
    assert auditor.get(f"/v1/audit/checkpoints/{checkpoint['checkpoint_id']}").get_json() \
        == checkpoint
    listed = auditor.get("/v1/audit/checkpoints?limit=1").get_json()
    assert listed["items"] == [checkpoint]
    assert auditor.get(f"/v1/audit/checkpoints/{uuid.uuid4()}").status_code == 404


def test_checkpoints_list_pages_newest_first_and_refuses_foreign_cursors(auditor):
    made = [_checkpoint(auditor)["checkpoint_id"] for _ in range(3)]
    seen, cursor = [], None
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = auditor.get(f"/v1/audit/checkpoints{query}").get_json()
        seen.extend(item["checkpoint_id"] for item in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == made[::-1]
    bad = auditor.get("/v1/audit/checkpoints?cursor=bm90LWEtY3Vyc29y")
    assert bad.status_code == 400 and bad.get_json()["errors"][0]["path"] == "cursor"


@pytest.mark.parametrize(("count", "root"), [
    (0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    (1, "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
    (2, "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"),
    (3, "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77"),
    (5, "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4"),
    (7, "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c"),
    (8, "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"),
])
def test_the_merkle_root_matches_the_certificate_transparency_test_vectors(count, root):
    leaves = [bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243",
                                         "5051525354555657",
                                         "606162636465666768696a6b6c6d6e6f")]
    assert merkle_root(leaves[:count]).hex() == root


# --- verify against what an auditor kept -----------------------------------------------------


def test_a_clean_ledger_verifies_clean_against_its_checkpoint_and_receipts(auditor):
    table = f"t-{uuid.uuid4().hex[:10]}"
    played = [_settle(auditor, table) for _ in range(3)]
    checkpoint = _checkpoint(auditor)
    _settle(auditor, table)  # the chain grows after the checkpoint: still clean
    assert _verify(auditor, checkpoint=checkpoint,
                   receipts=[_receipt(body) for body in played]) == []


def test_a_deleted_tail_is_truncated_even_with_the_stored_checkpoints_gone(auditor,
                                                                         owner_engine):
    table = f"t-{uuid.uuid4().hex[:10]}"
    played = [_settle(auditor, table) for _ in range(3)]
    checkpoint = _checkpoint(auditor)
    _delete_round(owner_engine, played[-1]["round_id"])
    _as_attacker(owner_engine, "DELETE FROM audit_checkpoints WHERE operator_id = :o",
                 o=checkpoint["operator_id"])
    # The period's own verify sees a shorter chain that holds together.
    assert _period(auditor, table)["ok"] is True
    findings = _verify(auditor, checkpoint=checkpoint, receipts=[_receipt(played[-1])])
    assert _kinds(findings) == {("truncated", table, 3)}
    assert auditor.get("/v1/audit/checkpoints").get_json()["items"] == []


def test_a_deleted_reversal_at_the_tail_is_caught_by_its_receipt(auditor, owner_engine):
    table = f"t-{uuid.uuid4().hex[:10]}"
    settled = _settle(auditor, table)
    reversal = _reverse(auditor, settled["round_id"])
    _delete_round(owner_engine, reversal["round_id"])
    assert _period(auditor, table)["ok"] is True
    assert _kinds(_verify(auditor, receipts=[_receipt(reversal)])) == {("truncated", table, 2)}


def test_a_deleted_table_is_missing(auditor, owner_engine):
    table = f"t-{uuid.uuid4().hex[:10]}"
    played = [_settle(auditor, table) for _ in range(2)]
    checkpoint = _checkpoint(auditor)
    for body in played:
        _delete_round(owner_engine, body["round_id"])
    before = _missing_tables_counted(auditor)
    assert _kinds(_verify(auditor, checkpoint=checkpoint)) == {("missing_table", table, 2)}
    assert _missing_tables_counted(auditor) == before + 1  # audit_verify_findings_total


def _missing_tables_counted(client) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    text = client.get("/metrics").get_data(as_text=True)
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == "audit_verify_findings_total"
               and sample.labels == {"source": "kept", "what": "missing_table"})


def _rewrite_in_favour_of_the_loser(owner_engine: Engine, operator: str, table: str,
                                    seq: int) -> None:
    """Re-score round ``seq`` with its first two players' hands swapped, rebuild its rows,
    re-hash it and re-chain every round after it: what the project's own code would store."""
    with owner_engine.begin() as connection:
        connection.exec_driver_sql("SET LOCAL citus.propagate_set_commands = 'local'; "
                                   "SET LOCAL session_replication_role = replica")
        session = Session(bind=connection)
        chain = list(session.scalars(select(Round).where(
            Round.operator_id == operator, Round.table_id == table).order_by(Round.chain_seq)))
        target = chain[seq - 1]
        request = json.loads(json.dumps(target.request))
        first, second = request["players"][0], request["players"][1]
        for row in ("front", "middle", "back"):
            first[row], second[row] = second[row], first[row]
        result = as_stored(round_body(play(parse_round(load_request(request)))))
        session.execute(delete(LedgerLine).where(LedgerLine.round_id == target.id))
        session.execute(delete(RoundPlayer).where(RoundPlayer.round_id == target.id))
        for player in player_rows(result):
            session.add(RoundPlayer(**player, operator_id=operator, round_id=target.id,
                                    table_id=table, chain_seq=target.chain_seq))
        for line in line_rows(result):
            session.add(LedgerLine(**line, round_id=target.id, operator_id=operator,
                                   table_id=table, created_at=target.created_at))
        target.request, target.result = request, result
        session.flush()
        session.expire(target, ["players", "lines"])
        prev_hash = target.prev_hash
        for round_ in chain[seq - 1:]:
            round_.prev_hash = prev_hash
            round_.content_hash = content_hash(round_, round_.players, round_.lines)
            prev_hash = round_.content_hash
        session.flush()


def test_a_full_rewrite_is_named_by_its_receipts_in_every_verify(auditor, owner_engine):
    """Re-scored, re-hashed and re-chained with the project's own code: the database alone
    cannot tell, but no key of the service's signed the new hashes."""
    table = f"t-{uuid.uuid4().hex[:10]}"
    played = [_settle(auditor, table, EX_004) for _ in range(3)]
    checkpoint = _checkpoint(auditor)
    _rewrite_in_favour_of_the_loser(owner_engine, played[0]["operator_id"], table, 2)
    refused = auditor.get(f"/v1/rounds/{played[1]['round_id']}")
    assert refused.status_code == 409
    assert refused.get_json()["type"] == "/problems/unverified-round"
    assert {(d["what"], d["chain_seq"]) for d in _period(auditor, table)["findings"]} == {
        ("receipt_invalid", 2), ("receipt_invalid", 3)}
    assert _kinds(_verify(auditor, checkpoint=checkpoint)) == {
        ("rewritten", table, 3), ("receipt_invalid", table, 2), ("receipt_invalid", table, 3)}
    assert ("rewritten", table, 2) in _kinds(_verify(auditor, receipts=[_receipt(played[1])]))


def test_a_forged_receipt_or_checkpoint_is_a_bad_signature(auditor):
    table = f"t-{uuid.uuid4().hex[:10]}"
    body = _settle(auditor, table)
    checkpoint = _checkpoint(auditor)
    forged = {**_receipt(body), "content_hash": "0" * 64}
    assert _kinds(_verify(auditor, receipts=[forged])) == {("bad_signature", table, 1)}
    note = checkpoint["note"].replace(f"\n{len(checkpoint['heads'])}\n", "\n0\n")
    assert _kinds(_verify(auditor, checkpoint={**checkpoint, "note": note})) == {
        ("bad_signature", None, None)}
    # The heads are not what the signed root covers.
    shorter = {**checkpoint, "heads": [{**checkpoint["heads"][0], "seq": 7}]}
    assert _kinds(_verify(auditor, checkpoint=shorter)) == {("bad_checkpoint", None, None)}


def test_another_operators_checkpoint_does_not_verify_here(auditor, api):
    _settle(auditor, f"t-{uuid.uuid4().hex[:10]}")
    checkpoint = _checkpoint(auditor)
    assert _kinds(_verify(api, checkpoint=checkpoint)) == {("bad_checkpoint", None, None)}


def test_verify_walks_in_bounded_pages_bound_to_what_it_was_given(auditor, owner_engine):
    tables = sorted(f"t-{uuid.uuid4().hex[:10]}" for _ in range(2))
    for table in tables:
        for _ in range(3):
            _settle(auditor, table)
    checkpoint = _checkpoint(auditor)
    pages = []
    body: dict[str, Any] = {"checkpoint": checkpoint, "limit": 2}
    while True:
        page = auditor.post("/v1/audit/verify", json=body).get_json()
        pages.append(page)
        if page["next_cursor"] is None:
            break
        body["cursor"] = page["next_cursor"]
    assert [p["checked"]["rounds"] for p in pages] == [2, 2, 2]
    assert [c["table_id"] for p in pages for c in p["chains"]] == tables
    assert all(p["ok"] for p in pages)
    # The cursor is bound to the checkpoint it walks.
    other = {"receipts": [], "checkpoint": {**checkpoint, "tree_size": 1},
             "cursor": pages[0]["next_cursor"]}
    refused = auditor.post("/v1/audit/verify", json=other)
    assert refused.status_code == 400 and refused.get_json()["errors"][0]["path"] == "cursor"
    assert auditor.post("/v1/audit/verify", json={"limit": 5}).status_code == 422


def test_the_period_verify_runs_to_the_head_in_pages_and_names_a_round_out_of_time(
        auditor, owner_engine):
    table = f"t-{uuid.uuid4().hex[:10]}"
    played = [_settle(auditor, table) for _ in range(3)]
    now = datetime.now(UTC)
    query = {"from": (now - timedelta(hours=1)).isoformat(),
             "to": (now + timedelta(hours=1)).isoformat(), "table_id": table, "limit": 2}
    first = auditor.get(f"/v1/audit/verify?{urlencode(query)}").get_json()
    assert (first["checked"]["rounds"], first["chains"]) == (2, [])
    rest = auditor.get(f"/v1/audit/verify?{urlencode({**query, 'cursor': first['next_cursor']})}")
    assert rest.get_json()["chains"] == [{"table_id": table, "last_seq": 3,
                                          "head_hash": played[-1]["chain"]["content_hash"]}]
    other = urlencode({**query, "table_id": "elsewhere", "cursor": first["next_cursor"]})
    assert auditor.get(f"/v1/audit/verify?{other}").status_code == 400
    # The new time as a value: Citus refuses a timestamp's arithmetic on a column in an UPDATE.
    earlier = datetime.fromisoformat(played[1]["created_at"]) - timedelta(days=1)
    _as_attacker(owner_engine, "UPDATE rounds SET created_at = :t WHERE id = :r",
                 t=earlier, r=played[1]["round_id"])
    query["limit"] = 10
    found = auditor.get(f"/v1/audit/verify?{urlencode(query)}").get_json()["findings"]
    assert {(d["chain_seq"], d["what"]) for d in found} >= {(2, "created_at"),
                                                           (2, "content_hash")}


# --- the command line ------------------------------------------------------------------------


def test_flask_audit_verify_exits_0_clean_and_3_on_findings(auditor, owner_engine, settings,
                                                            tmp_path):
    table = f"t-{uuid.uuid4().hex[:10]}"
    played = [_settle(auditor, table) for _ in range(2)]
    kept = tmp_path / "checkpoint.json"
    kept.write_text(json.dumps(_checkpoint(auditor)))
    env = {**os.environ, "DATABASE_URL": settings.database_url,
           "AUDIT_SIGNING_KEY_FILE": str(settings.audit_signing_key_file)}
    command = [sys.executable, "-m", "flask", "--app", "app", "audit", "verify",
               "--checkpoint", str(kept)]
    clean = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=120)
    assert clean.returncode == 0, clean.stderr
    assert "0 finding(s)" in clean.stderr
    _delete_round(owner_engine, played[-1]["round_id"])
    found = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=120)
    assert found.returncode == 3, found.stderr
    assert found.stdout.startswith(f"truncated\ttable {table}\tseq 2\t")


# --- the chain head row (app.db.appends) ---------------------------------------------------


def _move_head(engine: Engine, operator_id: str, table_id: str, **head: Any) -> None:
    """As the owner (the runtime role may not): what an insider with the database's
    rights can do to a chain's head row."""
    with engine.begin() as connection:
        connection.execute(text("UPDATE chains SET seq = :seq, head_hash = :head_hash "
                                "WHERE operator_id = :o AND table_id = :t"),
                           {"o": operator_id, "t": table_id, **head})


def test_a_forged_chain_head_shows_as_a_broken_link_at_the_next_round(auditor, owner_engine):
    table = f"t-{uuid.uuid4().hex[:10]}"
    first = _settle(auditor, table)
    _move_head(owner_engine, first["operator_id"], table, seq=1, head_hash="f" * 64)
    second = _settle(auditor, table)
    assert second["chain"]["prev_hash"] == "f" * 64
    verified = _period(auditor, table)
    assert verified["ok"] is False
    assert {(d["chain_seq"], d["what"]) for d in verified["findings"]} == {(2, "prev_hash")}


def test_a_rewound_chain_head_refuses_appends_with_a_503_and_writes_nothing(
        auditor, owner_engine, count_rows):
    table = f"t-{uuid.uuid4().hex[:10]}"
    first, _ = _settle(auditor, table), _settle(auditor, table)
    _move_head(owner_engine, first["operator_id"], table, seq=1,
               head_hash=first["chain"]["content_hash"])
    before = count_rows()
    answer = auditor.post("/v1/rounds", json=round_request(EX_000, table),
                          headers={"Idempotency-Key": uuid.uuid4().hex})
    assert answer.status_code == 503
    assert answer.get_json()["type"] == "/problems/chain-head-mismatch"
    assert count_rows() == before
    reversal = auditor.post(f"/v1/rounds/{first['round_id']}/reversal",
                            json={"reason": "misdeal"},
                            headers={"Idempotency-Key": uuid.uuid4().hex})
    assert reversal.status_code == 503
    assert count_rows() == before


def test_a_verify_stops_when_its_time_budget_is_spent_and_goes_on_by_its_cursor(
        make_api, make_key):
    """With no time at all a request still checks one round (or one batch of a kept
    checkpoint's walk) and answers next_cursor; following it checks every round once."""
    api = make_api(verify_budget_s=0.0).with_key(
        make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))
    tables = [f"t-{uuid.uuid4().hex[:10]}" for _ in range(2)]
    for table in tables:
        for _ in range(3):
            _settle(api, table)
    checkpoint = _checkpoint(api)
    pages, checked, body = 0, 0, {"checkpoint": checkpoint}
    while True:
        page = api.post("/v1/audit/verify", json=body).get_json()
        pages, checked = pages + 1, checked + page["checked"]["rounds"]
        assert page["findings"] == []
        if page["next_cursor"] is None:
            break
        body = {**body, "cursor": page["next_cursor"]}
    assert checked == 6 and pages >= 2
    now = datetime.now(UTC)
    query = {"from": (now - timedelta(hours=1)).isoformat(),
             "to": (now + timedelta(hours=1)).isoformat()}
    pages, checked = 0, 0
    while True:
        page = api.get(f"/v1/audit/verify?{urlencode(query)}").get_json()
        pages, checked = pages + 1, checked + page["checked"]["rounds"]
        assert page["ok"] is True
        if page["next_cursor"] is None:
            break
        query["cursor"] = page["next_cursor"]
    assert (checked, pages) == (6, 6)


def test_a_stray_line_is_reported_by_the_period_verify_and_the_kept_checkpoint_verify(
        auditor, owner_engine):
    """Seats and lines have no foreign key to their round (migration 0027): a line that
    names a round no one stored is money a reader sees, outside every round's content, so
    both verifies name it, through the HTTP API."""
    table = f"stray-{uuid.uuid4().hex[:10]}"
    body = _settle(auditor, table)
    checkpoint = _checkpoint(auditor)
    assert _period(auditor, table)["ok"] is True
    assert _verify(auditor, checkpoint=checkpoint, receipts=[_receipt(body)]) == []
    ghost = uuid.uuid4()
    with owner_engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO ledger_lines (round_id, operator_id, table_id, created_at, line_no, "
            "account, kind, amount) SELECT :ghost, operator_id, table_id, created_at, 1, "
            "'A', 'win', 100 FROM rounds WHERE id = :r"),
            {"ghost": ghost, "r": body["round_id"]})
    period = _period(auditor, table)
    assert period["ok"] is False
    assert [(d["what"], d["round_id"], d["chain_seq"]) for d in period["findings"]] == [
        ("stray_lines", str(ghost), 0)]
    findings = _verify(auditor, checkpoint=checkpoint, receipts=[_receipt(body)])
    assert ("stray_lines", table, None) in _kinds(findings)
    assert any(str(ghost) in f["detail"] for f in findings if f["what"] == "stray_lines")


def test_a_caller_cannot_leave_a_wrong_ruleset_for_later_rounds_to_name(api, make_key,
                                                                         engine):
    """A ruleset is kept once per operator and hash, append-only: ledger_append keeps a new
    one only if its text hashes to the round's ruleset_hash, so the runtime login cannot
    plant a changed ruleset under the hash an operator's honest rounds will name."""
    probe = api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))
    seen = _settle(probe, f"t-{uuid.uuid4().hex[:8]}")
    victim_op = f"op-{uuid.uuid4().hex[:10]}"
    victim = api.with_key(make_key("admin", operator_id=victim_op))
    table, round_id = f"junk-{uuid.uuid4().hex[:8]}", uuid.uuid4()
    with engine.begin() as connection, pytest.raises(DBAPIError) as refused:
        taken = connection.execute(text(
            "SELECT * FROM ledger_take(:lock, :operator, :table, :key)"),
            {"lock": f"x-{round_id}", "operator": victim_op, "table": table,
             "key": f"x-{round_id}"}).mappings().one()
        row, result = connection.execute(text(
            "SELECT to_jsonb(r) - 'txid' - 'result', result FROM rounds r WHERE id = :id"),
            {"id": seen["round_id"]}).one()
        planted = dict(connection.execute(text(
            "SELECT ruleset FROM round_rulesets WHERE operator_id = :o"),
            {"o": seen["operator_id"]}).scalar_one())
        planted["precision"] = 4
        row.update(id=str(round_id), operator_id=victim_op, table_id=table,
                   idempotency_key=f"x-{round_id}", chain_seq=taken["seq"] + 1,
                   prev_hash=taken["head_hash"], created_at=taken["locked_at"].isoformat())
        lines = [{"line_no": n, "account": line["account"], "kind": line["kind"],
                  "amount": str(line["amount"]), "balance_before": None,
                  "balance_after": None} for n, line in enumerate(seen["lines"], start=1)]
        connection.execute(text(
            APPEND_FROM_JSON),
            {"r": json.dumps(row), "p": "[]", "l": json.dumps(lines), "result": result,
             "ruleset": json.dumps(planted, sort_keys=True, separators=(",", ":"))})
    assert refused.value.orig.diag.constraint_name == "ledger_append_ruleset"
    honest = _settle(victim, f"t-{uuid.uuid4().hex[:8]}")
    (item,) = victim.get(f"/v1/rounds?table_id={honest['table_id']}").get_json()["items"]
    assert item["stake"] == honest["stake"]
    assert _period(victim, honest["table_id"])["ok"] is True


def test_a_stray_line_of_any_table_and_date_fails_the_kept_checkpoint_verify(auditor,
                                                                             owner_engine):
    """One INSERT by the owner can add a line dated outside any period checked, at a table
    no checkpoint names, and the player's ledger shows it: the kept checkpoint's verify
    checks every line of the operator on its last page."""
    table = f"t-{uuid.uuid4().hex[:8]}"
    body = _settle(auditor, table)
    checkpoint = _checkpoint(auditor)
    with owner_engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO ledger_lines (round_id, operator_id, table_id, created_at, line_no, "
            "account, kind, amount) VALUES (:ghost, :op, 'elsewhere', "
            "'2001-01-01T00:00:00Z', 1, 'A', 'win', 1000000)"),
            {"ghost": uuid.uuid4(), "op": body["operator_id"]})
    assert _period(auditor, table)["ok"] is True  # the period's own lines are all held
    findings = _verify(auditor, checkpoint=checkpoint, receipts=[_receipt(body)])
    assert ("stray_lines", "elsewhere", None) in _kinds(findings)


def test_a_round_whose_ruleset_row_is_gone_is_a_finding_not_a_500(auditor, owner_engine):
    body = _settle(auditor, f"t-{uuid.uuid4().hex[:8]}")
    _as_attacker(owner_engine, "DELETE FROM round_rulesets WHERE operator_id = :o",
                 o=body["operator_id"])
    period = _period(auditor, body["table_id"])
    assert {(d["what"], d["round_id"]) for d in period["findings"]} >= {
        ("ruleset_hash", body["round_id"])}
    # Its content no longer hashes to what its receipt signs, so it is not served (a
    # problem, not a 500); the table's page still lists the round.
    got = auditor.get(f"/v1/rounds/{body['round_id']}")
    assert got.status_code == 409, got.get_json()
    assert got.get_json()["errors"][0]["code"] == "content_hash"
    page = auditor.get(f"/v1/rounds?table_id={body['table_id']}")
    assert page.status_code == 200, page.get_json()
    assert [item["round_id"] for item in page.get_json()["items"]] == [body["round_id"]]


@pytest.mark.parametrize(("ruleset", "overrides"), [
    ({"preset": "bonus3", "overrides": {"fee_rate": "0.03"}}, {"fee_rate": "0.03"}),
    ({"preset": "du4", "overrides": {"special_values": {"six_pairs": 5}}},
     {"special_values": {"six_pairs": 5}}),
    ("bonus3", {})], ids=["fee_rate", "a_table_entry", "no_overrides"])
def test_an_answer_names_its_preset_and_overrides_and_re_scores_to_them(api, ruleset,
                                                                        overrides):
    """Issue 42 §4: the answer says what the request changed of the preset; the stored
    answer is hashed, so re-scoring it must give the same fields back."""
    table = f"ovr-{uuid.uuid4().hex[:10]}"
    body = round_request(EX_004 if "du4" in str(ruleset) else EX_000, table)
    body["ruleset"] = ruleset
    answer = api.post("/v1/rounds", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
    assert answer.status_code == 201, answer.get_json()
    named = answer.get_json()["ruleset"]
    preset = ruleset if isinstance(ruleset, str) else ruleset["preset"]
    assert (named["name"], named["preset"], named["overrides"]) == (preset, preset, overrides)
    stored = api.get(f"/v1/rounds/{answer.get_json()['round_id']}").get_json()["ruleset"]
    assert stored == named
    verified = _period(api, table)
    assert verified["ok"] is True and verified["checked"]["rounds"] == 1, verified


def test_a_receipt_is_verified_as_kept_the_whole_answer_or_its_chain_with_the_table(
        auditor, owner_engine):
    table = f"t-{uuid.uuid4().hex[:8]}"
    body = _settle(auditor, table)
    for kept in (body, {"table_id": table, "chain": body["chain"]}, _receipt(body)):
        assert _verify(auditor, receipts=[kept]) == [], kept
    _delete_round(owner_engine, body["round_id"])
    assert _kinds(_verify(auditor, receipts=[body])) == {("missing_table", table, 1)}
    refused = auditor.post("/v1/audit/verify", json={"receipts": [{"chain": body["chain"]}]})
    assert refused.status_code == 422
    assert {e["path"] for e in refused.get_json()["errors"]} == {"receipts[0].table_id"}
