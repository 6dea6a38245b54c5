"""The append functions refuse what no honest service sends (app/db/sql/ledger_append.sql,
match_open.sql, checkpoint_add.sql), tried as the service's own database login.

A round at content version 1, a round without a receipt, a ruleset text that is not the
canonical JSON of itself (a key twice, spaces), a match whose ruleset does not hash to
its hash and a checkpoint without its signature line are each refused with a
check_violation naming the rule; the honest service's settles, reversals, matches and
checkpoints pass. The database's canonical JSON (ledger_canonical_json) is byte for byte
the service's (app/json_codec.py canonical_json) on every preset, on overridden rulesets
and on any JSON value a ruleset could hold.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from app.db.driver import refusal
from app.domain.errors import RulesetError
from app.domain.games import PRESETS, resolve, rules_hash, rules_to_dict
from app.domain.matches import MAX_PENALTY_MULTIPLE, MAX_ROUNDS_PER_MATCH, match_rules
from app.json_codec import canonical_json
from app.services.uow import ConstraintViolation
from tests.append_calls import APPEND_FROM_JSON
from tests.e2e.test_audit_api import _checkpoint, _reverse, _settle
from tests.worked_examples import EX_004, round_request

CHECK_VIOLATION = "23514"


@pytest.fixture
def auditor(api: Any, make_key: Callable[..., str]) -> Any:
    """A contract client acting for a fresh operator, holding every scope."""
    return api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))


def _table() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def _sql_canonical(engine: Engine, value_text: str) -> str:
    with engine.connect() as connection:
        return str(connection.scalar(text("SELECT ledger_canonical_json(CAST(:v AS jsonb))"),
                                     {"v": value_text}))


# --- the database's canonical JSON is the service's ---------------------------------------


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_canonical_json_of_every_preset_is_the_services(owner_engine, name):
    rules = PRESETS[name]
    written = canonical_json(rules_to_dict(rules)).decode()
    assert hashlib.sha256(written.encode()).hexdigest() == rules_hash(rules)
    assert _sql_canonical(owner_engine, written) == written


def _overrides(rng: random.Random, name: str) -> dict[str, Any]:
    """Random overrides of preset ``name``; some the service refuses, which are skipped."""
    fee = f"{rng.choice(['0', '0.0', '0.03', '0.050', '0.1', '0.125'])}"
    if name in ("qiang21", "erbagang"):
        return rng.choice([{"fee_rate": fee}, {"fee_basis": rng.choice(["net", "gross"])},
                           {"bet_requires_cover": rng.choice([True, False])},
                           {"fee_rate": fee, "precision": rng.randint(0, 4)}])
    return rng.choice([
        {"fee_rate": fee},
        {"row_bonus": {"front": {"three_of_a_kind": rng.randint(0, 30)}}},
        {"scoop": {"amount": rng.randint(1, 6)}},
        {"special_values": {"six_pairs": rng.randint(0, 40)}, "fee_rate": fee},
        {"row_bonus": {"back": {"four_of_a_kind": rng.randint(0, 30)}},
         "scoop": {"amount": rng.randint(1, 6)}},
    ])


def test_the_canonical_json_of_overridden_rulesets_is_the_services(owner_engine):
    rng = random.Random(20261204)
    checked = 0
    for _ in range(120):
        name = rng.choice(list(PRESETS))
        try:
            rules = resolve({"preset": name, "overrides": _overrides(rng, name)})
        except ValueError:  # RulesetError among them
            continue
        written = canonical_json(rules_to_dict(rules)).decode()
        assert hashlib.sha256(written.encode()).hexdigest() == rules_hash(rules)
        assert _sql_canonical(owner_engine, written) == written, (name, written)
        checked += 1
    assert checked >= 60


# Any JSON value but floats (money and rates are Decimal strings; no ruleset holds a
# float) and NUL (which PostgreSQL's text cannot hold): control characters, quotes,
# backslashes, non-ASCII and astral characters, integers past 64 bits.
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10 ** 30), 10 ** 30) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_JSON)
def test_the_canonical_json_of_any_ruleset_value_is_the_services(owner_engine, value):
    written = canonical_json(value).decode()
    assert _sql_canonical(owner_engine, written) == written


@pytest.mark.parametrize("sent", [
    '{"a":1,"a":2}', '{"a": 1}', '{"b":1,"a":2}', '{"a":"\\u00e9"}', '{"a":"\\/"}',
    '{"a":1.0e1}', ' {"a":1}'])
def test_a_text_that_is_not_canonical_canonicalises_to_another(owner_engine, sent):
    assert _sql_canonical(owner_engine, sent) != sent


# --- as the service's own database login ----------------------------------------------------


def _forge(engine: Engine, body: dict[str, Any], ruleset: str | None = None,
           **changes: Any) -> None:
    """Call ledger_take then ledger_append as the service's login with a copy of a stored
    round under a new id, at its chain's head, its columns changed by ``changes``; with
    ``ruleset``, under that text's hash (new to the operator), sent as the ruleset."""
    round_id = uuid.uuid4()
    with engine.begin() as connection:
        taken = connection.execute(text(
            "SELECT * FROM ledger_take(:lock, :operator, :table, :key)"),
            {"lock": f"forge-{round_id}", "operator": body["operator_id"],
             "table": body["table_id"], "key": f"forge-{round_id}"}).mappings().one()
        row = connection.execute(text(
            "SELECT to_jsonb(r) - 'txid' FROM rounds r WHERE id = :id"),
            {"id": body["round_id"]}).scalar_one()
        row.update(id=str(round_id), idempotency_key=f"forge-{round_id}",
                   chain_seq=taken["seq"] + 1, prev_hash=taken["head_hash"],
                   created_at=taken["locked_at"].isoformat(), **changes)
        if ruleset is not None:
            row["ruleset_hash"] = hashlib.sha256(ruleset.encode()).hexdigest()
        lines = [{"line_no": n, "account": line["account"], "kind": line["kind"],
                  "amount": line["amount"], "balance_before": None, "balance_after": None}
                 for n, line in enumerate(body["lines"], start=1)]
        connection.execute(text(APPEND_FROM_JSON),
                           {"r": json.dumps(row), "p": "[]", "l": json.dumps(lines),
                            "result": row["result"], "ruleset": ruleset})


def _refused(call: Callable[[], None], count_rows: Callable[[], dict[str, int]],
             constraint: str) -> str:
    before = count_rows()
    with pytest.raises(IntegrityError) as caught:
        call()
    assert caught.value.orig.sqlstate == CHECK_VIOLATION, caught.value.orig
    # What the service would read: a ConstraintViolation naming the rule.
    refused = refusal(caught.value)
    assert isinstance(refused, ConstraintViolation) and refused.constraint == constraint
    assert count_rows() == before
    return str(caught.value.orig)


def test_a_round_at_content_version_1_is_refused(auditor, engine, count_rows):
    body = _settle(auditor, _table())
    said = _refused(lambda: _forge(engine, body, content_version=1), count_rows,
                    "ledger_append_content_version")
    assert "is at content version 1, not 2" in said


@pytest.mark.parametrize("receipt", [
    {"receipt_key_id": None, "receipt_signature": None},
    {"receipt_key_id": "", "receipt_signature": ""},
    {"receipt_signature": None},
    {"receipt_signature": "not a signature"},
    {"receipt_signature": "A" * 88},
    {"receipt_signature": "A" * 84 + "B==="},
    {"receipt_key_id": "ABCDEF12"},
    {"receipt_key_id": "abcdef1"},
], ids=["none", "empty", "no-signature", "not-base64", "no-padding", "not-64-bytes",
        "upper-case-key", "short-key"])
def test_a_round_without_a_receipt_is_refused(auditor, engine, count_rows, receipt):
    body = _settle(auditor, _table())
    _refused(lambda: _forge(engine, body, **receipt), count_rows, "ledger_append_receipt")


@pytest.mark.parametrize("make_text", [
    # The same ruleset with its fee written twice: the text hashes, jsonb keeps the second.
    lambda rules: canonical_json(rules).decode()[:-1] + ',"fee_rate":"0.99"}',
    lambda rules: json.dumps(rules, sort_keys=True),  # spaces after , and :
    lambda rules: json.dumps(rules, separators=(",", ":")),  # keys as they came
    lambda rules: json.dumps(rules, sort_keys=True, separators=(",", ":"),
                             ensure_ascii=True).replace('"0', '"\\u0030'),  # escapes
], ids=["duplicate-key", "spaces", "unsorted", "needless-escape"])
def test_a_ruleset_text_that_is_not_its_own_canonical_json_is_refused(
        auditor, engine, owner_engine, count_rows, make_text):
    body = _settle(auditor, _table())
    rules = rules_to_dict(PRESETS["bonus3"])
    rules = {key: rules[key] for key in reversed(list(rules))}  # out of order as sent
    sent = make_text(rules)
    assert sent != canonical_json(rules).decode()
    said = _refused(lambda: _forge(engine, body, ruleset=sent), count_rows,
                    "ledger_append_ruleset_canonical")
    assert "is not canonical JSON" in said
    with owner_engine.connect() as connection:
        assert connection.scalar(text(
            "SELECT count(*) FROM round_rulesets WHERE ruleset_hash = :h"),
            {"h": hashlib.sha256(sent.encode()).hexdigest()}) == 0


def test_a_canonical_ruleset_new_to_the_operator_is_kept_as_it_was_hashed(
        auditor, engine, owner_engine):
    """The control: the same call with the canonical text passes, and what is kept is
    what was hashed."""
    body = _settle(auditor, _table())
    rules = {**rules_to_dict(PRESETS["bonus3"]), "fee_rate": "0.0123"}
    sent = canonical_json(rules).decode()
    _forge(engine, body, ruleset=sent)
    with owner_engine.connect() as connection:
        kept = connection.scalar(text(
            "SELECT ledger_canonical_json(ruleset) FROM round_rulesets "
            "WHERE operator_id = :o AND ruleset_hash = :h"),
            {"o": body["operator_id"], "h": hashlib.sha256(sent.encode()).hexdigest()})
    assert kept == sent


def _match(operator_id: str = "default", **changes: Any) -> dict[str, Any]:
    """A match row as match_open takes it, under bonus3 (``changes`` over its columns)."""
    return {"id": str(uuid.uuid4()), "operator_id": operator_id, "table_id": _table(),
            "ruleset_name": "bonus3", "ruleset": rules_to_dict(PRESETS["bonus3"]),
            "ruleset_hash": rules_hash(PRESETS["bonus3"]),
            "match_rules": match_rules("bonus3", {}, "match").to_dict(),
            "stake": "200", "seats": [{"player_id": "A", "house": False}],
            "idempotency_key": uuid.uuid4().hex, "body_hash": "0" * 64, **changes}


def _open_match(engine: Engine, match: dict[str, Any]) -> None:
    with engine.begin() as connection:
        connection.execute(text("SELECT match_open(CAST(:m AS jsonb))"),
                           {"m": json.dumps(match)})


def test_a_match_whose_ruleset_does_not_hash_to_its_hash_is_refused(auditor, engine,
                                                                    count_rows):
    match = _match(ruleset={**rules_to_dict(PRESETS["bonus3"]), "fee_rate": "0.99"})
    said = _refused(lambda: _open_match(engine, match), count_rows, "match_open_ruleset")
    assert f"does not hash to {match['ruleset_hash']}" in said


@pytest.mark.parametrize("stake", ["NaN", "Infinity", "-Infinity"])
def test_a_match_whose_stake_is_not_a_number_is_refused_and_its_operator_lists_on(
        auditor, engine, count_rows, stake):
    """Before migration 0039 the table's bound (stake > 0) took NaN and Infinity, and the
    operator's list of matches, and the match, answered 500."""
    operator = _settle(auditor, _table())["operator_id"]
    match = _match(operator, stake=stake)
    said = _refused(lambda: _open_match(engine, match), count_rows, "ledger_money_finite")
    assert "ledger_money" in said
    assert auditor.get("/v1/matches").status_code == 200
    assert auditor.get(f"/v1/matches/{match['id']}").status_code == 404


@pytest.mark.parametrize("change", [
    lambda c: {**c, "note": c["note"].split("\n\n")[0] + "\n"},  # no signature line
    lambda c: {**c, "key_id": "0badc0de"},  # the note's signature is another key's
    lambda c: {**c, "key_id": ""},
    lambda c: {**c, "note": c["note"].replace(c["note"].split(" ")[-1], "AAAA\n")},
], ids=["unsigned", "other-key", "no-key", "short-signature"])
def test_a_checkpoint_without_its_signature_is_refused(auditor, engine, count_rows, change):
    _settle(auditor, _table())
    kept = _checkpoint(auditor)
    row = change({"id": str(uuid.uuid4()), "operator_id": kept["operator_id"],
                  "created_at": kept["created_at"], "tree_size": kept["tree_size"],
                  "root_hash": kept["root_hash"], "heads": {"heads": kept["heads"]},
                  "note": kept["note"], "key_id": kept["key_id"]})

    def add() -> None:
        with engine.begin() as connection:
            connection.execute(text("SELECT checkpoint_add(CAST(:c AS jsonb))"),
                               {"c": json.dumps(row)})

    _refused(add, count_rows, "checkpoint_add_signed")


def test_the_honest_service_settles_reverses_opens_matches_and_checkpoints(api, auditor):
    """Every append of the service passes the checks: a settle under a ruleset new to the
    operator (an override), a reversal, a match with its rounds, a checkpoint."""
    table = _table()
    request = round_request(EX_004, table)
    request["ruleset"] = {"preset": request["ruleset"], "overrides": {"fee_rate": "0.0314"}}
    answer = auditor.post("/v1/rounds", json=request,
                          headers={"Idempotency-Key": uuid.uuid4().hex})
    assert answer.status_code == 201, answer.get_json()
    _reverse(auditor, answer.get_json()["round_id"])
    opened = auditor.post("/v1/matches", json={
        "ruleset": {"preset": "bonus3", "overrides": {"fee_rate": "0.0271"}},
        "table_id": _table(), "stake": "200", "seats": ["A", "B", "C"]},
        headers={"Idempotency-Key": uuid.uuid4().hex})
    assert opened.status_code == 201, opened.get_json()
    assert _checkpoint(auditor)["key_id"]


_RULES = match_rules("bonus3", {}, "match").to_dict()
# Matches the service never opens, each read back by every read of the match: before
# migration 0039 each went in, and the operator's list of matches (or a player's leave,
# for a penalty that is not a number) answered 500.
NOT_AS_WRITTEN = {
    **{f"penalty-{v}": {"match_rules": {**_RULES, "leave_penalty": v}}
       for v in ("NaN", "Infinity", "-Infinity", "1e400")},
    "penalty-a-number": {"match_rules": {**_RULES, "leave_penalty": 1}},
    "penalty-to-nobody": {"match_rules": {**_RULES, "leave_penalty_to": "nobody"}},
    "rounds-text": {"match_rules": {**_RULES, "rounds_per_match": "x"}},
    "rounds-none": {"match_rules": {**_RULES, "rounds_per_match": 0}},
    "leave-after-the-last": {"match_rules": {**_RULES, "min_rounds_before_leave": 17}},
    "house-seat-text": {"match_rules": {**_RULES, "house_seat": "yes"}},
    "no-rules": {"match_rules": {}},
    "seats-text": {"seats": "x"},
    "no-seats": {"seats": []},
    "seat-without-house": {"seats": [{"player_id": "A"}]},
    "seat-id-a-number": {"seats": [{"player_id": 7, "house": False}]},
}


@pytest.mark.parametrize("changes", list(NOT_AS_WRITTEN.values()), ids=list(NOT_AS_WRITTEN))
def test_a_match_not_as_the_service_writes_it_is_refused(auditor, engine, count_rows,
                                                          changes):
    operator = _settle(auditor, _table())["operator_id"]
    match = _match(operator, **changes)
    _refused(lambda: _open_match(engine, match), count_rows, "match_open_shape")
    assert auditor.get("/v1/matches").status_code == 200


def test_a_match_as_the_service_writes_it_is_opened_and_listed(auditor, engine):
    """The control: the same call with the service's own seats and rules goes in."""
    operator = _settle(auditor, _table())["operator_id"]
    match = _match(operator)
    _open_match(engine, match)
    listed = auditor.get("/v1/matches")
    assert listed.status_code == 200
    assert match["id"] in [m["match_id"] for m in listed.get_json()["items"]]


# The domain's edges of a match's rules (app/domain/matches.py), each opened through
# match_open as the service's login: what the domain makes is kept, and what it refuses
# the function refuses too, so the two statements of one rule cannot drift apart.
_EDGES_KEPT = [{"rounds_per_match": 1, "min_rounds_before_leave": 0},
               {"rounds_per_match": MAX_ROUNDS_PER_MATCH,
                "min_rounds_before_leave": MAX_ROUNDS_PER_MATCH},
               {"leave_penalty": "0"}, {"leave_penalty": str(MAX_PENALTY_MULTIPLE)},
               {"leave_penalty": "0.0001"}, {"leave_penalty": "99.9999"},
               {"leave_penalty_to": "seats", "house_seat": False}]
_EDGES_REFUSED = [{"rounds_per_match": 0}, {"rounds_per_match": MAX_ROUNDS_PER_MATCH + 1},
                  {"rounds_per_match": 4, "min_rounds_before_leave": 5},
                  {"leave_penalty": "100.0001"}, {"leave_penalty": "101"},
                  {"leave_penalty": "0.00001"}]


@pytest.mark.parametrize("overrides", _EDGES_KEPT, ids=str)
def test_match_open_keeps_every_edge_of_rules_the_domain_makes(auditor, engine, overrides):
    operator = _settle(auditor, _table())["operator_id"]
    match = _match(operator, match_rules=match_rules("bonus3", overrides, "match").to_dict())
    _open_match(engine, match)
    assert auditor.get(f"/v1/matches/{match['id']}").status_code == 200


@pytest.mark.parametrize("overrides", _EDGES_REFUSED, ids=str)
def test_match_open_refuses_every_edge_of_rules_the_domain_refuses(auditor, engine,
                                                                   count_rows, overrides):
    with pytest.raises(RulesetError):
        match_rules("bonus3", overrides, "match")
    operator = _settle(auditor, _table())["operator_id"]
    match = _match(operator, match_rules={**_RULES, **overrides})
    _refused(lambda: _open_match(engine, match), count_rows, "match_open_shape")
