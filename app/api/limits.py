"""Per-key limits: requests in a moving window, and requests at once, by route class.

Every API route belongs to a class (``ROUTE_CLASSES``): settles and other appends, dry
runs, the advisor (``mode: best``), reads, audit and reconciliation, and public routes,
which count by client address. Each key has a rate and a concurrency per class: the
settings' defaults (RATE_LIMIT_<CLASS>, CONCURRENCY_LIMIT_<CLASS>) or its own, given when it
was made. Every limited answer carries the RateLimit-Policy and RateLimit fields of
draft-ietf-httpapi-ratelimit-headers (two policies a class: ``"settle"`` for the rate and
``"settle-at-once"`` for the requests at once); over a limit it is 429 problem+json with
Retry-After and a RateLimit field that names the policy that refused it.

Where the counts live (RATE_LIMIT_STORAGE_URL): ``host://`` (the default), one SQLite file
that every worker of this host opens (RUN_DIR, made by the server at start), so a
key's limits hold across workers with no server to run; ``redis://``, the ``limits``
library's storage, shared by every worker and host; ``memory://``, this process alone.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

import orjson
from flask import Flask, Request, Response, request
from flask.ctx import _AppCtxGlobals
from limits import RateLimitItem, parse
from limits.storage import RedisStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from app.api.errors import ProblemError
from app.config import Settings
from app.host_counts import HOST_FILE, SLOT_EXPIRY_S, Count, HostCounts

log = logging.getLogger(__name__)
_T = TypeVar("_T")

EXTENSION = "limits"
TYPE_RATE_LIMITED = "/problems/rate-limited"
CLASSES = ("settle", "dry", "advisor", "read", "audit", "public")

SETTLE, DRY, ADVISOR, READ, AUDIT, PUBLIC = CLASSES
ROUTE_CLASSES: Mapping[tuple[str, str], str] = {
    ("POST", "/v1/rounds"): SETTLE,
    ("POST", "/v1/rounds/{round_id}/reversal"): SETTLE,
    ("POST", "/v1/matches"): SETTLE,
    ("POST", "/v1/matches/{match_id}/leave"): SETTLE,
    ("POST", "/v1/tables/{table_id}/cash"): SETTLE,
    ("POST", "/v1/rounds/score"): DRY,
    ("POST", "/v1/hands/evaluate"): DRY,
    ("POST", "/v1/hands/arrange"): DRY,  # ADVISOR when the body asks for mode best
    ("POST", "/v1/eligibility"): DRY,
    ("GET", "/v1/rounds"): READ,
    ("GET", "/v1/rounds/{round_id}"): READ,
    ("GET", "/v1/rounds/{round_id}/content"): READ,
    ("GET", "/v1/players/{player_id}/ledger"): READ,
    ("GET", "/v1/matches"): READ,
    ("GET", "/v1/matches/{match_id}"): READ,
    ("GET", "/v1/audit/checkpoints"): READ,
    ("GET", "/v1/audit/checkpoints/{checkpoint_id}"): READ,
    ("GET", "/v1/audit/verify"): AUDIT,
    ("POST", "/v1/audit/verify"): AUDIT,
    ("POST", "/v1/audit/checkpoints"): AUDIT,
    ("GET", "/v1/reconciliation"): AUDIT,
    ("GET", "/v1/fairplay/pairs"): AUDIT,
    ("GET", "/v1/fairplay/cases"): AUDIT,
    ("GET", "/v1/rulesets"): PUBLIC,
    ("GET", "/v1/rulesets/{name}"): PUBLIC,
    ("GET", "/v1/audit/public-key"): PUBLIC,
    ("GET", "/v1/audit/public-keys"): PUBLIC,
}


@dataclass(frozen=True, slots=True)
class Limit:
    """A class's rate (a ``limits`` item such as ``100/second``) and requests at once, with
    the RateLimit-Policy field that tells them (``policies``), written once."""

    rate: RateLimitItem
    at_once: int
    policy: str


def limit_of(name: str, rate: RateLimitItem, at_once: int) -> Limit:
    """Return class ``name``'s limit of ``rate`` and ``at_once`` requests at once."""
    return Limit(rate, at_once, policies(name, rate, at_once))


class SharedCounts:
    """Counts in the ``limits`` library's storage (Redis), shared by every worker and host.

    On a plain Redis server (``redis://``, ``rediss://``, ``redis+unix://``) a request's
    count and its slot are one round trip (``HIT_AND_TAKE``); on other storages the
    library's own calls, three.
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.windows = MovingWindowRateLimiter(storage)
        # Not a cluster's storage (a subclass): there the two keys may live on two nodes.
        self._hit_and_take = (storage.get_connection().register_script(HIT_AND_TAKE.encode())
                              if type(storage) is RedisStorage else None)

    def hit(self, rate: RateLimitItem, name: str, who: str) -> Count:
        allowed = self.windows.hit(rate, name, who)
        stats = self.windows.get_window_stats(rate, name, who)
        return Count(allowed, stats.remaining, stats.reset_time)

    def take_slot(self, slot: str) -> int:
        return self.storage.incr(slot, SLOT_EXPIRY_S)

    def free_slot(self, slot: str) -> None:
        self.storage.incr(slot, SLOT_EXPIRY_S, amount=-1)

    def hit_and_take(self, rate: RateLimitItem, name: str, who: str,
                     slot: str) -> tuple[Count, int]:
        script = self._hit_and_take
        if script is None:
            return _hit_and_take(self, rate, name, who, slot)
        storage = cast(RedisStorage, self.storage)
        now, width = time.time(), rate.get_expiry()
        allowed, oldest, held, taken = script(
            [storage.prefixed_key(rate.key_for(name, who)), storage.prefixed_key(slot)],
            [now, rate.amount, width, SLOT_EXPIRY_S])
        start = now if oldest is None else float(oldest)
        return Count(bool(allowed), rate.amount - int(held), start + width), int(taken)


# The library's moving window (acquire_moving_window.lua, then moving_window.lua for what
# is left and when the oldest entry leaves, with the same keys and entries) and, when the
# request is allowed, its counter of the slot (incr_expire.lua), in one script: what
# ``hit`` then ``take_slot`` do, in one round trip instead of three.
HIT_AND_TAKE = """
local timestamp = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local expiry = tonumber(ARGV[3])
local allowed = 0
local taken = 0
local entry = limit >= 1 and redis.call('lindex', KEYS[1], limit - 1)
if limit >= 1 and not (entry and tonumber(entry) >= timestamp - expiry) then
    allowed = 1
    redis.call('lpush', KEYS[1], timestamp)
    redis.call('ltrim', KEYS[1], 0, limit - 1)
    redis.call('expire', KEYS[1], expiry)
    taken = redis.call('incrby', KEYS[2], 1)
    if taken == 1 then
        redis.call('expire', KEYS[2], ARGV[4])
    end
end
local target = timestamp - expiry
local low, high, index = 0, limit - 1, nil
while low <= high do
    local mid = math.floor((low + high) / 2)
    local value = tonumber(redis.call('lindex', KEYS[1], mid))
    if value and value >= target then
        index = mid
        low = mid + 1
    else
        high = mid - 1
    end
end
if index then
    local oldest = redis.call('lindex', KEYS[1], index)
    return {allowed, tostring(tonumber(oldest)), index + 1, taken}
end
return {allowed, false, 0, taken}
"""


class LocalCounts:
    """Counts in this worker's memory: moving windows of request times, and slots in use.

    The ``limits`` library's memory storage starts a thread to expire its entries whenever
    its last one has finished, which under steady load is nearly every request; here a
    window drops its old entries as it is counted, and every ``SWEEP_EVERY`` counts the
    windows with nothing left in them go, under one lock.
    """

    SWEEP_EVERY = 1024

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (amount, width in seconds, class, who) -> (width, the times in the window)
        self._windows: dict[tuple[int, float, str, str], tuple[float, deque[float]]] = {}
        self._slots: dict[str, int] = {}
        self._counted = 0

    def hit(self, rate: RateLimitItem, name: str, who: str) -> Count:
        now = time.time()
        width = float(rate.get_expiry())
        with self._lock:
            self._counted += 1
            if self._counted % self.SWEEP_EVERY == 0:
                self._sweep(now)
            key = (rate.amount, width, name, who)
            kept = self._windows.get(key)
            if kept is None:  # made only when missing: most requests find their window
                kept = self._windows[key] = (width, deque())
            times = kept[1]
            while times and times[0] <= now - width:
                times.popleft()
            allowed = len(times) < rate.amount
            if allowed:
                times.append(now)
            reset_at = (times[0] if times else now) + width
            return Count(allowed, rate.amount - len(times), reset_at)

    def _sweep(self, now: float) -> None:
        for key, (width, times) in list(self._windows.items()):
            if not times or times[-1] <= now - width:
                del self._windows[key]

    def windows(self) -> int:
        """Return how many windows are kept (for tests of the sweep)."""
        with self._lock:
            return len(self._windows)

    def take_slot(self, slot: str) -> int:
        with self._lock:
            taken = self._slots.get(slot, 0) + 1
            self._slots[slot] = taken
            return taken

    def free_slot(self, slot: str) -> None:
        with self._lock:
            left = self._slots.get(slot, 0) - 1
            if left > 0:
                self._slots[slot] = left
            else:
                self._slots.pop(slot, None)

    def hit_and_take(self, rate: RateLimitItem, name: str, who: str,
                     slot: str) -> tuple[Count, int]:
        return _hit_and_take(self, rate, name, who, slot)


def _hit_and_take(counts: SharedCounts | LocalCounts, rate: RateLimitItem, name: str, who: str,
                  slot: str) -> tuple[Count, int]:
    """Count a request against ``rate`` and, when it is allowed, take one of ``slot``'s
    places: the count, and how many places are taken with it (0 when refused)."""
    counted = counts.hit(rate, name, who)
    return counted, counts.take_slot(slot) if counted.allowed else 0


def host_counts(directory: Path | None) -> HostCounts | LocalCounts:
    """Return the counts of ``host://``: the server's shared file, or with no server
    folder (a single process: the flask command, a test) this process's memory."""
    return LocalCounts() if directory is None else HostCounts(directory / HOST_FILE)


class Limiter:
    """The app's counts and defaults; counts each request against its key's limits."""

    def __init__(self, settings: Settings) -> None:
        self.counts: SharedCounts | LocalCounts | HostCounts
        if settings.rate_limit_storage_url.startswith("memory://"):
            self.counts = LocalCounts()
        elif settings.rate_limit_storage_url.startswith("host://"):
            self.counts = host_counts(settings.run_dir)
        else:
            storage = storage_from_string(settings.rate_limit_storage_url)
            if not isinstance(storage, Storage):
                raise TypeError(f"{settings.rate_limit_storage_url} is not a synchronous "
                                "storage")
            self.counts = SharedCounts(storage)
        self.defaults = {name: limit_of(name, parse(settings.rate_limits[name]),
                                        settings.concurrency_limits[name])
                         for name in CLASSES}
        # Keys' own limits, each parsed once: (class, own rate, at once) -> its Limit.
        self._own: dict[tuple[str, str | None, int], Limit] = {}

    OWN_KEPT = 10_000

    def limit(self, name: str, own_rates: Mapping[str, str],
              own_concurrency: Mapping[str, int]) -> Limit:
        default = self.defaults[name]
        rate = own_rates.get(name)
        at_once = own_concurrency.get(name, default.at_once)
        if rate is None and at_once == default.at_once:
            return default  # a key without limits of its own: the class's, as they are
        own = self._own.get((name, rate, at_once))
        if own is None:
            if len(self._own) >= self.OWN_KEPT:
                self._own.clear()
            own = self._own[name, rate, at_once] = limit_of(
                name, default.rate if rate is None else parse(rate), at_once)
        return own


def init_limits(app: Flask, settings: Settings) -> None:
    """Keep ``app``'s counts and defaults: app.api.edge counts every API request against
    its key's limits (after authorization)."""
    app.extensions[EXTENSION] = Limiter(settings)


def _class_of(method: str, template: str) -> str | None:
    name = ROUTE_CLASSES.get((method, template))
    if name == DRY and template == "/v1/hands/arrange" and asks_for_best():
        return ADVISOR
    return name


def asks_for_best() -> bool:
    # The body is bounded (MAX_BODY_BYTES) before anything reads it; a body that does not
    # parse is refused by the view, counted here as a dry run.
    try:
        body = orjson.loads(request.get_data(cache=True))
    except orjson.JSONDecodeError:
        return False
    return isinstance(body, dict) and body.get("mode") == "best"


def count(request: Request, state: _AppCtxGlobals, app: Flask, template: str | None) -> None:
    """Count the request against its key's limits (its address's on a public route), or
    raise the 429 problem that refuses it. ``template``: its route, None when none matched."""
    method = request.method
    if template is None or method == "OPTIONS":
        return
    name = _class_of(method, template)
    if name is None:
        return
    limiter: Limiter = app.extensions[EXTENSION]
    caller = state.__dict__.get("caller")
    if caller is None:
        who, limit = f"addr:{request.remote_addr or '-'}", limiter.defaults[PUBLIC]
    else:
        who = f"key:{caller.key_id}"
        limit = limiter.limit(name, caller.rate_limits, caller.concurrency_limits)
    slot = f"slots/{name}/{who}"
    try:
        counted, taken = limiter.counts.hit_and_take(limit.rate, name, who, slot)
    except Exception:  # the shared store went away: serve unlimited rather than not at all
        log.warning("the rate limit store does not answer; %s %s goes on unlimited",
                    request.method, request.path, exc_info=True)
        return
    if not counted.allowed:
        raise _refusal(name, limit, at_once=False, reset_at=counted.reset_at)
    if taken > limit.at_once:
        limiter.counts.free_slot(slot)
        raise _refusal(name, limit, at_once=True, reset_at=time.time() + 1)
    state.limit_slot = slot
    state.limit_shown = (name, limit, counted)


def policies(name: str, rate: RateLimitItem, at_once: int) -> str:
    """Return the RateLimit-Policy field of a class: its rate, then its requests at once."""
    return (f'"{name}";q={rate.amount};w={rate.get_expiry()}, '
            f'"{name}-at-once";q={at_once};qu="concurrent-requests"')


def _refusal(name: str, limit: Limit, *, at_once: bool, reset_at: float) -> ProblemError:
    wait = max(1, math.ceil(reset_at - time.time()))
    if at_once:
        policy, what = f"{name}-at-once", f"{limit.at_once} requests at once in class {name}"
    else:
        policy, what = name, f"{limit.rate} in class {name}"
    return ProblemError(
        429, "Too Many Requests",
        f"this key is over its limit of {what} (policy {policy}); retry in {wait} s",
        [{"path": "Authorization", "message": f"over {what}", "code": "rate_limited"}],
        type_=TYPE_RATE_LIMITED,
        headers={"Retry-After": str(wait), "RateLimit-Policy": limit.policy,
                 "RateLimit": f'"{policy}";r=0;t={wait}'})


def headers(response: Response, state: _AppCtxGlobals) -> None:
    """Tell a counted request's limits in its answer's RateLimit fields."""
    shown = state.__dict__.get("limit_shown")
    if shown is not None:
        name, limit, counted = shown
        reset = max(0, math.ceil(counted.reset_at - time.time()))
        # Added, not set (which first looks for the field to replace): nothing else writes
        # them on an answer that was counted (a refusal's are its own, and not counted).
        fields = response.headers
        fields.add("RateLimit-Policy", limit.policy)
        fields.add("RateLimit", f'"{name}";r={max(0, counted.remaining)};t={reset}')


def release(state: _AppCtxGlobals, app: Flask) -> None:
    """Give back the slot the request took, as it ends."""
    slot = state.__dict__.pop("limit_slot", None)
    if slot is not None:
        try:
            app.extensions[EXTENSION].counts.free_slot(slot)
        except Exception:  # the store went away: the slot expires by itself
            log.warning("could not free a concurrency slot %s", slot, exc_info=True)
