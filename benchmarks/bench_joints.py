"""Steps per second of ``generalized_alpha`` on the jointed scenes, beside seed 002's C++ code:
the documented command line of ``hooke bench joints`` (:mod:`hooke.bench.joints`), kept as it was.

    .venv/bin/python benchmarks/bench_joints.py                 # top, crane, pendulum, chains n = 10 … 80
    .venv/bin/python benchmarks/bench_joints.py --chains 4 --scale 0.01   # a smoke run (CI)
    .venv/bin/python benchmarks/bench_joints.py --data docs/data   # also docs/data/bench_joints.json

The last line says how much of the CPU other processes used meanwhile.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hooke.bench import Options, measure_workload, write
from hooke.bench.joints import CHAINS
from hooke.provenance import command_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, nargs="*", default=list(CHAINS),
                        help="chain sizes n (default: 10 20 40 80)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every case's number of steps (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case (median)")
    parser.add_argument("--data", type=Path, default=None,
                        help="also write the rows with their provenance to DIR/bench_joints.json")
    args = parser.parse_args()
    options = Options(repeats=args.repeats, extra={"chains": args.chains, "scale": args.scale})
    data, others = measure_workload("joints", options)
    print(f"(other processes used {others:.0%} of the CPU meanwhile)")
    if args.data is not None:
        write(args.data, "joints", data, command_line("python benchmarks/bench_joints.py"),
              others, smoke=args.scale < 1)


if __name__ == "__main__":
    main()
