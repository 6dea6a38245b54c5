"""Write the oracle fixtures: seeded hands per preset with their best splits' exact EVs.

    nice -n 19 .venv/bin/python -m tests.tools.oracle_fixtures [--presets classic4,swap3,taiwan4]
        [--hands 100] [--specials 10] [--special-presets taiwan4] [--deals 1000] [--jobs 2]

One file per preset, ``tests/data/advisor_oracle_<preset>.json``: ``--hands`` random hands
(``random.Random(f"oracle-{i}")``, the same hands and opponent deals for every preset:
they share one deck and ace-low), then, for ``--special-presets``, ``--specials`` hands
that hold a special hand the preset pays (the next seeded hands that do), each evaluated by
``tests.tools.ev_oracle.evaluate`` over ``--deals`` opponent deals seeded by the same text.
Per hand: every split whose EV is within ``KEEP`` points of the best (at most ``TOP``), as
row strengths ([category, *key] per row, front first) with one arrangement's cards and the
EV; keep_back's split and EV; the special claim and its EV; and ``floor``, the EV below
which a split is not listed (a pick not listed gave up at least best − floor).
About 4 s a hand on one core at 1,000 deals; ``--jobs`` processes share the hands.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from app.advisor.best import special_claim  # noqa: E402
from app.domain.arrange import keep_back  # noqa: E402
from app.domain.cards import DECK  # noqa: E402
from app.domain.hands import row_strength  # noqa: E402
from app.domain.rulesets import PRESETS  # noqa: E402
from tests.tools import ev_oracle  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data"
KEEP = 1.0
TOP = 40


def path_of(preset: str) -> Path:
    return DATA / f"advisor_oracle_{preset}.json"


def hand_seeds(preset: str, hands: int, specials: int) -> list[str]:
    """The seed texts of the fixture's hands: ``hands`` random, then ``specials`` that hold
    a special hand ``preset`` pays."""
    out = [f"oracle-{i}" for i in range(hands)]
    r = PRESETS[preset]
    i = hands
    found = 0
    while found < specials:
        seed = f"oracle-{i}"
        if special_claim(cards_of(preset, seed), r) is not None:
            out.append(seed)
            found += 1
        i += 1
    return out


def cards_of(preset: str, seed: str) -> list:
    r = PRESETS[preset]
    if r.decks != 1:
        raise ValueError("the fixtures share one-deck deals")
    return random.Random(seed).sample(list(DECK), 13)


def many(presets: list[str], seed: str, deals: int) -> list[dict[str, Any]]:
    """One hand under each of ``presets`` (one deck, the same ace-low: one set of deals)."""
    r = PRESETS[presets[0]]
    cards = cards_of(presets[0], seed)
    shared = ev_oracle.tables_of(sorted(cards, key=lambda c: c.order), r, r.max_players,
                                 deals, seed)
    return [one(p, seed, deals, shared) for p in presets]


def one(preset: str, seed: str, deals: int, shared: Any = None) -> dict[str, Any]:
    r = PRESETS[preset]
    cards = cards_of(preset, seed)
    o = ev_oracle.evaluate(cards, r, deals=deals, seed=seed, shared=shared)
    order = sorted(range(len(o.ev)), key=lambda i: -o.ev[i])
    best = float(o.ev[order[0]])
    listed = [i for i in order if o.ev[i] >= best - KEEP][:TOP]
    floor = float(o.ev[order[len(listed)]]) if len(listed) < len(order) else None
    kb = keep_back(cards, r.ace_low_straight, decks=r.decks)
    kb_text = [[int(s.category), *s.key] for s in
               (row_strength(row, r.ace_low_straight) for row in kb.rows)]
    kb_ev = next(float(o.ev[i]) for i in range(len(o.ev))
                 if ev_oracle.strength_text(r, o.splits[i].tolist()) == kb_text)

    def split(i: int) -> dict[str, Any]:
        a = ev_oracle.arrangement_of(cards, o.positions[i])
        return {"rows": ev_oracle.strength_text(r, o.splits[i].tolist()),
                "cards": [[str(c) for c in row] for row in a.rows], "ev": round(float(o.ev[i]), 4)}

    return {"seed": seed, "cards": " ".join(str(c) for c in cards), "splits_valid": len(o.ev),
            "top": [split(i) for i in listed],
            "floor": None if floor is None else round(floor, 4),
            "keep_back": {"rows": kb_text, "ev": round(kb_ev, 4)},
            "claim": None if o.claim is None else o.claim.value,
            "claim_ev": None if o.claim_ev is None else round(o.claim_ev, 4)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.tools.oracle_fixtures")
    p.add_argument("--presets", default="classic4,swap3,taiwan4")
    p.add_argument("--hands", type=int, default=100)
    p.add_argument("--specials", type=int, default=10)
    p.add_argument("--special-presets", default="taiwan4",
                   help="the presets whose fixture adds --specials hands holding one")
    p.add_argument("--deals", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args(argv)
    presets = args.presets.split(",")
    started = time.monotonic()
    seeds: list[str] = []
    for preset in presets:
        extra = args.specials if preset in args.special_presets.split(",") else 0
        seeds += [s for s in hand_seeds(preset, args.hands, extra) if s not in seeds]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = list(pool.map(many, [presets] * len(seeds), seeds, [args.deals] * len(seeds)))
    for k, preset in enumerate(presets):
        extra = args.specials if preset in args.special_presets.split(",") else 0
        wanted = set(hand_seeds(preset, args.hands, extra))
        hands = [d[k] for d, s in zip(done, seeds, strict=True) if s in wanted]
        r = PRESETS[preset]
        doc = {"preset": preset, "players": r.max_players, "deals": args.deals,
               "opponents": "keep_back, special auto", "keep": KEEP, "top": TOP,
               "source": "tests/tools/oracle_fixtures.py (tests/tools/ev_oracle.py)",
               "hands": hands}
        lines = ",\n".join(json.dumps(h, ensure_ascii=False) for h in hands)
        head = json.dumps({k: v for k, v in doc.items() if k != "hands"}, ensure_ascii=False)
        path_of(preset).write_text(head[:-1] + ', "hands": [\n' + lines + "\n]}\n")
        print(f"{path_of(preset)}: {len(hands)} hands, {time.monotonic() - started:.0f} s",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
