"""The shipped baselines (``baselines.json``): elu+1, DPFP, Performer, Taylor (Based's map) and
softmax scored at the default size, with the commit and machine they were made on. Regenerate
(about an hour on 2 cores; MQAR runs already in the store are read, not trained again):

    python -m evalsuite.scorecard.baselines [--store results/evalsuite.db] [--workers 2]

A test checks that the file loads and was made at the settings ``measure`` declares.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import subprocess
from pathlib import Path

from .card import BASELINES, Baselines

MAPS = ("elu1", "dpfp", "performer", "taylor", None)  # None: softmax, the positive control
LABELS = {"elu1": "elu+1", "dpfp": "DPFP", "performer": "Performer", "taylor": "Taylor (Based)"}
PATH = Path(__file__).with_name(BASELINES)
COMMAND = "python -m evalsuite.scorecard.baselines"


def commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=Path(__file__).parent,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (out.stdout.strip() + ("+changes" if dirty else "")) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def main() -> None:
    from evalsuite.store import Store

    from .score import score

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default=None, help="the results store the MQAR runs go to")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(PATH))
    args = parser.parse_args()
    store = Store(args.store)
    at = commit()  # the code the cards are measured with (read before, so later edits do not count)
    cards = [score(ref, store, workers=args.workers) for ref in MAPS]
    cards = [c.model_copy(update={"label": LABELS.get(c.ref, c.label)}) for c in cards]
    made = Baselines(command=COMMAND, commit=at, made=datetime.date.today().isoformat(),
                     machine=f"{platform.machine()}, {__import__('os').cpu_count()} cores", cards=cards)
    Path(args.out).write_text(made.model_dump_json(indent=1) + "\n")
    print(f"wrote {args.out}: {', '.join(c.label for c in cards)}")


if __name__ == "__main__":
    main()
