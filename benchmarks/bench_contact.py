"""Contact benchmark: time per implicit step and Newton iterations per step on the contact scenes,
and the square drop against a peer run in the same process: the documented command line of
``hooke bench contact`` (:mod:`hooke.bench.contact`), kept as it was.

    .venv/bin/python benchmarks/bench_contact.py                  # all contact scenes
    .venv/bin/python benchmarks/bench_contact.py square_drop      # some of them
    .venv/bin/python benchmarks/bench_contact.py --steps 5 --repeats 1 square_drop   # smoke run
    .venv/bin/python benchmarks/bench_contact.py --data docs/data  # also docs/data/bench_contact.json
    .venv/bin/python benchmarks/bench_contact.py --self-steps 2 --repeats 1 cloth_sphere:80  # smoke

Names are built-in scenes (default ``SCENES``: the first table) and the self-contact cases
(``SELF_CONTACT``: ``squares_self_contact`` with its peer, ``cloth_sphere:40``, ``:80``, ``:160``,
``soft3d_pile``; each timed over its own number of steps after a lead-in, ``--self-steps`` for all).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from hooke.bench import Options, measure_workload, write
from hooke.bench.contact import SCENES, SELF_CONTACT
from hooke.provenance import command_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="*", default=list(SCENES) + list(SELF_CONTACT),
                        metavar="NAME",
                        help="built-in scenes and self-contact cases (default: SCENES and all cases)")
    parser.add_argument("--steps", type=int, default=None,
                        help="steps per run (default: each scene's whole run)")
    parser.add_argument("--self-steps", type=int, default=None,
                        help="timed steps of every self-contact case (default: each case's own)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per scene (median)")
    parser.add_argument("--data", type=Path, default=None,
                        help="also write the rows with their provenance to DIR/bench_contact.json")
    args = parser.parse_args()
    options = Options(repeats=args.repeats, extra={
        "scenes": [name for name in args.scenes if name not in SELF_CONTACT], "steps": args.steps,
        "self_contact": [name for name in args.scenes if name in SELF_CONTACT],
        "self_steps": args.self_steps})
    data, others = measure_workload("contact", options)
    print(f"\nOther processes used {others:.0%} of the CPU meanwhile (load average "
          f"{os.getloadavg()[0]:.1f} at the end; {os.cpu_count()} cores).")
    if args.data is not None:
        write(args.data, "contact", data, command_line("python benchmarks/bench_contact.py"),
              others, smoke=args.steps is not None or args.self_steps is not None)


if __name__ == "__main__":
    main()
