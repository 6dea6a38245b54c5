"""Command line: ``flask --app app GROUP COMMAND``; each group is one concern.

``keys`` creates, lists and revokes API keys; ``reconcile`` writes period reports;
``audit verify`` checks the ledger against a kept checkpoint and ``audit check-receipt``
one kept round, offline; ``reindex`` rebuilds the ledger's indexes in key order;
``fairplay run`` prices every stored choice against the advisor (app/services/fairplay.py);
``citus distribute`` spreads the ledger over a Citus cluster. To add a group, define it
below as a ``click`` group (``AppGroup`` runs its commands inside the app, so they can
reach the database with ``get_database()``) and list it in ``COMMANDS``. The groups share
one module, longer than most, because each command is a thin call into a service.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

import click
from flask import Flask, current_app
from flask.cli import AppGroup, with_appcontext
from marshmallow import ValidationError
from sqlalchemy.exc import DBAPIError

from app.db import citus as citus_layout
from app.db import get_database, maintenance
from app.db.engine import make_engine, make_sessionmaker, owner_url
from app.db.fairplay import FairplayStore
from app.db.reconcile_reader import LedgerReader
from app.db.schema import DATABASE_UNAVAILABLE, SchemaError, reason_of
from app.db.unit_of_work import SqlUnitOfWorkFactory
from app.services import checkpoints as checkpoint_service
from app.services import fairplay as fairplay_service
from app.services import keys as key_service
from app.services import reconcile as reconcile_service
from app.services.reconcile_csv import report_csv
from app.text import IDENTIFIER_RULE, is_identifier

INSUFFICIENT_PRIVILEGE = "42501"
_DURATION = re.compile(r"(?P<count>[1-9][0-9]{0,5})(?P<unit>[dhm])")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_expiry(text: str, now: datetime) -> datetime:
    """Return the expiry ``text`` names: a duration from ``now`` (``30d``, ``12h``, ``45m``)
    or an ISO 8601 date or time (UTC when it names no zone). It must lie after ``now``."""
    given = text.strip()
    duration = _DURATION.fullmatch(given)
    if duration is not None:
        return now + timedelta(**{_UNITS[duration["unit"]]: int(duration["count"])})
    try:
        moment = datetime.fromisoformat(given)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither a duration (30d, 12h, 45m) nor an ISO 8601 date or time"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment <= now:
        raise click.BadParameter(f"{text!r} is not in the future")
    return moment


F = TypeVar("F", bound=Callable[..., Any])


def needs_database(command: F) -> F:
    """Say in one line that the database is down or behind, instead of a traceback."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except DATABASE_UNAVAILABLE as error:
            raise click.ClickException(
                f"the database is unavailable: {reason_of(error)}") from None
        except SchemaError as error:
            raise click.ClickException(str(error)) from None

    return cast(F, run)


# --- keys ------------------------------------------------------------------------------

keys = AppGroup("keys", help="Create, list and revoke API keys (as the schema's owner).")


@contextlib.contextmanager
def owner_uows() -> Iterator[SqlUnitOfWorkFactory]:
    """Units of work as the schema's owner (MIGRATIONS_DATABASE_URL, else DATABASE_URL).

    The runtime role may only read keys and revocations, so that the service's own
    database login can neither mint a key nor bring a revoked one back.
    """
    settings = current_app.config["SETTINGS"]
    engine = make_engine(settings, owner_url(settings))
    try:
        yield SqlUnitOfWorkFactory(make_sessionmaker(engine))
    except DBAPIError as error:
        if getattr(error.orig, "sqlstate", None) != INSUFFICIENT_PRIVILEGE:
            raise
        raise click.ClickException(
            "this database login may not change API keys (only the schema's owner may): "
            "set MIGRATIONS_DATABASE_URL to the owner's URL") from None
    finally:
        engine.dispose()


@keys.command("create")
@click.option("--operator", required=True, help="The operator whose data the key may reach.")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    required=True,
    help=f"Repeat, or separate with commas: {', '.join(key_service.Scope)}.",
)
@click.option("--expires", help="A duration (30d, 12h, 45m) or an ISO 8601 date or time.")
@click.option("--name", help="A note on who holds the key.")
@click.option("--rate", "rates", multiple=True, metavar="CLASS=RATE",
              help="This key's own rate in a route class (settle, dry, advisor, read, "
                   "audit), e.g. advisor=1/second; repeat for more. Default: the service's.")
@click.option("--concurrency", "at_once", multiple=True, metavar="CLASS=N",
              help="This key's own requests at once in a route class, e.g. audit=1.")
@needs_database
def create_key(operator: str, scopes: Sequence[str], expires: str | None, name: str | None,
               rates: Sequence[str], at_once: Sequence[str]) -> None:
    """Create a key and print it once on stdout; only its hash is kept."""
    names = [part for given in scopes for part in given.split(",") if part.strip()]
    expires_at = parse_expiry(expires, datetime.now(UTC)) if expires else None
    rate_limits = _pairs(rates, "--rate", str)
    concurrency = _pairs(at_once, "--concurrency", int)
    try:
        with owner_uows() as uows:
            created = key_service.create_key(uows, operator, names,
                                             expires_at=expires_at, name=name,
                                             rate_limits=rate_limits,
                                             concurrency_limits=concurrency)
    except key_service.KeyRequestError as error:
        raise click.UsageError(str(error)) from None
    info = created.info
    click.echo(
        f"created API key {info.id} for operator {info.operator_id} with scopes "
        f"{' '.join(key_service.sorted_scopes(info.scopes))}, "
        f"expiring {_moment(info.expires_at) if info.expires_at else 'never'}; "
        "it is shown only this once: send it as 'Authorization: Bearer KEY'",
        err=True,
    )
    # Alone on stdout, so a script can capture it: KEY=$(flask --app app keys create ...)
    click.echo(created.token)


def _pairs(given: Sequence[str], option: str, kind: Callable[[str], Any]) -> dict[str, Any]:
    pairs = {}
    for item in given:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            pairs[name.strip()] = kind(value.strip())
        except ValueError:
            raise click.BadParameter(f"{item!r} is not CLASS=VALUE", param_hint=option) \
                from None
    return pairs


@keys.command("list")
@click.option("--operator", help="Only this operator's keys.")
@needs_database
def list_keys(operator: str | None) -> None:
    """List keys (never their secrets): id, operator, scopes, state and dates."""
    now = datetime.now(UTC)
    rows = [("id", "operator", "scopes", "state", "created", "expires", "name")]
    with owner_uows() as uows:
        found = key_service.list_keys(uows, operator)
    for info in found:
        rows.append((
            info.id,
            info.operator_id,
            ",".join(key_service.sorted_scopes(info.scopes)),
            info.state(now),
            _moment(info.created_at),
            _moment(info.expires_at) if info.expires_at else "never",
            info.name or "",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
                   .rstrip())


@keys.command("revoke")
@click.argument("key_id")
@needs_database
def revoke_key(key_id: str) -> None:
    """Revoke a key by its id; it is refused within API_KEY_CACHE_S seconds (5 by default)."""
    try:
        with owner_uows() as uows:
            info = key_service.revoke_key(uows, key_id)
    except key_service.KeyRequestError as error:
        raise click.ClickException(str(error)) from None
    settings = current_app.config["SETTINGS"]
    click.echo(f"revoked API key {info.id} of operator {info.operator_id} "
               f"at {_moment(info.revoked_at) if info.revoked_at else 'now'}; refused "
               f"within {settings.api_key_cache_s} s")


def _moment(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# --- reconcile -------------------------------------------------------------------------

# Not 2: click exits 2 on a usage error, and cron must tell "did not run" from "found".
RECONCILE_DISCREPANCY_EXIT = 3


@click.command("reconcile")
@click.option("--from", "from_", required=True, help="Start of the period (RFC 3339), inclusive.")
@click.option("--to", "to", required=True, help="End of the period (RFC 3339), exclusive.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write reconciliation.json and reconciliation.csv into.")
@click.option("--table", "table_id", help="Only this table.")
@click.option("--operator", "operator_id", help="Only this operator (default: every operator).")
@with_appcontext
@needs_database
def reconcile_command(from_: str, to: str, out: Path, table_id: str | None,
                      operator_id: str | None) -> None:
    """Reconcile every operator's rounds of [from, to) and write the JSON and CSV reports.

    Exits 0 when the ledger is clean and 3 when it found a discrepancy (an unbalanced
    round, a balance-chain break or a broken hash chain), for cron.
    """
    start, end = _moment_option(from_, "--from"), _moment_option(to, "--to")
    if start >= end:
        raise click.BadParameter("'--to' must be later than '--from'", param_hint="--to")
    for value, hint in ((operator_id, "--operator"), (table_id, "--table")):
        if value is not None and not is_identifier(value):
            raise click.BadParameter(f"{value!r} is not an id: {IDENTIFIER_RULE}",
                                     param_hint=hint)
    _writable_folder(out)
    ledger = LedgerReader(get_database().sessions)
    unknown = reconcile_service.unknown_scope(ledger, operator_id=operator_id,
                                              table_id=table_id)
    if unknown is not None:
        raise click.UsageError(f"{unknown}: check the id (nothing was written)")
    # Off-line and possibly over a long period: no statement timeout.
    report = reconcile_service.reconcile(ledger, created_from=start, created_to=end,
                                         operator_id=operator_id, table_id=table_id,
                                         statement_timeout_ms=0)
    try:
        (out / "reconciliation.json").write_text(
            json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8")
        (out / "reconciliation.csv").write_text(report_csv(report), encoding="utf-8", newline="")
    except OSError as error:
        raise click.ClickException(f"cannot write the reports to {out}: {error}") from None
    click.echo(f"reconciled {len(report.tables)} table(s) from {_moment(start)} to "
               f"{_moment(end)}: {report.discrepancies} discrepancy(ies); reports in {out}",
               err=True)
    if report.discrepancies:
        raise SystemExit(RECONCILE_DISCREPANCY_EXIT)


def _writable_folder(out: Path) -> None:
    """Make ``out`` if need be; refuse (exit 2) a folder the reports cannot be written to."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".reconcile-write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise click.BadParameter(f"cannot write to {str(out)!r}: {error.strerror or error}",
                                 param_hint="--out") from None


_MOMENT_NEEDED = ("give a date-time with Z or an offset, such as 2026-01-01T00:00:00Z or "
                  "2026-01-01T08:00:00+08:00")


def _moment_option(text: str, name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an RFC 3339 time; {_MOMENT_NEEDED}",
                                 param_hint=name) from None
    if moment.tzinfo is None:
        raise click.BadParameter(f"{text!r} has no time zone; {_MOMENT_NEEDED}",
                                 param_hint=name)
    return moment


# --- audit -----------------------------------------------------------------------------

audit = AppGroup("audit", help="Verify the ledger against checkpoints kept outside it.")

# As reconcile: 2 is click's usage error.
AUDIT_FINDINGS_EXIT = 3


@audit.command("verify")
@click.option("--checkpoint", "checkpoint_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A checkpoint as POST /v1/audit/checkpoints answered it (JSON).")
@click.option("--limit", type=click.IntRange(1, checkpoint_service.MAX_LIMIT),
              default=checkpoint_service.DEFAULT_LIMIT, show_default=True,
              help="Rounds walked per page.")
@click.option("--jobs", type=click.IntRange(1, 64), default=None,
              help="Processes that walk the chains at once, each on a connection of its "
                   "own (default: one a core and one more: each waits on its queries "
                   "while the others work).")
@click.option("--public-keys", "keys_file",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The public keys to check signatures with, as GET /v1/audit/public-keys "
                   "answered them and you kept them (default: the keys the service "
                   "publishes, AUDIT_PUBLIC_KEYS_FILE).")
@needs_database
def audit_verify(checkpoint_file: Path, limit: int, jobs: int | None,
                 keys_file: Path | None) -> None:
    """Check a kept checkpoint's signature, then walk every chain it names to its head:
    every round's content hash, its receipt and its seats and lines against its answer.

    Uses public keys only: never reads, and never makes, a private key. Prints one line per
    finding; exits 0 when clean and 3 on any finding.
    """
    from app.api.audit import KeptCheckpointSchema
    from app.services.signing import SigningKeyError, load_public_keys, public_keys_file

    try:
        checkpoint = KeptCheckpointSchema().load(json.loads(checkpoint_file.read_text("utf-8")))
    except (ValueError, ValidationError) as error:
        raise click.BadParameter(f"not a checkpoint: {error}", param_hint="--checkpoint") \
            from None
    settings = current_app.config["SETTINGS"]
    path = keys_file or settings.audit_public_keys_file or public_keys_file(
        settings.audit_signing_key_file)
    try:
        keys = load_public_keys(path)
    except SigningKeyError as error:
        raise click.ClickException(f"{error}; give the keys you kept with --public-keys") \
            from None
    total = sum(head["seq"] for head in checkpoint["heads"])
    database = get_database()

    def uows_here() -> Any:
        # In a forked process: the parent's pooled connections are its own, not ours.
        database.engine.dispose(close=False)
        return database.uows

    pages = checkpoint_service.verify_anchored_in_processes(
        uows_here, keys, checkpoint["operator_id"], checkpoint=checkpoint,
        jobs=jobs or checkpoint_service.default_jobs(), limit=limit)
    findings, rounds = 0, 0
    with click.progressbar(length=total, label="verifying", file=sys.stderr) as bar:
        for page in pages:
            for finding in page.findings:
                click.echo(f"{finding.what}\ttable {finding.table_id or '-'}\tseq "
                           f"{finding.seq if finding.seq is not None else '-'}\t{finding.detail}")
            findings += len(page.findings)
            rounds += page.rounds
            bar.update(page.rounds)
    click.echo(f"checked {rounds} round(s) of {len(checkpoint['heads'])} chain(s) against "
               f"checkpoint {checkpoint['checkpoint_id']}: {findings} finding(s)", err=True)
    if findings:
        raise SystemExit(AUDIT_FINDINGS_EXIT)


# Not in the app's context: it reads its three files and nothing else.
@audit.command("check-receipt", with_appcontext=False)
@click.argument("round_file", metavar="ROUND.json",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--public-keys", "keys_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The public keys, as GET /v1/audit/public-keys answered them and you "
                   "kept them.")
@click.option("--content", "content_file",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The round's content, as GET /v1/rounds/{round_id}/content answered it: "
                   "ties the answer's amounts to the receipt.")
def audit_check_receipt(round_file: Path, keys_file: Path, content_file: Path | None) -> None:
    """Check a round's answer as kept (ROUND.json) offline: its receipt with the public
    keys alone, and with --content that the content hashes to the hash the receipt signs
    and holds the answer's result, seats and lines.

    Needs no database, no service and no private key. Prints one line per check (``ok``
    or the finding, the check, the figures); exits 0 when every check holds, 1 on a
    finding, 2 on a usage error or a file it cannot read.
    """
    from app.services import receipt_check
    from app.services.signing import SigningKeyError, load_public_keys

    try:
        keys = load_public_keys(keys_file)
    except SigningKeyError as error:
        raise click.BadParameter(str(error), param_hint="--public-keys") from None
    answer = _json_file(round_file, "ROUND.json")
    content = None if content_file is None else _json_file(content_file, "--content")
    if content is not None and not isinstance(content, dict):
        raise click.BadParameter("not a round's content: a JSON object", param_hint="--content")
    try:
        checks = receipt_check.check_round(answer, keys, content)
    except receipt_check.UnreadableAnswer as error:
        raise click.BadParameter(str(error), param_hint="ROUND.json") from None
    for check in checks:
        click.echo(check.line())
    findings = sum(check.finding is not None for check in checks)
    tied = ("" if content is not None
            else "; without --content the amounts are not tied to the receipt")
    click.echo(f"{len(checks)} check(s) of {round_file}: {findings} finding(s){tied}", err=True)
    if findings:
        raise SystemExit(1)


def _json_file(path: Path, name: str) -> Any:
    """Return the JSON value a file holds; a file that is not JSON text is a usage error."""
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise click.BadParameter(f"cannot read {path} as JSON: {error}", param_hint=name) \
            from None


@audit.command("rotate-key")
def audit_rotate_key() -> None:
    """Start a new signing key; the old public key stays published.

    Receipts and checkpoints signed by the old key keep verifying. Reload the service
    afterwards (SIGHUP to gunicorn's master) so its workers sign with the new key.
    """
    from app.services.signing import ROTATION_GRACE, SigningKeyError, rotate_key

    settings = current_app.config["SETTINGS"]
    try:
        old, new = rotate_key(settings.audit_signing_key_file, settings.audit_public_keys_file)
    except SigningKeyError as error:
        raise click.ClickException(str(error)) from None
    grace = int(ROTATION_GRACE.total_seconds() // 60)
    click.echo(f"the audit signing key is now {new}; {old} stays published, valid for "
               f"{grace} more minutes: reload the service before then")


# --- reindex ---------------------------------------------------------------------------


@click.command("reindex")
@click.option("--table", "tables", multiple=True, type=click.Choice(maintenance.LEDGER_TABLES),
              help="Only this table (repeat for more; default: every ledger table).")
@with_appcontext
@needs_database
def reindex_command(tables: tuple[str, ...]) -> None:
    """Rebuild the ledger's indexes in key order, while the service keeps settling.

    Appends scatter each index's pages; a rebuild makes reconciliation and the pages read
    them in order again (3 to 5 times faster cold at a million rounds). One index at a
    time, as the schema's owner (MIGRATIONS_DATABASE_URL, else DATABASE_URL: the runtime
    role is refused); each build waits for transactions in progress on its table. First
    drops the invalid copies an interrupted run left; prints each table's index sizes.
    Exits 0 when done, 1 when refused or stopped, 2 on a usage error.
    """
    url = owner_url(current_app.config["SETTINGS"])
    try:
        maintenance.reindex_ledger(url, tables=tables or maintenance.LEDGER_TABLES,
                                   echo=lambda line: click.echo(line, err=True))
    except maintenance.CannotRebuild as error:
        raise click.ClickException(str(error)) from None
    except maintenance.RebuildStopped as error:
        raise click.ClickException(f"the rebuild stopped: {error}; run it again (it first "
                                   "drops the copy this one left)") from None


# --- fairplay --------------------------------------------------------------------------

fairplay = AppGroup("fairplay", help="Fair-play analytics: price every stored choice.")


@fairplay.command("run")
@click.option("--from", "from_", required=True, help="Start of the period (RFC 3339), inclusive.")
@click.option("--to", "to", required=True, help="End of the period (RFC 3339), exclusive.")
@click.option("--operator", "operator_id", help="Only this operator (default: every operator).")
@click.option("--jobs", type=click.IntRange(1, 256), help="Worker processes (default: every core).")
@click.option("--read-url", envvar="FAIRPLAY_READ_DATABASE_URL",
              help="Read the rounds from this database (a replica); default DATABASE_URL.")
@with_appcontext
@needs_database
def fairplay_run(from_: str, to: str, operator_id: str | None, jobs: int | None,
                 read_url: str | None) -> None:
    """Analyse every settled 十三支 round of [from, to) not analysed yet (resumable).

    Appends to fairplay_rounds and fairplay_pairs only; one worker per core at nice 10.
    """
    start, end = _moment_option(from_, "--from"), _moment_option(to, "--to")
    if start >= end:
        raise click.BadParameter("'--to' must be later than '--from'", param_hint="--to")
    if operator_id is not None and not is_identifier(operator_id):
        raise click.BadParameter(f"{operator_id!r} is not an id: {IDENTIFIER_RULE}",
                                 param_hint="--operator")
    settings = current_app.config["SETTINGS"]
    reader = None if read_url is None else make_engine(settings, read_url)
    try:
        store = FairplayStore(get_database().sessions,
                              None if reader is None else make_sessionmaker(reader))
        total = store.count(start, end, operator_id)
        with click.progressbar(length=total, label="rounds", file=sys.stderr) as bar:
            report = fairplay_service.run(store, start, end, operator_id, jobs, bar.update)
    finally:
        if reader is not None:
            reader.dispose()
    rate = report.rounds / report.seconds if report.seconds else 0.0
    click.echo(f"analysed {report.rounds} round(s), {report.pairs} pair figure(s) in "
               f"{report.seconds:.1f} s ({rate:.1f} rounds a second), advisor "
               f"{fairplay_service.VERSION}", err=True)


# --- citus -----------------------------------------------------------------------------

# `citus distribute` run by a login without a privilege it needs.
CITUS_REFUSED_EXIT = 2

citus = AppGroup("citus", help="Scale out on a Citus database (as the schema's owner).")


@citus.command("distribute")
@with_appcontext
@needs_database
def citus_distribute() -> None:
    """Distribute every ledger table by operator_id, colocated; keys as reference tables.

    Run once on the coordinator after the migrations, as the schema's owner
    (MIGRATIONS_DATABASE_URL, else DATABASE_URL); running it again changes nothing.
    Prints each table's place. Exits 1 on a database without Citus or without workers,
    2 when the login lacks a privilege it needs (the message names it; nothing changed).
    """
    settings = current_app.config["SETTINGS"]
    engine = make_engine(settings, owner_url(settings))
    try:
        with engine.begin() as connection:
            placed = citus_layout.distribute(
                connection, say=click.echo, lock_timeout_ms=settings.db_lock_timeout_ms,
                statement_timeout_ms=settings.db_statement_timeout_ms,
                runtime_role=settings.db_runtime_role)
    except citus_layout.NotCitus as error:
        raise click.ClickException(str(error)) from None
    except citus_layout.Refused as error:
        click.echo(f"Error: {error}", err=True)
        raise SystemExit(CITUS_REFUSED_EXIT) from None
    finally:
        engine.dispose()
    click.echo(f"Citus {placed.citus_version}, {placed.workers} workers:")
    for table, place in placed.tables.items():
        click.echo(f"  {table}: {place}")


# --- registration ----------------------------------------------------------------------

# Every command group of the service; add new groups here.
COMMANDS: tuple[click.Command, ...] = (keys, reconcile_command, audit, reindex_command,
                                        citus, fairplay)


def register_commands(app: Flask) -> None:
    """Make every group of ``COMMANDS`` available as ``flask --app app GROUP``."""
    for command in COMMANDS:
        app.cli.add_command(command)


def dev_key_hint(operator_id: str) -> str:
    """Return the command that creates a development key for ``operator_id``."""
    return (f".venv/bin/flask --app app keys create --operator {operator_id} --scope admin "
            "--expires 30d")


def missing_key_notice(url: str, operator_id: str) -> str | None:
    """Return how to create a key when ``operator_id`` has no usable one, else None.

    Says only whether a key exists, never anything of one.
    """
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    engine = create_engine(url, poolclass=NullPool)
    try:
        if key_service.has_usable_key(SqlUnitOfWorkFactory(make_sessionmaker(engine)),
                                      operator_id):
            return None
    finally:
        engine.dispose()
    return (
        f"operator {operator_id!r} has no API key yet, and every route but health, metrics, "
        f"the contract, the rulesets and the audit's public keys needs one. Create a "
        f"development key with:\n"
        f"  {dev_key_hint(operator_id)}"
    )
