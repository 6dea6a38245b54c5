"""``python -m bench``: run the benchmarks one after another and print their figures.

Without options it runs the in-process ones (seconds each; the advisor's at a small
size, ``python -m bench.advisor --deals 2000`` for the full size; fair play on 300 hands).
``--service`` adds the ones that start the service on a scratch database (wrk load, soak,
ledger at 100,000 rounds; about ten minutes); ``--full`` runs those at full size (ledger at
1,000,000 rounds, a 10-minute soak, fair play at the issue's scale; well over an hour).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

DOMAIN = [
    ["bench.arrange"],
    ["bench.specials"],
    ["bench.scoring"],
    ["bench.advisor", "--hands", "100", "--deals", "25"],
    ["bench.fairplay", "--hands", "300"],
]
SERVICE = [
    ["bench.load", "--duration", "15"],
    ["bench.soak", "--minutes", "2", "--rate", "30"],
    ["bench.ledger", "--rounds", "100000", "--tables", "200"],
]
FULL = [
    ["bench.load", "--duration", "30"],
    ["bench.soak", "--minutes", "10", "--rate", "30"],
    ["bench.ledger", "--rounds", "1000000", "--tables", "2000"],
    ["bench.fairplay", "--full"],
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--service", action="store_true", help="also the service benchmarks")
    size.add_argument("--full", action="store_true", help="the service benchmarks at full size")
    args = parser.parse_args(argv)
    runs = DOMAIN + (FULL if args.full else SERVICE if args.service else [])
    failed = []
    for run in runs:
        print(f"\n=== python -m {' '.join(run)}", flush=True)
        started = time.monotonic()
        code = subprocess.call([sys.executable, "-m", *run])
        print(f"=== exit {code} after {time.monotonic() - started:.0f} s", flush=True)
        if code != 0:
            failed.append(run[0])
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
