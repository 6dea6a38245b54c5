"""Logs under gunicorn: every line one JSON object, one line per request, with its id."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.__main__ import gunicorn_command
from tests.integration.private_pg import free_port
from tests.worked_examples import EX_000, round_request

REPO = Path(__file__).resolve().parents[2]


def _call(port: int, method: str, path: str, body: Any = None,
          headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    payload = None if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json"} if payload is not None else {}
    connection.request(method, path, body=payload, headers={**sent, **(headers or {})})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


@contextmanager
def serving(settings: Any, tmp_path: Path, **env: str) -> Iterator[tuple[int, Path, Path]]:
    """Run the service under gunicorn (one worker) until /healthz answers; yield its port
    and the files of its stdout and stderr; stop it at the end."""
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    # The runtime login the suite serves as (the owner would be refused at start).
    environ |= {"DATABASE_URL": settings.database_url,
                "AUDIT_SIGNING_KEY_FILE": str(settings.audit_signing_key_file),
                "HOST": "127.0.0.1", "PORT": str(port), "WEB_CONCURRENCY": "1",
                "LOG_LEVEL": "INFO", **env}
    out, err = tmp_path / "out.log", tmp_path / "err.log"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        server = subprocess.Popen(gunicorn_command(), cwd=REPO, env=environ, stdout=stdout,
                                  stderr=stderr)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if _call(port, "GET", "/healthz").status == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.1)
        yield port, out, err
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


def test_every_log_line_is_json_with_one_line_per_request_and_its_id(
        settings, make_key, tmp_path: Path) -> None:
    operator = f"logs-{uuid.uuid4().hex[:8]}"
    token = make_key("rounds:write", "rounds:read", operator_id=operator)
    with serving(settings, tmp_path) as (port, out, err):
        auth = {"Authorization": f"Bearer {token}"}
        sent = [
            ("GET", "/healthz", None, {"X-Request-Id": "client-id-1"}, 200),
            ("GET", "/v1/rounds", None, {}, 401),
            ("POST", "/v1/rounds/score", {"ruleset": "nope"}, auth, 422),
            ("POST", "/v1/rounds", round_request(EX_000, f"logs-{uuid.uuid4().hex[:8]}"),
             {**auth, "Idempotency-Key": uuid.uuid4().hex}, 201),
            ("GET", "/v1/x%0A2026-01-01%20ERROR%20forged", None, {}, 404),
            ("GET", "/healthz", None, {"X-Request-Id": "bad id\twith tab"}, 200),
        ]
        ids = []
        for method, path, body, headers, status in sent:
            response = _call(port, method, path, body, headers)
            assert response.status == status, (path, response.status)
            ids.append(response.getheader("X-Request-Id"))

    lines = (err.read_text() + out.read_text()).splitlines()
    records = [json.loads(line) for line in lines]  # every line parses
    for record in records:
        assert {"time", "level", "logger", "message"} <= set(record), record
    # The last ones: the polls of /healthz while gunicorn started came first.
    requests = [r for r in records if r["logger"] == "app.request"][-len(sent):]
    assert [r["request_id"] for r in requests] == ids
    assert ids[0] == "client-id-1" and ids[5] != "bad id\twith tab" and len(set(ids)) == 6
    assert [r["status"] for r in requests] == [s for *_, s in sent]
    assert requests[3]["operator"] == operator and requests[3]["route"] == "/v1/rounds"
    assert requests[2]["route"] == "/v1/rounds/score" and requests[2]["method"] == "POST"
    assert all(r["duration_ms"] >= 0 for r in requests)
    assert requests[4]["path"] == "/v1/x\n2026-01-01 ERROR forged"  # one line, escaped
    assert not any(line.startswith("2026-01-01") for line in lines)
    assert token not in "\n".join(lines)
    assert any(r["logger"] == "gunicorn.error" for r in records)
    # No ACCESS_LOG: gunicorn writes no access line of its own (its logconfig_dict alone
    # used to turn them on, a line and its CPU per request).
    assert not any(r["logger"] == "gunicorn.access" for r in records)


def test_access_log_dash_adds_gunicorns_access_lines_as_json(settings, tmp_path: Path) -> None:
    with serving(settings, tmp_path, ACCESS_LOG="-") as (port, out, _):
        assert _call(port, "GET", "/healthz", headers={"User-Agent": "access-check"}
                     ).status == 200
    records = [json.loads(line) for line in out.read_text().splitlines()]
    access = [r for r in records if r["logger"] == "gunicorn.access"]
    assert any("GET /healthz" in r["message"] and "access-check" in r["message"]
               for r in access), records


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as it is and read the whole answer (the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip()
               for name, _, value in (field.partition(":") for field in fields)}
    return int(status_line.split()[1]), headers, body


def test_requests_gunicorn_refuses_before_the_app_answer_problem_json(
        settings, tmp_path: Path) -> None:
    long_uri = b"/healthz?" + b"a" * 5000
    many_fields = b"".join(b"X-F%d: 1\r\n" % n for n in range(150))
    big_field = b"X-Big: " + b"b" * 9000 + b"\r\n"
    sent = {
        414: b"GET " + long_uri + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        431: b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many_fields + b"\r\n",
        400: b"GET /healthz\x01 HTTP/1.1\r\nHost: x\r\n\r\n",
    }
    with serving(settings, tmp_path) as (port, _, _):
        answers = {status: _raw(port, request) for status, request in sent.items()}
        answers[-431] = _raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + big_field + b"\r\n")
    for expected, (status, headers, body) in answers.items():
        assert status == abs(expected), (expected, status, body[:200])
        assert headers["content-type"] == "application/problem+json", headers
        problem = json.loads(body)
        assert problem["status"] == abs(expected) and problem["type"] == "about:blank"
        assert problem["title"] and problem["detail"] and b"<html" not in body
