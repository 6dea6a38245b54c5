"""The command line as an operator meets it: help without a database, clear refusals."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from flask import Flask

REPO = Path(__file__).resolve().parents[2]
FLASK = [sys.executable, "-m", "flask", "--app", "app"]
PERIOD = ["--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"]


def _closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql://postgres@127.0.0.1:{port}/nowhere"


def _flask(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | env
    return subprocess.run([*FLASK, *args], cwd=REPO, env=environ, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("database", ["unreachable", "unset"])
@pytest.mark.parametrize("args", [["--help"], ["keys", "--help"], ["keys", "create", "--help"],
                                  ["keys", "list", "--help"], ["keys", "revoke", "--help"],
                                  ["reconcile", "--help"], ["reindex", "--help"]], ids=" ".join)
def test_help_works_without_a_database(tmp_path: Path, database: str, args: list[str]) -> None:
    data_dir = tmp_path / "pgdata"
    key = tmp_path / "audit-signing-key.pem"
    env = {"PGSERVER_DATA_DIR": str(data_dir), "AUDIT_SIGNING_KEY_FILE": str(key)}
    if database == "unreachable":
        env["DATABASE_URL"] = _closed_url()
    done = _flask(*args, env=env)
    assert done.returncode == 0, done.stderr
    assert "Usage:" in done.stdout
    if args == ["--help"]:
        assert "keys" in done.stdout and "reconcile" in done.stdout
    assert not data_dir.exists(), "help started the embedded database"
    assert not key.exists(), "help made an audit signing key"


# Well formed, so ``audit verify`` reads the signing key next; signed by nobody.
_A_CHECKPOINT = {"checkpoint_id": "c-1", "operator_id": "op", "created_at": "2026-01-01",
                 "tree_size": 1, "root_hash": "0" * 64, "key_id": "k",
                 "heads": [{"table_id": "t", "seq": 1, "head_hash": "0" * 64}], "note": "n"}


def test_the_auditors_command_reads_public_keys_only_and_says_why_it_cannot(
        tmp_path: Path) -> None:
    """``audit verify`` never reads or makes a private key: it checks signatures with the
    published keys or the ones given; keys it cannot read are a one-line error, exit 1."""
    key = tmp_path / "audit-signing-key.pem"
    env = {"DATABASE_URL": _closed_url(), "AUDIT_SIGNING_KEY_FILE": str(key)}
    checkpoint = tmp_path / "checkpoint.json"
    checkpoint.write_text("{}")
    refused = _flask("audit", "verify", "--checkpoint", str(checkpoint), env=env)
    assert refused.returncode == 2 and "not a checkpoint" in refused.stderr, refused.stderr
    assert not key.exists(), "a command refused before signing made a key"
    checkpoint.write_text(json.dumps(_A_CHECKPOINT))
    kept = tmp_path / "kept-keys.json"
    kept.write_text('{"keys": [{"key_id": "nope"}]}')
    for given, named in (([], "audit-signing-key.public-keys.json"),
                         (["--public-keys", str(kept)], "not a list of public keys")):
        bad = _flask("audit", "verify", "--checkpoint", str(checkpoint), *given, env=env)
        assert bad.returncode == 1, bad.stderr
        plain = [line for line in bad.stderr.splitlines() if not line.startswith("{")]
        assert len(plain) == 1 and named in plain[0], bad.stderr
    assert not key.exists(), "the auditor's command made a private key"


@pytest.mark.parametrize("command", [["keys", "list"], ["reindex"]], ids=" ".join)
def test_a_command_on_an_unreachable_database_fails_in_one_line(tmp_path: Path,
                                                                command: list[str]) -> None:
    done = _flask(*command, env={"DATABASE_URL": _closed_url(), "DB_CONNECT_TIMEOUT_S": "1"})
    assert done.returncode == 1
    # Log lines are JSON objects; the only other line is the error.
    plain = [line for line in done.stderr.splitlines() if not line.startswith("{")]
    assert len(plain) == 1 and plain[0].startswith("Error: the database is unavailable"), \
        done.stderr


@pytest.mark.parametrize("command", [["keys", "list"], ["citus", "distribute"]], ids=" ".join)
def test_the_owners_commands_reach_the_migrations_url_alone_and_start_nothing(
        tmp_path: Path, database_url: str, citus: bool, command: list[str]) -> None:
    """With MIGRATIONS_DATABASE_URL and no DATABASE_URL (the owner's commands on a Citus
    coordinator, docs/operations/scaling.md), a command reaches that database: it once
    started an embedded PostgreSQL instead and told of no citus extension there."""
    data_dir = tmp_path / "pgdata"
    done = _flask(*command, env={"MIGRATIONS_DATABASE_URL": database_url,
                                 "PGSERVER_DATA_DIR": str(data_dir),
                                 "AUDIT_SIGNING_KEY_FILE": str(tmp_path / "key.pem")})
    assert not data_dir.exists(), "the command started the embedded database"
    if command[0] == "citus" and not citus:
        assert done.returncode == 1 and "no citus extension" in done.stderr, done.stderr
    else:
        assert done.returncode == 0, done.stderr


def test_reconcile_into_a_folder_it_cannot_write_exits_2(
        make_app: Callable[..., Flask], tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = make_app().test_cli_runner().invoke(
        args=["reconcile", *PERIOD, "--out", str(blocker / "reports")])
    assert result.exit_code == 2, result.output
    assert "--out" in result.output and "cannot write" in result.output


@pytest.mark.parametrize("option", ["--operator", "--table"])
def test_reconcile_with_an_unknown_operator_or_table_is_an_error_not_a_clean_report(
        make_app: Callable[..., Flask], tmp_path: Path, option: str) -> None:
    result = make_app().test_cli_runner().invoke(
        args=["reconcile", *PERIOD, "--out", str(tmp_path), option, f"no-{uuid.uuid4().hex}"])
    assert result.exit_code == 2, result.output
    assert "has no rounds" in result.output
    assert not (tmp_path / "reconciliation.json").exists()


@pytest.mark.parametrize("value", ["a\nb", "bad id", "x" * 65])
def test_reconcile_refuses_an_id_that_is_no_id(make_app: Callable[..., Flask], tmp_path: Path,
                                               value: str) -> None:
    result = make_app().test_cli_runner().invoke(
        args=["reconcile", *PERIOD, "--out", str(tmp_path), "--table", value])
    assert result.exit_code == 2 and "is not an id" in result.output
