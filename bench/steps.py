"""Instructions of single steps of a settle, each counted alone by valgrind's callgrind.

    .venv/bin/python -m bench.steps [--steps play,sign,verify,rules,driver] [--count 200]
        [--keep DIR]

Each step runs ``--count`` times in a process under callgrind (``PYTHONHASHSEED=0``), whose
instrumentation is on for those runs alone (``callgrind_control``), less a run of none (what
turning it on and off costs): the imports, the set-up and 20 runs of warm-up are not
counted, and run several times faster. The steps:

- ``play``: ``app.services.play.play`` on bench.load's bodies (``--rounds 60``, the same
  seed), read into domain values before counting: scoring and settlement alone.
- ``explain``: ``app.services.round_json.round_body`` of the same bodies, played before
  counting: the answer's explanation of a played round alone.
- ``sign`` / ``verify``: ``Signer.sign`` and ``Verifier.verify`` of a receipt's statement
  (``receipt_statement``), with the service's own code; ``sign-cryptography``,
  ``verify-cryptography``, ``sign-pynacl`` and ``verify-pynacl`` call each library alone.
- ``rules``: ``rules_to_dict`` and ``rules_hash`` of a ruleset with overrides (a preset's
  hash is a table lookup), as a settle asks for them, on the same ruleset object.
- ``driver``: a settle's two round trips in process, on a scratch database (as bench.load
  chooses its server): the unit of work, ``AppendRepository.start`` and ``append`` with
  its commit, the rows of one played round copied for each with a new id and key
  (bench.db_app's template), PostgreSQL's own work not counted.
- Whole requests through the Flask test client, the service in process on a scratch
  database with bench.load's settings: ``read``, ``GET /v1/rounds/{id}`` of bench.load's
  rounds, each read once before counting (checked); ``read-first``, a round's first read
  in the process (its evidence checked); ``list``, ``GET /v1/rounds?limit=50``; ``edge``,
  bench.db_app's empty authenticated route (``GET /bench/empty``, counted as a read
  against the key's limits), the app called as a WSGI server calls it: the hooks, the
  key's check, the limits and metrics. As
  served, ``edge-host`` counts the limits in a SQLite file in RUN_DIR, writes the
  metrics for every worker (PROMETHEUS_MULTIPROC_DIR), as gunicorn.conf.py sets them, and
  logs each request's line (LOG_LEVEL=INFO); ``edge-redis`` counts the limits in Redis at
  127.0.0.1:6379 (database 15).

``--keep DIR`` leaves callgrind's files in DIR for ``callgrind_annotate``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.load import REPO, BenchError

STEPS = ("play", "explain", "sign", "verify", "sign-cryptography", "verify-cryptography",
         "sign-pynacl", "verify-pynacl", "rules", "driver", "read", "read-first", "list", "edge",
         "edge-host", "edge-redis")
DEFAULT_STEPS = ("play", "sign", "verify", "rules", "driver")


def _statement() -> bytes:
    from app.services.signing import receipt_statement

    return receipt_statement("operator-0001", "table-0001", 12345, "ab" * 32, "cd" * 32)


_SEED = bytes(range(32))


@contextmanager
def _step(name: str, args: argparse.Namespace) -> Iterator[Callable[[int], Any]]:
    """Yield the function that does step ``name``'s n-th time, set up and warmed."""
    if name == "play":
        from app.api.rounds import round_request
        from app.services.play import parse_round, play
        from bench.load import make_bodies

        inputs = [parse_round(round_request(b))
                  for b in make_bodies(args.rounds, args.seed, args.tables)]
        yield lambda n: play(inputs[n % len(inputs)])
    elif name == "explain":
        from app.api.rounds import round_request
        from app.services.play import parse_round, play
        from app.services.round_json import round_body
        from bench.load import make_bodies

        played = [play(parse_round(round_request(b)))
                  for b in make_bodies(args.rounds, args.seed, args.tables)]
        yield lambda n: round_body(played[n % len(played)])
    elif name in ("sign", "verify"):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        from app.services.signing import Signer

        signer = Signer(Ed25519PrivateKey.from_private_bytes(_SEED))
        message = _statement()
        signature = signer.sign(message)
        if name == "sign":
            yield lambda n: signer.sign(message)
        else:
            verifier = signer.verifier
            yield lambda n: verifier.verify(message, signature)
    elif name.endswith("-cryptography"):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        key = Ed25519PrivateKey.from_private_bytes(_SEED)
        message = _statement()
        if name.startswith("sign"):
            yield lambda n: key.sign(message)
        else:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
            from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

            public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
            signature = key.sign(message)
            # As a verifier that holds the raw public key builds the key object each time.
            yield lambda n: Ed25519PublicKey.from_public_bytes(public).verify(signature,
                                                                              message)
    elif name.endswith("-pynacl"):
        import nacl.bindings

        public, secret = nacl.bindings.crypto_sign_seed_keypair(_SEED)
        message = _statement()
        if name.startswith("sign"):
            yield lambda n: nacl.bindings.crypto_sign(message, secret)[:64]
        else:
            signed = nacl.bindings.crypto_sign(message, secret)
            yield lambda n: nacl.bindings.crypto_sign_open(signed, public)
    elif name == "rules":
        from app.domain.games import resolve, rules_hash, rules_to_dict

        rules = resolve({"preset": "swap3", "overrides": {"fee_rate": "0.03"}})
        yield lambda n: (rules_to_dict(rules), rules_hash(rules))
    elif name == "driver":
        with _driver(args) as step:
            yield step
    elif name in ("read", "read-first", "list") or name.startswith("edge"):
        with _requests(name, args) as step:
            yield step
    else:
        raise BenchError(f"no step {name!r}")


@contextmanager
def _driver(args: argparse.Namespace) -> Iterator[Callable[[int], Any]]:
    from app import create_app
    from app.config import Settings
    from app.db import get_database
    from bench import db_app
    from bench.load import BENCH_ENV, choose_server, runtime_url, scratch_database

    template = db_app._template()
    server_url, _ = choose_server()
    with scratch_database(server_url) as url:
        app = create_app(Settings.from_env({"DATABASE_URL": runtime_url(url),
                                            "MIGRATIONS_DATABASE_URL": url,
                                            "LOG_LEVEL": "WARNING", **BENCH_ENV}))
        uows = get_database(app).uows

        def settle_db(n: int) -> None:
            table_id = f"bench-t{n % args.tables}"
            key = f"steps-{n}-{uuid.uuid4().hex}"
            with uows() as uow:
                start = uow.appends.start("bench", table_id, key)
                if start is None or start.earlier is not None:
                    raise BenchError("the key is in use")
                row = {**template.round, "id": uuid.uuid4(), "operator_id": "bench",
                       "table_id": table_id, "idempotency_key": key,
                       "created_at": start.created_at, "prev_hash": start.prev_hash,
                       "chain_seq": start.seq, "content_hash": "0" * 64}
                uow.appends.append(row, template.players, template.lines, commit=True)

        try:
            for n in range(20):  # the pool, the statements and the caches
                settle_db(1_000_000 + n)
            yield settle_db
        finally:
            get_database(app).dispose()


# The edge as served: by default (host://) the limits count in a SQLite file in RUN_DIR and
# the metrics are written for every worker (PROMETHEUS_MULTIPROC_DIR), as gunicorn.conf.py
# sets them, and each request logs its line (LOG_LEVEL=INFO, to the step's stderr); or the
# limits in Redis. Folders are made by count() for the process.
_EDGE_ENV = {"edge-host": {"RATE_LIMIT_STORAGE_URL": "host://", "LOG_LEVEL": "INFO"},
             "edge-redis": {"RATE_LIMIT_STORAGE_URL": "redis://127.0.0.1:6379/15",
                            "LOG_LEVEL": "INFO"}}


@contextmanager
def _requests(name: str, args: argparse.Namespace) -> Iterator[Callable[[int], Any]]:
    """A whole request through the Flask test client, the service in process on a scratch
    database (bench.load's): ``read`` and ``read-first`` a settled round, ``list`` a page
    of rounds, ``edge`` bench.db_app's empty authenticated route (``edge-host``,
    ``edge-redis``: with the limits and metrics as served, see _EDGE_ENV)."""
    from werkzeug.test import EnvironBuilder

    from bench.load import api_key, in_process, make_bodies

    edge = name.startswith("edge")
    with in_process(args, route="db" if edge else "settle", env=_EDGE_ENV.get(name)) as service:
        client = service.app.test_client()
        token = api_key(service.url, ("rounds:read", "rounds:write"), name="bench.steps")
        headers = {"Authorization": f"Bearer {token}"}
        if edge:
            # Called as a WSGI server calls the app, on an environ built once: the test
            # client's own work (about 0.5 M instructions a request) is no request's.
            environ = EnvironBuilder(path="/bench/empty", headers=headers).get_environ()
            app = service.app

            def empty(n: int) -> None:
                answered: list[str] = []
                body = app(dict(environ), lambda status, *_: answered.append(status))
                b"".join(body)
                getattr(body, "close", lambda: None)()
                if answered != ["204 NO CONTENT"]:
                    raise BenchError(f"GET /bench/empty answered {answered}")

            yield empty
            return
        if name == "list":
            yield lambda n: _expect(client.get("/v1/rounds?limit=50", headers=headers), 200)
            return
        # read: the bodies' rounds, each read once before counting (its receipt then
        # checked); read-first: a new round each time, its first read in this process.
        bodies = make_bodies(args.rounds, args.seed, args.tables)
        settled = args.rounds if name == "read" else args.count + 20
        paths = [f"/v1/rounds/{_settled(client, bodies[n % len(bodies)], headers)}"
                 for n in range(settled)]
        if name == "read":
            for path in paths:
                _expect(client.get(path, headers=headers), 200)
            yield lambda n: _expect(client.get(paths[n % len(paths)], headers=headers), 200)
        else:
            unread = iter(paths)
            yield lambda n: _expect(client.get(next(unread), headers=headers), 200)


def _settled(client: Any, body: dict[str, Any], headers: dict[str, str]) -> str:
    answer = client.post("/v1/rounds", json=body,
                         headers={**headers, "Idempotency-Key": f"steps-{uuid.uuid4()}"})
    round_id: str = _expect(answer, 201).get_json()["round_id"]
    return round_id


def _expect(answer: Any, status: int) -> Any:
    if answer.status_code != status:
        raise BenchError(f"answered {answer.status_code}, not {status}: "
                         f"{answer.get_data()[:500]!r}")
    return answer


def loop(name: str, count: int, args: argparse.Namespace) -> None:
    """Do step ``name`` ``count`` times, under callgrind's instrumentation only then."""
    with _step(name, args) as step:
        for n in range(20):  # warm: the first calls fill caches the count should not hold
            step(n)
        _instrument("on")
        for n in range(count):
            step(n)
        _instrument("off")


def _instrument(state: str) -> None:
    """Turn callgrind's instrumentation of this process on or off (when it runs under it):
    the start-up, imports and set-up then run uncounted, and several times faster."""
    if os.environ.get("BENCH_STEPS_CALLGRIND"):
        subprocess.run(["callgrind_control", "--instr=" + state, str(os.getpid())],
                       check=True, stdout=subprocess.DEVNULL)


def count(args: argparse.Namespace) -> int:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise BenchError("valgrind is not installed (apt-get install valgrind)")
    steps = args.steps.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-steps-") as folder:
        if args.keep:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            folder = args.keep
        for name in steps:
            runs = {}
            for n in (0, args.count):
                env = {**os.environ, "PYTHONHASHSEED": "0", "BENCH_STEPS_CALLGRIND": "1"}
                if name in _EDGE_ENV:
                    for variable in ("RUN_DIR", "PROMETHEUS_MULTIPROC_DIR"):
                        env[variable] = tempfile.mkdtemp(prefix=f"{name}-{n}-", dir=folder)
                out = Path(folder) / f"{name}-{n}.out"
                command = [valgrind, "--tool=callgrind", "--instr-atstart=no",
                           f"--callgrind-out-file={out}", sys.executable, "-m",
                           "bench.steps", "--loop", name, "--count", str(n), "--rounds",
                           str(args.rounds), "--seed", str(args.seed), "--tables",
                           str(args.tables)]
                runs[n] = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, text=True, env=env)
            totals = {}
            for n, process in runs.items():
                _, err = process.communicate()
                total = _counted(Path(folder) / f"{name}-{n}.out")
                if process.returncode != 0 or total is None:
                    raise BenchError(f"callgrind run of {n} x {name} failed: {err[-2000:]}")
                totals[n] = total
            each = (totals[args.count] - totals[0]) / args.count
            print(f"{name}: {each / 1e6:.3f} M instructions each (callgrind, {args.count} "
                  f"counted less none, PYTHONHASHSEED=0)", flush=True)
    return 0


def _counted(path: Path) -> int | None:
    """Return the instructions counted while instrumentation was on (callgrind's totals)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.steps",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default=",".join(DEFAULT_STEPS),
                        help=f"comma-separated, of {', '.join(STEPS)}")
    parser.add_argument("--count", type=int, default=200, help="times each step runs (200)")
    parser.add_argument("--rounds", type=int, default=60, help="bench.load's bodies (60)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the deals (1)")
    parser.add_argument("--tables", type=int, default=64, help="tables of the chains (64)")
    parser.add_argument("--keep", metavar="DIR",
                        help="leave callgrind's files in DIR for callgrind_annotate")
    parser.add_argument("--loop", choices=STEPS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.count < (0 if args.loop else 1):
        parser.error("--count must be at least 1")
    try:
        if args.loop:
            loop(args.loop, args.count, args)
            return 0
        return count(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
