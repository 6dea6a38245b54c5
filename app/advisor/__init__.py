"""The arrangement advisor: ``mode: best`` of ``POST /v1/hands/arrange``.

Beside ``app/domain`` rather than in it: it uses numpy, and the domain stays stdlib-only.
It never scores a hand itself in what it reports: the expected points it answers are means
of ``app.domain.scoring.score_round`` over sampled deals. See ``best.py``.
"""
