"""Signed checkpoints of chain heads, and verifying chains against what an auditor kept.

A checkpoint is the head (``seq`` and content hash) of every chain of one operator, in
table order, under an RFC 6962 Merkle tree: each head is a leaf
``"<table_id> <seq> <head_hash>\\n"`` hashed as SHA-256(0x00 || leaf), each node as
SHA-256(0x01 || left || right). It is signed as a C2SP signed note whose text is a
tlog-checkpoint::

    thirteen-settlement/<operator_id>
    <number of chains>
    <base64 Merkle root>
    checkpoint <checkpoint_id>
    time <created_at, RFC 3339>

An auditor keeps the checkpoints (and receipts) it was given. ``verify`` takes them back
and checks, with the public key alone, that each was signed by the service, then that
every chain they name still holds that round at that seq with that hash, and still links,
unbroken, from its first round to its current head, every round's content hashing to its
stored hash and its seats and lines being what it answered with (``lines_changed``). A
deleted tail, a deleted table, a re-chained rewrite or an edited line each leave a
finding, even when the database's own copies of the checkpoints were deleted too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, cast

import orjson

from app.json_codec import canonical_json
from app.services import cursors
from app.services.audit import ChainEnd
from app.services.cursors import InvalidCursor
from app.services.receipts import receipt_problem
from app.services.repositories import ChainHead, CheckpointColumns, StrayLines, StraySeats
from app.services.rounds import RoundTexts, content_hash, utc_text
from app.services.row_checks import LINES, PLAYERS, evidence_rows, money_row_changes, rows_match
from app.services.signing import PublicKeys, Signer, receipt_statement, verify_note
from app.services.uow import UnitOfWork, UnitOfWorkFactory

ORIGIN = "thirteen-settlement"
BATCH = 500
# Every round of a walk is read and hashed again (about 1,000 a second on a busy 2-core
# machine, bench.ledger), so a request stays well inside the worker timeout.
DEFAULT_LIMIT = 5_000
MAX_LIMIT = 10_000

# Findings, each naming the table and seq it is about (None where it has none).
BAD_SIGNATURE = "bad_signature"
BAD_CHECKPOINT = "bad_checkpoint"
MISSING_TABLE = "missing_table"
TRUNCATED = "truncated"
REWRITTEN = "rewritten"
SEQ_GAP = "seq_gap"
BROKEN_LINK = "broken_link"
CONTENT_HASH = "content_hash"
# A seat or a line that is not what its round answered with: changed (before and after),
# missing, added, or naming another round.
LINES_CHANGED = LINES
PLAYERS_CHANGED = PLAYERS
_TABLE_OF = {PLAYERS: "round_players", LINES: "ledger_lines"}
CREATED_AT = "created_at"
# Ledger lines, or seats, of the operator that name a round that is not stored (there).
STRAY_LINES = "stray_lines"
STRAY_SEATS = "stray_seats"
# A round's stored receipt absent, or not the service's signature of that round:
# RECEIPT_MISSING and RECEIPT_INVALID (app.services.receipts).


# --- the Merkle tree ------------------------------------------------------------------


def leaf(table_id: str, seq: int, head_hash: str) -> bytes:
    """Return a chain head's leaf as the tree hashes it."""
    return f"{table_id} {seq} {head_hash}\n".encode()


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """Return the RFC 6962 Merkle tree hash of ``leaves`` (SHA-256 of nothing when empty)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = [hashlib.sha256(b"\x00" + item).digest() for item in leaves]
    return _subtree(level)


def _subtree(hashes: Sequence[bytes]) -> bytes:
    if len(hashes) == 1:
        return hashes[0]
    # RFC 6962 §2.1: split at the largest power of two smaller than n.
    split = 1 << ((len(hashes) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + _subtree(hashes[:split]) + _subtree(hashes[split:])).digest()


def note_text(operator_id: str, checkpoint_id: uuid.UUID, created_at: datetime,
              tree_size: int, root: bytes) -> str:
    """Return a checkpoint's signed-note text (see the module's docstring)."""
    return (f"{ORIGIN}/{operator_id}\n{tree_size}\n{base64.b64encode(root).decode()}\n"
            f"checkpoint {checkpoint_id}\ntime {utc_text(created_at)}\n")


# --- making and reading checkpoints ---------------------------------------------------


def _heads_json(heads: Iterable[ChainHead]) -> list[dict[str, Any]]:
    return [{"table_id": h.table_id, "seq": h.seq, "head_hash": h.content_hash} for h in heads]


@dataclass(frozen=True, slots=True)
class NewCheckpoint:
    """A checkpoint about to be stored: its columns."""

    id: uuid.UUID
    operator_id: str
    created_at: datetime
    tree_size: int
    root_hash: str
    heads: dict[str, Any]
    note: str
    key_id: str


def checkpoint_json(row: CheckpointColumns) -> dict[str, Any]:
    """Return a stored checkpoint as the API shows it (and ``verify`` takes it back)."""
    return {"checkpoint_id": str(row.id), "operator_id": row.operator_id,
            "created_at": utc_text(row.created_at), "tree_size": row.tree_size,
            "root_hash": row.root_hash, "key_id": row.key_id,
            "heads": row.heads["heads"], "note": row.note}


def create_checkpoint(uows: UnitOfWorkFactory, signer: Signer,
                      operator_id: str) -> dict[str, Any]:
    """Sign and store the head of every chain of ``operator_id``, read in one snapshot."""
    with uows(isolation_level="REPEATABLE READ") as uow:
        now = uow.now()
        heads = _heads_json(uow.rounds.heads(operator_id))
        root = merkle_root([leaf(h["table_id"], h["seq"], h["head_hash"]) for h in heads])
        checkpoint_id = uuid.uuid4()
        note = signer.sign_note(note_text(operator_id, checkpoint_id, now, len(heads), root))
        row = NewCheckpoint(id=checkpoint_id, operator_id=operator_id, created_at=now,
                            tree_size=len(heads), root_hash=root.hex(),
                            heads={"heads": heads}, note=note, key_id=signer.key_id)
        uow.appends.add_checkpoint(asdict(row))
        return checkpoint_json(row)


def get_checkpoint(uows: UnitOfWorkFactory, operator_id: str,
                   checkpoint_id: uuid.UUID) -> dict[str, Any] | None:
    with uows() as uow:
        row = uow.checkpoints.get(operator_id, checkpoint_id)
        if row is None:
            return None
        return checkpoint_json(row)


LIST = "checkpoints"


def list_checkpoints(uows: UnitOfWorkFactory, operator_id: str, *, limit: int,
                     cursor: str | None) -> dict[str, Any]:
    """Return the operator's checkpoints, newest first, a page at a time."""
    before = (None if cursor is None
              else _checkpoint_position(cursors.decode(cursor, LIST, {})))
    with uows() as uow:
        rows = uow.checkpoints.list(operator_id, before=before, limit=limit + 1)
        items = [checkpoint_json(row) for row in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = cursors.encode(LIST, {}, [last.created_at.isoformat(), str(last.id)])
    return {"items": items, "next_cursor": next_cursor}


def _checkpoint_position(position: list[Any]) -> tuple[datetime, uuid.UUID]:
    try:
        stamp, ident = position
        moment = datetime.fromisoformat(stamp)
        if moment.tzinfo is None:
            raise ValueError("naive time")
        return moment, uuid.UUID(ident)
    except (TypeError, ValueError, AttributeError):
        raise InvalidCursor("the cursor's position is not one this list issued") from None


# --- verifying against checkpoints and receipts ---------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: what, the table and seq it concerns, and how it shows."""

    what: str
    table_id: str | None
    seq: int | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "table_id": self.table_id, "seq": self.seq,
                "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Anchor:
    """What an auditor was told a chain held at ``seq``, and who said so."""

    content_hash: str
    prev_hash: str | None  # None when the source does not say (a checkpoint's head)
    source: str


@dataclass(slots=True)
class AnchoredVerification:
    """One page of a verify against kept checkpoints and receipts."""

    rounds: int = 0
    findings: list[Finding] = field(default_factory=list)
    chains: list[ChainEnd] = field(default_factory=list)
    next_cursor: str | None = None

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked": {"rounds": self.rounds, "chains": len(self.chains)},
                "findings": [f.to_json() for f in self.findings],
                "chains": [c.to_json() for c in self.chains], "next_cursor": self.next_cursor}


VERIFY = "audit.verify"


def verify_anchored(uows: UnitOfWorkFactory, keys: PublicKeys, operator_id: str, *,
                    checkpoint: Mapping[str, Any] | None,
                    receipts: Sequence[Mapping[str, Any]], limit: int = DEFAULT_LIMIT,
                    cursor: str | None = None, budget_s: float | None = None,
                    only: Part | None = None) -> AnchoredVerification:
    """Check the signatures of a kept checkpoint and receipts with ``keys`` (every public
    key the service signed with), then the chains they name.

    Does at most ``limit`` rounds of work, and starts none once ``budget_s`` seconds have
    passed (but the first); ``next_cursor`` continues where it stopped (bound to the same
    checkpoint and receipts). Signature findings come on the first page, the operator's
    stray lines and seats on the last. ``only`` does one part of that work (what one of
    several processes does, ``verify_anchored_in_processes``).
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    binding = {"checkpoint": checkpoint, "receipts": list(receipts),
               "part": None if only is None else [only.index, only.of]}
    report = AnchoredVerification()
    anchors: dict[str, dict[int, Anchor]] = {}
    findings: list[Finding] = []
    if checkpoint is not None:
        findings.extend(_anchor_checkpoint(keys, operator_id, checkpoint, anchors))
    for n, receipt in enumerate(receipts):
        findings.extend(_anchor_receipt(keys, operator_id, receipt, n, anchors))
    start_table: str | None = None
    after_seq = 0
    if cursor is None:
        if only is None or only.signatures:
            report.findings.extend(findings)
    else:
        start_table, after_seq = _verify_position(cursors.decode(cursor, VERIFY, binding))
    tables = sorted(t for t in anchors if start_table is None or t >= start_table)
    if only is not None:
        order = {table_id: n for n, table_id in enumerate(sorted(anchors))}
        tables = [t for t in tables if order[t] % only.of == only.index]
    budget = limit
    deadline = None if budget_s is None else time.monotonic() + budget_s
    rulesets = Rulesets()
    with uows(isolation_level="REPEATABLE READ", read_only=True) as uow:
        for table_id in tables:
            resume = after_seq if table_id == start_table else 0
            done, checked, last = _walk(uow, keys, operator_id, table_id, anchors[table_id],
                                        resume, budget, report, rulesets, deadline)
            budget -= checked
            report.rounds += checked
            if not done:
                report.next_cursor = cursors.encode(VERIFY, binding, [table_id, last])
                break
        if report.next_cursor is None and (only is None or only.strays):
            # Every line of the operator, at any table and of any date: a line is money a
            # reader sees, and one that names no stored round is in no round's content.
            report.findings.extend(
                Finding(STRAY_LINES, stray.table_id, None, stray.detail())
                for stray in uow.rounds.stray_lines(operator_id, None, None,
                                                    limit=StrayLines.REPORTED))
            report.findings.extend(
                Finding(STRAY_SEATS, stray.table_id, None, stray.detail())
                for stray in uow.rounds.stray_seats(operator_id, limit=StraySeats.REPORTED))
    return report


@dataclass(frozen=True, slots=True)
class Part:
    """One of ``of`` parts of a verify: part ``index`` walks every ``of``-th chain (by
    table id) from its ``index``-th; part 0 also reports the signatures and the strays."""

    index: int
    of: int

    @property
    def signatures(self) -> bool:
        return self.index == 0

    @property
    def strays(self) -> bool:
        return self.index == 0


def verify_anchored_in_processes(
        make_uows: Callable[[], UnitOfWorkFactory], keys: PublicKeys, operator_id: str, *,
        checkpoint: Mapping[str, Any], jobs: int,
        limit: int = DEFAULT_LIMIT) -> Iterator[AnchoredVerification]:
    """Verify a kept checkpoint in ``jobs`` processes at once, each walking its share of
    the chains (chains are independent) on a connection of its own; yield every page of
    every part as it comes. ``make_uows`` runs in each process, which it forks. The parts
    read in snapshots of their own: each chain is read whole in one."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    context = multiprocessing.get_context("fork")
    running: dict[Any, Any] = {}
    for index in range(jobs):
        here, there = context.Pipe(duplex=False)
        process = context.Process(target=_verify_part, daemon=True, args=(
            there, make_uows, keys, operator_id, checkpoint, Part(index, jobs), limit))
        process.start()
        there.close()
        running[here] = process
    try:
        while running:
            for ready in multiprocessing.connection.wait(list(running)):
                try:
                    page = ready.recv()  # type: ignore[union-attr,call-arg]
                except EOFError:
                    page = RuntimeError("a verify process ended without its report")
                if isinstance(page, BaseException):
                    raise page
                if page is None:
                    running.pop(ready).join()
                else:
                    yield cast(AnchoredVerification, page)
    finally:
        for process in running.values():
            process.kill()


def default_jobs() -> int:
    """The processes a verify of every chain runs in by default: one a core, and one more
    to work while the others wait on their queries (1,000,000 rounds on 2 cores: 149 s
    in 2 processes, 112 s in 3, bench.ledger)."""
    return (os.cpu_count() or 1) + 1


def _verify_part(out: Any, make_uows: Callable[[], UnitOfWorkFactory], keys: PublicKeys,
                 operator_id: str, checkpoint: Mapping[str, Any], part: Part,
                 limit: int) -> None:
    try:
        uows = make_uows()
        cursor = None
        while True:
            page = verify_anchored(uows, keys, operator_id, checkpoint=checkpoint,
                                   receipts=[], limit=limit, cursor=cursor, only=part)
            out.send(page)
            cursor = page.next_cursor
            if cursor is None:
                break
        out.send(None)
    except Exception as error:  # reported to the parent, which raises it
        out.send(RuntimeError(f"verify part {part.index} of {part.of} failed: {error!r}"))
    finally:
        out.close()


def _verify_position(position: list[Any]) -> tuple[str, int]:
    if (len(position) != 2 or not isinstance(position[0], str)
            or not isinstance(position[1], int) or isinstance(position[1], bool)
            or position[1] < 0):
        raise InvalidCursor("the cursor's position is not one this list issued")
    return position[0], position[1]


def _anchor_checkpoint(keys: PublicKeys, operator_id: str, checkpoint: Mapping[str, Any],
                       anchors: dict[str, dict[int, Anchor]]) -> list[Finding]:
    name = f"checkpoint {checkpoint.get('checkpoint_id')}"
    signed = verify_note(keys, str(checkpoint.get("note", "")))
    if signed is None:
        return [Finding(BAD_SIGNATURE, None, None, f"{name}: its note is not signed by any "
                        f"of the service's keys ({keys.names()})")]
    lines = signed.splitlines()
    if len(lines) < 3 or lines[0] != f"{ORIGIN}/{operator_id}":
        return [Finding(BAD_CHECKPOINT, None, None, f"{name}: the note is not a checkpoint of "
                        f"operator {operator_id}")]
    heads = checkpoint.get("heads", [])
    try:
        root = base64.b64decode(lines[2], validate=True)
        size = int(lines[1])
        leaves = [leaf(h["table_id"], h["seq"], h["head_hash"]) for h in heads]
    except (binascii.Error, ValueError, KeyError, TypeError):
        return [Finding(BAD_CHECKPOINT, None, None, f"{name}: unreadable note or heads")]
    if size != len(leaves) or merkle_root(leaves) != root:
        return [Finding(BAD_CHECKPOINT, None, None, f"{name}: its heads do not hash to the "
                        "signed Merkle root (heads added, removed or changed)")]
    for head in heads:
        anchors.setdefault(head["table_id"], {})[head["seq"]] = Anchor(
            head["head_hash"], None, name)
    return []


def _anchor_receipt(keys: PublicKeys, operator_id: str, receipt: Mapping[str, Any], n: int,
                    anchors: dict[str, dict[int, Anchor]]) -> list[Finding]:
    table_id, seq = receipt["table_id"], receipt["seq"]
    statement = receipt_statement(operator_id, table_id, seq, receipt.get("prev_hash"),
                                  receipt["content_hash"])
    # The key the receipt names, or (a receipt kept without it) any of the keyring's.
    named = receipt.get("key_id")
    candidates = ([keys.find(named)] if named is not None
                  else [k.verifier for k in keys.keys])
    if not any(v is not None and v.verify(statement, receipt["signature"])
               for v in candidates):
        return [Finding(BAD_SIGNATURE, table_id, seq, f"receipts[{n}]: not signed for "
                        f"operator {operator_id} by any of the service's keys "
                        f"({keys.names()})")]
    anchors.setdefault(table_id, {})[seq] = Anchor(receipt["content_hash"],
                                                   receipt.get("prev_hash"),
                                                   f"receipts[{n}]")
    return []


def _walk(uow: UnitOfWork, keys: PublicKeys, operator_id: str, table_id: str,
          anchored: Mapping[int, Anchor], after_seq: int, budget: int,
          report: AnchoredVerification, rulesets: Rulesets,
          deadline: float | None = None) -> tuple[bool, int, int]:
    """Walk one chain from after ``after_seq`` to its head, at most ``budget`` rounds.

    Returns whether it reached the head, how many rounds it checked and the last seq.
    """
    if budget <= 0:
        return False, 0, after_seq
    found = report.findings
    head = next(iter(uow.rounds.heads(operator_id, table_id=table_id)), None)
    if head is None:
        found.append(Finding(MISSING_TABLE, table_id, max(anchored), f"the chain of table "
                             f"{table_id} has no rounds; {_sources(anchored)} showed it at "
                             f"seq {max(anchored)}"))
        return True, 0, 0
    if after_seq == 0:
        for seq in sorted(s for s in anchored if s > head.seq):
            found.append(Finding(TRUNCATED, table_id, seq, f"the chain ends at seq {head.seq}; "
                                 f"{anchored[seq].source} showed seq {seq} "
                                 f"({anchored[seq].content_hash})"))
    prev_seq = after_seq
    prev_hash = (None if after_seq == 0
                 else uow.rounds.content_hash_at(operator_id, table_id, after_seq))
    prev_time: datetime | None = None
    checked = 0
    while prev_seq < head.seq:
        # Past the deadline, stop before the next batch once this request did some work.
        if checked >= budget or (deadline is not None and (checked or report.rounds)
                                 and time.monotonic() > deadline):
            return False, checked, prev_seq
        batch = uow.rounds.chain_batch(operator_id, table_id, prev_seq, head.seq,
                                       min(BATCH, budget - checked))
        if not batch.rounds:
            break
        for round_ in batch.rounds:
            checked += 1
            players, entries = batch.seats.get(round_.chain_seq, []), batch.lines.get(
                round_.id, [])
            seq = round_.chain_seq
            if seq != prev_seq + 1:
                found.append(Finding(SEQ_GAP, table_id, seq, f"seq {seq} follows seq "
                                     f"{prev_seq}: rounds {prev_seq + 1}-{seq - 1} are gone"))
            elif round_.prev_hash != prev_hash:
                found.append(Finding(BROKEN_LINK, table_id, seq, f"prev_hash {round_.prev_hash}"
                                     f" is not the hash {prev_hash} of seq {prev_seq}"))
            # The stored texts as they are: a result not stored as it was hashed fails here.
            recomputed = content_hash(round_, players, entries, _texts(
                round_, rulesets(uow, operator_id, round_.ruleset_hash)))
            if recomputed != round_.content_hash:
                found.append(Finding(CONTENT_HASH, table_id, seq, f"content hashes to "
                                     f"{recomputed}, stored {round_.content_hash}"))
            problem = receipt_problem(keys, round_)
            if problem is not None:
                found.append(Finding(problem.what, table_id, seq, problem.detail))
            # Whatever the hash says: a round appended with rows that are not its answer's
            # hashes them as well as honest ones.
            answer = _answer(round_.result)
            if not rows_match(round_, answer, players, entries):
                found.extend(Finding(what, table_id, seq, f"{_TABLE_OF[what]}: {detail}")
                             for what, detail in money_row_changes(
                                 round_, answer, *evidence_rows(players, entries)))
            if prev_time is not None and round_.created_at < prev_time:
                found.append(Finding(CREATED_AT, table_id, seq, f"created_at "
                                     f"{utc_text(round_.created_at)} is before seq "
                                     f"{prev_seq}'s {utc_text(prev_time)}"))
            anchor = anchored.get(seq)
            if anchor is not None and (anchor.content_hash != round_.content_hash or (
                    anchor.prev_hash is not None and anchor.prev_hash != round_.prev_hash)):
                found.append(Finding(REWRITTEN, table_id, seq, f"{anchor.source} showed hash "
                                     f"{anchor.content_hash}; the chain now holds "
                                     f"{round_.content_hash}"))
            prev_seq, prev_hash, prev_time = seq, round_.content_hash, round_.created_at
    report.chains.append(ChainEnd(table_id, head.seq, head.content_hash))
    return True, checked, prev_seq


def _texts(stored: Any, ruleset: orjson.Fragment | None) -> RoundTexts:
    """A stored round's request, result and ruleset as its content hash covers them, as
    canonical JSON text (``orjson.Fragment``): the result the text stored, the request and
    the ruleset their stored JSON written again the one canonical way."""
    return RoundTexts(orjson.Fragment(canonical_json(_loads(stored.request))),
                      orjson.Fragment(stored.result), ruleset)


def _loads(text_: str) -> Any:
    """Read JSON text as the database driver reads a JSONB value (orjson when it can)."""
    try:
        return orjson.loads(text_)
    except orjson.JSONDecodeError:
        return json.loads(text_)


def _answer(result: str) -> Mapping[str, Any]:
    """Return a stored result's JSON object, or an empty one when it is not one (then
    every seat and line is named as not in the result)."""
    try:
        value = _loads(result)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


class Rulesets:
    """Each stored ruleset's canonical text, read once per hash for a whole verify."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, str], orjson.Fragment | None] = {}

    def __call__(self, uow: UnitOfWork, operator_id: str,
                 ruleset_hash: str) -> orjson.Fragment | None:
        key = (operator_id, ruleset_hash)
        if key not in self._texts:
            stored = uow.rounds.rulesets(operator_id, [ruleset_hash]).get(ruleset_hash)
            self._texts[key] = (None if stored is None
                                else orjson.Fragment(canonical_json(_loads(stored))))
        return self._texts[key]


def _sources(anchored: Mapping[int, Anchor]) -> str:
    return ", ".join(sorted({a.source for a in anchored.values()}))
