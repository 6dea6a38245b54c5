"""The audit keyring: a lost key stops the start, a rotation keeps what the old key signed
verifiable, and the auditor verifies with public keys alone.

Each test has its own key file and its own operator, so rotating here touches no other
test's key.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from app.services.signing import ROTATION_GRACE, rotate_key
from tests.e2e.test_audit_api import _checkpoint, _kinds, _receipt, _settle, _statement, _verify
from tests.worked_examples import EX_000

REPO = Path(__file__).resolve().parents[2]


def _api(make_api: Any, make_key: Any, key_file: Path) -> Any:
    operator = f"op-{uuid.uuid4().hex[:10]}"
    return make_api(audit_signing_key_file=key_file).with_key(
        make_key("admin", operator_id=operator))


def _published(api: Any) -> list[dict[str, Any]]:
    answer = api.with_key(None).get("/v1/audit/public-keys")
    assert answer.status_code == 200
    keys: list[dict[str, Any]] = answer.get_json()["keys"]
    return keys


def test_after_a_rotation_old_receipts_and_checkpoints_verify_and_reads_keep_their_receipt(
        make_api, make_key, tmp_path):
    key_file = tmp_path / "audit.pem"
    before = _api(make_api, make_key, key_file)
    table = f"t-{uuid.uuid4().hex[:10]}"
    old_round = _settle(before, table, EX_000)
    checkpoint = _checkpoint(before)
    [old_key] = _published(before)
    assert old_key["valid_to"] is None and old_round["chain"]["key_id"] == old_key["key_id"]

    rotate_key(key_file)
    # The service reloaded after the rotation (a new app reads the key files again).
    after = make_api(audit_signing_key_file=key_file).with_key(
        make_key("admin", operator_id=old_round["operator_id"]))
    keys = _published(after)
    assert [k["key_id"] for k in keys] == [old_key["key_id"], keys[1]["key_id"]]
    # The old key stays valid a grace period past the new one's start: the workers sign
    # with it until they are reloaded.
    assert (datetime.fromisoformat(keys[0]["valid_to"]) - ROTATION_GRACE
            == datetime.fromisoformat(keys[1]["valid_from"])) and keys[1]["valid_to"] is None
    assert after.with_key(None).get("/v1/audit/public-key").get_json()["key_id"] == \
        keys[1]["key_id"]
    # Reading the old round gives the receipt made at append, by the old key.
    assert after.get(f"/v1/rounds/{old_round['round_id']}").get_json()["chain"] == \
        old_round["chain"]
    new_round = _settle(after, table, EX_000)
    assert new_round["chain"]["key_id"] == keys[1]["key_id"]
    # Old checkpoint and receipts, and new ones, verify; the chains are walked.
    for kept in ({"checkpoint": checkpoint}, {"receipts": [_receipt(old_round)]},
                 {"checkpoint": _checkpoint(after), "receipts": [_receipt(new_round)]}):
        answer = after.post("/v1/audit/verify", json=kept)
        assert answer.status_code == 200
        report = answer.get_json()
        assert report["ok"] is True, report
        assert report["checked"]["rounds"] > 0 and report["checked"]["chains"] == 1
    # Each receipt checks with its own published key, with cryptography alone.
    for body in (old_round, new_round):
        key = next(k for k in keys if k["key_id"] == body["chain"]["key_id"])
        Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"])).verify(
            base64.b64decode(body["chain"]["signature"]),
            _statement(body["operator_id"], body))


def test_a_rewrite_after_a_rotation_is_still_found_by_the_old_checkpoint(
        make_api, make_key, tmp_path, owner_engine):
    from tests.e2e.test_audit_api import _delete_round

    key_file = tmp_path / "audit.pem"
    before = _api(make_api, make_key, key_file)
    table = f"t-{uuid.uuid4().hex[:10]}"
    played = [_settle(before, table) for _ in range(2)]
    checkpoint = _checkpoint(before)
    rotate_key(key_file)
    after = make_api(audit_signing_key_file=key_file).with_key(
        make_key("admin", operator_id=played[0]["operator_id"]))
    _delete_round(owner_engine, played[-1]["round_id"])
    assert _kinds(_verify(after, checkpoint=checkpoint)) == {("truncated", table, 2)}


def test_a_start_without_its_key_file_is_refused_naming_the_setting(database_url, tmp_path):
    missing = tmp_path / "moved-aside.pem"
    env = {k: v for k, v in os.environ.items() if k != "AUDIT_SIGNING_KEY_CREATE"}
    env |= {"DATABASE_URL": database_url, "AUDIT_SIGNING_KEY_FILE": str(missing)}
    done = subprocess.run([sys.executable, "-m", "app"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "AUDIT_SIGNING_KEY_FILE" in done.stderr and "start-up refused" in done.stderr
    assert not missing.exists()


def test_the_auditor_verifies_with_saved_public_keys_and_no_private_key(
        make_api, make_key, tmp_path, settings):
    key_file = tmp_path / "audit.pem"
    api = _api(make_api, make_key, key_file)
    table = f"t-{uuid.uuid4().hex[:10]}"
    _settle(api, table)
    kept = tmp_path / "checkpoint.json"
    kept.write_text(json.dumps(_checkpoint(api)))
    keys = tmp_path / "public-keys.json"
    keys.write_text(json.dumps({"keys": _published(api)}))
    rotate_key(key_file)
    # The auditor's machine: no private key at all, only what it kept.
    env = {**os.environ, "DATABASE_URL": settings.database_url,
           "AUDIT_SIGNING_KEY_FILE": str(tmp_path / "absent" / "audit.pem")}
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "app", "audit", "verify",
                           "--checkpoint", str(kept), "--public-keys", str(keys)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "0 finding(s)" in done.stderr
    assert not (tmp_path / "absent").exists()
