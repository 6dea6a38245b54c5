"""The console's session key: SECRET_KEY, or one made once and kept in SECRET_KEY_FILE."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from flask import Flask

from app.config import ConfigError, Settings
from app.console import _kept_secret, init_console


def test_a_made_key_is_kept_private_and_read_back_the_same(tmp_path: Path) -> None:
    path = tmp_path / "var" / "secret_key"
    first = _kept_secret(path)
    assert len(first) == 64 and _kept_secret(path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["secret_key"]


def test_secret_key_from_the_environment_wins_and_is_never_shown(tmp_path: Path) -> None:
    settings = Settings.from_env({"SECRET_KEY": "k" * 40,
                                  "SECRET_KEY_FILE": str(tmp_path / "unused")})
    app = Flask(__name__)
    init_console(app, settings)
    assert app.secret_key == "k" * 40 and not (tmp_path / "unused").exists()
    assert settings.redacted()["secret_key"] == "***"
    cookie = app.config
    assert cookie["SESSION_COOKIE_SAMESITE"] == "Strict" and cookie["SESSION_COOKIE_HTTPONLY"]


def test_a_short_secret_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="SECRET_KEY must be at least 32"):
        Settings.from_env({"SECRET_KEY": "short"})


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_key_file_is_a_clear_configuration_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ConfigError, match="set SECRET_KEY"):
        init_console(Flask(__name__), Settings(secret_key_file=locked / "k" / "secret_key"))


def test_a_key_file_that_is_a_folder_is_a_clear_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "secret_key").mkdir()
    with pytest.raises(ConfigError, match="set SECRET_KEY"):
        init_console(Flask(__name__), Settings(secret_key_file=tmp_path / "secret_key"))
