"""The lock files pin, with hashes, every dependency pyproject.toml asks for.

Regenerate them with uv after changing pyproject.toml (README, "Dependencies").
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
LOCKS = {
    "requirements.lock": (),
    "requirements-embedded.lock": ("embedded",),
    "requirements-dev.lock": ("dev",),
}
_PIN = re.compile(r"^([A-Za-z0-9._-]+)(\[[^\]]*\])?==([^ \\;]+)", re.M)


def _pins(name: str) -> dict[str, str]:
    text = (REPO / name).read_text()
    return {canonicalize_name(m[1]): m[3] for m in _PIN.finditer(text)}


@pytest.mark.parametrize(("lock", "extras"), LOCKS.items(), ids=list(LOCKS))
def test_every_requirement_is_pinned_at_a_version_it_allows(lock, extras):
    pins = _pins(lock)
    wanted = [Requirement(r) for r in PROJECT["dependencies"]]
    for extra in extras:
        wanted += [Requirement(r) for r in PROJECT["optional-dependencies"][extra]]
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{lock} does not pin {name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{lock} pins {name}=={pins[name]}, outside {requirement.specifier}")


@pytest.mark.parametrize("lock", LOCKS)
def test_every_pin_carries_hashes(lock):
    text = (REPO / lock).read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[-1])
    for block in blocks:
        if _PIN.match(block):
            assert "--hash=sha256:" in block, block.splitlines()[0]


def test_the_runtime_lock_leaves_the_embedded_server_out():
    assert "pgserver" not in _pins("requirements.lock")
    assert "pgserver" in _pins("requirements-embedded.lock")


def test_the_installed_versions_are_the_dev_lock_s():
    """The README's test command installs from the dev lock; nothing else slipped in."""
    pins = _pins("requirements-dev.lock")
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in distributions()}
    drifted = {name: (version, installed[name]) for name, version in pins.items()
               if name in installed and installed[name] != version}
    assert not drifted, f"installed versions differ from requirements-dev.lock: {drifted}"
