"""What every request passes through, in one hook before its view, one after, one at its end.

Flask calls each registered hook through its own loop, and each hook looked up the
request, ``g`` and the app through their proxies again (app.api.current): a few thousand
instructions a hook, more than most of them do. Here each of the three hooks takes them
once, works out the route's template once, and calls the steps in their order:

before the view: the request's id and clock (app.api.requestlog, app.api.metrics); the URL's
text checked (app.api.body), before auth and every view, so no control character or lone
surrogate reaches them; the key checked (app.api.auth), after the clock, so refused
requests are timed and counted too; the key's limits (app.api.limits), after auth, so a key
is counted against its own limits and an address on public routes; a CPU slot for heavy
work (app.api.cpu), after the limits, so a request over its key's limit is refused without
waiting here. A step that raises answers the request: the ones after it do not run.

after it, on every answer, refusals included: the RateLimit fields, the request counted and
timed, the CORS fields, and last the id echoed and the one log line, so the line shows the
answer as sent. At the end: the CPU slot given back, then the limit's slot.
"""

from __future__ import annotations

import time

from flask import Flask, Response

from app.api import cpu, limits, metrics, requestlog
from app.api.auth import authorize, route_template
from app.api.body import refuse_text_faults_in_url
from app.api.cors import cors_headers
from app.api.current import current_flask, current_g, current_request


def init_edge(app: Flask) -> None:
    """Run every request of ``app`` through the edge's steps (after the ``init_*`` of
    app.api.auth, limits, metrics and cpu have set up what the steps use)."""
    app.before_request(_before)
    app.after_request(_after)
    app.teardown_request(_teardown)


def _before() -> None:
    request, state, app = current_request(), current_g(), current_flask()
    now = time.perf_counter()
    requestlog.begin(request, state, now)
    state.metrics_started = now
    refuse_text_faults_in_url()
    rule = request.url_rule
    template = None if rule is None else route_template(rule.rule)
    authorize(request, state, app, template)
    limits.count(request, state, app, template)
    cpu.take(request, state, app, template)


def _after(response: Response) -> Response:
    request, state, app = current_request(), current_g(), current_flask()
    limits.headers(response, state)
    # Popped: if a step here raises, Flask runs this hook again on the 500 it answers,
    # and that answer is the one counted.
    started = state.__dict__.pop("metrics_started", None)
    if started is not None:  # else a hook before ours answered
        metrics.observe(response, request, app, started)
    cors_headers(response, request, app.config["SETTINGS"].cors_origins)
    requestlog.end(response, request, state)
    return response


def _teardown(_: BaseException | None) -> None:
    state, app = current_g(), current_flask()
    cpu.give_back(state, app)
    limits.release(state, app)
