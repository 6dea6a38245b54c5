"""One kept round checked offline: its content as its hash covers it, the auditor's command
line, and the auditor's guide's snippet, each against rounds settled through HTTP.

A receipt signs a round's place and its content hash; ``GET /v1/rounds/{id}/content``
answers the text that hash covers, so the answer's amounts check against the receipt with
the public keys alone: ``flask --app app audit check-receipt`` (run here through click, and
once as the real command with no database to reach) and the guide's Python snippet.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from app.cli import audit
from app.json_codec import canonical_json
from app.services.signing import Signer, receipt_statement
from tests.e2e.test_audit_api import _reverse, _settle
from tests.e2e.test_forged_rounds import _forge
from tests.worked_examples import EX_000, round_request

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "guides" / "auditor.md"


@pytest.fixture
def auditor(api: Any, make_key: Callable[..., str]) -> Any:
    """A contract client acting for a fresh operator, holding every scope."""
    return api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))


def _table() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def _content(api: Any, round_id: str) -> bytes:
    answer = api.get(f"/v1/rounds/{round_id}/content")
    assert answer.status_code == 200, answer.get_json()
    data: bytes = answer.get_data()
    return data


# --- the content route ---------------------------------------------------------------------


def test_the_content_is_the_exact_text_the_rounds_hash_covers_and_holds_its_figures(auditor):
    settled = _settle(auditor, _table())
    answer = auditor.get(f"/v1/rounds/{settled['round_id']}/content")
    assert answer.status_code == 200 and answer.mimetype == "application/json"
    text = answer.get_data()
    assert hashlib.sha256(text).hexdigest() == settled["chain"]["content_hash"]
    content = json.loads(text)
    assert canonical_json(content) == text, "the text served is already canonical"
    assert (content["round_id"], content["chain_seq"], content["prev_hash"]) == (
        settled["round_id"], 1, None)
    assert all(settled[name] == value for name, value in content["result"].items())
    assert [(p["player_id"], p["amount"]) for p in content["players"]] == [
        (p["player_id"], p["amount"]) for p in settled["players"]]
    assert len(content["lines"]) == len(settled["lines"])
    # Tagged by the content hash: a reader who has it is told it has not changed.
    assert answer.headers["ETag"] == f'"{settled["chain"]["content_hash"]}"'
    again = auditor.get(f"/v1/rounds/{settled['round_id']}/content",
                        headers={"If-None-Match": answer.headers["ETag"]})
    assert again.status_code == 304 and again.get_data() == b""
    # Reversing the round changes its read, never its content.
    reversal = _reverse(auditor, settled["round_id"])
    assert _content(auditor, settled["round_id"]) == text
    mirrored = _content(auditor, reversal["round_id"])
    assert hashlib.sha256(mirrored).hexdigest() == reversal["chain"]["content_hash"]
    assert json.loads(mirrored)["reverses_round_id"] == settled["round_id"]


def test_the_content_is_read_with_the_reads_scope_by_the_rounds_operator_alone(
        auditor, api, make_key):
    settled = _settle(auditor, _table())
    path = f"/v1/rounds/{settled['round_id']}/content"
    operator = settled["operator_id"]
    assert api.with_key(make_key("rounds:read", operator_id=operator)).get(path).status_code \
        == 200
    assert api.with_key(make_key("rounds:write", operator_id=operator)).get(path).status_code \
        == 403
    elsewhere = api.with_key(make_key("admin", operator_id=f"op-{uuid.uuid4().hex[:10]}"))
    assert elsewhere.get(path).status_code == 404
    assert elsewhere.get(f"/v1/rounds/{settled['round_id']}").status_code == 404
    assert auditor.get(f"/v1/rounds/{uuid.uuid4()}/content").status_code == 404


def test_a_round_the_service_login_forged_is_refused_as_its_read_is(auditor, engine):
    settled = _settle(auditor, _table())
    forged = _forge(engine, settled)
    content = auditor.get(f"/v1/rounds/{forged}/content")
    read = auditor.get(f"/v1/rounds/{forged}")
    assert content.status_code == read.status_code == 409
    shown = ("type", "title", "status", "detail", "errors")
    assert {k: content.get_json()[k] for k in shown} == {k: read.get_json()[k] for k in shown}
    assert content.get_json()["errors"][0]["code"] == "receipt_invalid"
    assert content.mimetype == "application/problem+json"
    # The honest round before it still serves its content.
    assert hashlib.sha256(_content(auditor, settled["round_id"])).hexdigest() \
        == settled["chain"]["content_hash"]


# --- the command line ----------------------------------------------------------------------


def _kept(tmp_path: Path, api: Any, answer: bytes, content: bytes | None = None) -> list[str]:
    """Write what an auditor keeps; return the command's arguments for it."""
    folder = tmp_path / uuid.uuid4().hex[:8]
    folder.mkdir()
    (folder / "round.json").write_bytes(answer)
    (folder / "public-keys.json").write_bytes(api.get("/v1/audit/public-keys").get_data())
    args = ["check-receipt", str(folder / "round.json"),
            "--public-keys", str(folder / "public-keys.json")]
    if content is not None:
        (folder / "content.json").write_bytes(content)
        args += ["--content", str(folder / "content.json")]
    return args


def _check(args: list[str]) -> tuple[int, list[list[str]], str]:
    """Run ``audit check-receipt``; return its exit code, its lines split at tabs and its
    standard error."""
    done = CliRunner().invoke(audit, args)
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return (done.exit_code, [line.split("\t") for line in done.stdout.splitlines()],
            done.stderr)


def _found(lines: list[list[str]]) -> dict[str, str]:
    """The findings of a run, by check: ``{check: finding}``."""
    return {check: finding for finding, check, _ in lines if finding != "ok"}


def _bytes(value: Any) -> bytes:
    return json.dumps(value, indent=2, ensure_ascii=False).encode()


def _answers(api: Any, kind: str) -> bytes:
    """A round's answer, as kept (its bytes as served), of each kind an auditor may hold."""
    table = _table()
    key = {"Idempotency-Key": uuid.uuid4().hex}
    request = round_request(EX_000, table)
    first = api.post("/v1/rounds", json=request, headers=key)
    assert first.status_code == 201, first.get_json()
    round_id = first.get_json()["round_id"]
    if kind == "replay":
        answer = api.post("/v1/rounds", json=request, headers=key)
        assert answer.headers["Idempotent-Replayed"] == "true"
    elif kind == "read":
        answer = api.get(f"/v1/rounds/{round_id}")
    elif kind == "reversal":
        answer = api.post(f"/v1/rounds/{round_id}/reversal", json={"reason": "dealt twice"},
                          headers={"Idempotency-Key": uuid.uuid4().hex})
    elif kind == "cash":
        player = first.get_json()["players"][0]["player_id"]
        answer = api.post(f"/v1/tables/{table}/cash",
                          headers={"Idempotency-Key": uuid.uuid4().hex},
                          json={"reason": "at the desk", "movements": [
                              {"player_id": player, "kind": "top_up", "amount": "500"}]})
    else:
        answer = first
    assert answer.status_code in (200, 201), answer.get_json()
    data: bytes = answer.get_data()
    return data


@pytest.mark.parametrize("kind", ["settle", "replay", "read", "reversal", "cash"])
def test_a_kept_answer_and_its_content_check_clean_with_the_public_keys_alone(
        auditor, tmp_path, kind):
    answer = _answers(auditor, kind)
    round_id = json.loads(answer)["round_id"]
    code, lines, said = _check(_kept(tmp_path, auditor, answer, _content(auditor, round_id)))
    assert code == 0, lines
    assert [(finding, check) for finding, check, _ in lines] == [
        ("ok", "receipt"), ("ok", "content_hash"), ("ok", "round"), ("ok", "result"),
        ("ok", "players"), ("ok", "lines")]
    assert "0 finding(s)" in said
    # Pretty-printed since, the content still checks: its canonical text is written again.
    pretty = _bytes(json.loads(_content(auditor, round_id)))
    assert _check(_kept(tmp_path, auditor, answer, pretty))[0] == 0


def test_the_receipt_alone_checks_and_says_the_amounts_are_not_tied_to_it(auditor, tmp_path):
    settled = _settle(auditor, _table())
    code, lines, said = _check(_kept(tmp_path, auditor, _bytes(settled)))
    assert code == 0 and [line[:2] for line in lines] == [["ok", "receipt"]]
    assert settled["chain"]["key_id"] in lines[0][2]
    assert "without --content the amounts are not tied to the receipt" in said


def test_an_amount_changed_in_the_kept_answer_is_named_in_its_result_seat_and_line(
        auditor, tmp_path):
    settled = _settle(auditor, _table())
    content = _content(auditor, settled["round_id"])
    changed = json.loads(json.dumps(settled))
    changed["players"][0]["amount"] = "9205"
    changed["lines"][0]["amount"] = "9205"
    code, lines, _ = _check(_kept(tmp_path, auditor, _bytes(changed), content))
    assert code == 1
    assert _found(lines) == {"result": "result", "players": "players_changed",
                             "lines": "lines_changed"}
    details = {check: detail for _, check, detail in lines}
    assert "players[0].amount: expected '9205', stored '8205'" in details["result"]
    assert "seat 0: amount 9205 stored as 8205" in details["players"]
    assert "line 1: amount 9205 stored as 8205" in details["lines"]
    # The receipt still holds: it signs the place and the content hash, not the amounts.
    assert lines[0][:2] == ["ok", "receipt"]


def test_a_changed_content_or_another_rounds_is_not_the_one_the_receipt_signs(
        auditor, tmp_path):
    table = _table()
    settled = _settle(auditor, table)
    content = json.loads(_content(auditor, settled["round_id"]))
    content["players"][0]["amount"] = "9205"
    code, lines, _ = _check(_kept(tmp_path, auditor, _bytes(settled), _bytes(content)))
    assert code == 1
    assert _found(lines) == {"content_hash": "content_hash", "players": "players_changed"}
    later = _settle(auditor, table)
    code, lines, _ = _check(_kept(tmp_path, auditor, _bytes(settled),
                                  _content(auditor, later["round_id"])))
    assert code == 1
    assert {"content_hash": "content_hash", "round": "round_changed"}.items() \
        <= _found(lines).items()
    assert "seq 1 in the answer, 2 in the content" in dict(
        (check, detail) for _, check, detail in lines)["round"]


def test_a_receipt_signed_by_a_key_the_service_never_published_is_invalid(auditor, tmp_path):
    settled = _settle(auditor, _table())
    content = _content(auditor, settled["round_id"])
    other = Signer(Ed25519PrivateKey.generate())
    chain = settled["chain"]
    settled["chain"] = {**chain, "key_id": other.key_id, "signature": other.sign(
        receipt_statement(settled["operator_id"], settled["table_id"], chain["seq"],
                          chain["prev_hash"], chain["content_hash"]))}
    code, lines, _ = _check(_kept(tmp_path, auditor, _bytes(settled), content))
    assert code == 1
    assert _found(lines) == {"receipt": "receipt_invalid"}
    assert "is not one of the service's published keys" in lines[0][2]


def test_a_receipt_made_outside_its_keys_validity_is_invalid(auditor, tmp_path):
    settled = _settle(auditor, _table())
    args = _kept(tmp_path, auditor, _bytes(settled))
    keys_file = Path(args[3])
    keys = json.loads(keys_file.read_text())
    made = datetime.fromisoformat(settled["created_at"])
    for key in keys["keys"]:
        key["valid_from"] = (made + timedelta(seconds=1)).isoformat()
    keys_file.write_text(json.dumps(keys))
    code, lines, _ = _check(args)
    assert code == 1 and _found(lines) == {"receipt": "receipt_invalid"}
    assert f"not at the round's created_at {settled['created_at']}" in lines[0][2]


@pytest.mark.parametrize(("what", "breaks", "said"), [
    ("round.json", "missing", "does not exist"),
    ("round.json", b"{not json", "cannot read"),
    ("round.json", b'{"round_id": "x"}', "not a round's answer"),
    ("round.json", b'{"chain": {"seq": 1}, "created_at": "2026-12-01T00:00:00+00:00"}',
     "it has no 'operator_id'"),
    ("public-keys.json", b"[]", "not a list of public keys"),
    ("public-keys.json", "missing", "does not exist"),
    ("content.json", b"\xff\xfe", "cannot read"),
    ("content.json", b"[1, 2]", "not a round's content"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_a_missing_or_unreadable_file_is_a_usage_error(auditor, tmp_path, what, breaks, said):
    settled = _settle(auditor, _table())
    args = _kept(tmp_path, auditor, _bytes(settled), _content(auditor, settled["round_id"]))
    target = Path(args[1]).with_name(what)
    if breaks == "missing":
        target.unlink()
    else:
        target.write_bytes(breaks)
    code, lines, errors = _check(args)
    assert code == 2 and lines == [], lines
    assert said in errors, errors


def test_the_command_line_checks_offline_with_no_database_and_no_private_key(auditor,
                                                                            tmp_path):
    """The real command: DATABASE_URL unset, so any use of a database would start the
    embedded one, and a signing key file that is not there, which nothing may make."""
    settled = _settle(auditor, _table())
    args = _kept(tmp_path, auditor, _bytes(settled), _content(auditor, settled["round_id"]))
    data_dir, key = tmp_path / "pgdata", tmp_path / "audit-signing-key.pem"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {
        "PGSERVER_DATA_DIR": str(data_dir), "AUDIT_SIGNING_KEY_FILE": str(key)}
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "app", "audit", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["ok"] * 6
    assert not data_dir.exists(), "the check started the embedded database"
    assert not key.exists(), "the check made a signing key"


# --- the guide's snippet -------------------------------------------------------------------


def _snippet() -> str:
    """The auditor's guide's Python check of a kept round, as the page shows it."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"),
                                    re.S) if "content.json" in b]
    assert len(blocks) == 1, "the guide shows one snippet that reads content.json"
    return blocks[0]


def test_the_guides_snippet_checks_a_real_round_and_refuses_a_changed_one(auditor, tmp_path):
    settled = _settle(auditor, _table())
    args = _kept(tmp_path, auditor, _bytes(settled), _content(auditor, settled["round_id"]))
    folder = Path(args[1]).parent

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _snippet()], cwd=folder,
                              capture_output=True, text=True, timeout=120)

    done = run()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the receipt, the content hash and the amounts hold\n"
    changed = json.loads(json.dumps(settled))
    changed["players"][0]["amount"] = "9205"
    (folder / "round.json").write_bytes(_bytes(changed))
    done = run()
    assert done.returncode != 0 and "FAILED: result" in done.stderr
    forged = {**settled, "chain": {**settled["chain"], "signature": Signer(
        Ed25519PrivateKey.generate()).sign(b"anything")}}
    (folder / "round.json").write_bytes(_bytes(forged))
    done = run()
    assert done.returncode != 0 and "InvalidSignature" in done.stderr
    content = json.loads((folder / "content.json").read_text())
    content["lines"][0]["amount"] = "1"
    (folder / "round.json").write_bytes(_bytes(settled))
    (folder / "content.json").write_bytes(_bytes(content))
    done = run()
    assert done.returncode != 0 and "FAILED: content hash" in done.stderr
