"""hooke's speed benchmark, workloads W1–W5 of issue 5: the documented command line of
``hooke bench W1 … W5`` (:mod:`hooke.bench`, where the workloads live), kept as it was.

    .venv/bin/python benchmarks/bench.py                 # W1–W5, peers when installed
    .venv/bin/python benchmarks/bench.py W1 W3 --repeats 7
    .venv/bin/python benchmarks/bench.py --smoke         # a few steps of small sizes, no peers
    .venv/bin/python benchmarks/bench.py --no-peers
    .venv/bin/python benchmarks/bench.py --data docs/data   # also write docs/data/bench_W1.json …

Unlike ``hooke bench`` (peers with ``--peers``), this runs the installed peers unless told
``--no-peers``. Every time is the median of ``--repeats`` runs after a warm-up; W1 and W2 measure
hooke and the peers in turn ``--rounds`` times (see :mod:`hooke.bench.cloth`). The data files
record this command line. Benchmarks print; they assert nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hooke.bench import Options, run
from hooke.bench.measure import peak_rss
from hooke.bench.sizes import SIZES
from hooke.provenance import command_line


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", default=["W1", "W2", "W3", "W4", "W5"])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement")
    parser.add_argument("--rounds", type=int, default=3,
                        help="W1/W2: hooke and the peers measured in turn, this many times")
    parser.add_argument("--smoke", action="store_true", help="a few steps of small sizes, no peers")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--w5-scenes", nargs="*", choices=list(SIZES), default=list(SIZES),
                        help="W5: the scenes to size (default: all)")
    parser.add_argument("--data", type=Path, default=None,
                        help="also write each workload's numbers with their provenance to "
                             "DIR/bench_W<k>.json (docs/data: the README's tables)")
    args = parser.parse_args(argv)
    options = Options(smoke=args.smoke, peers=not (args.smoke or args.no_peers),
                      repeats=args.repeats, rounds=args.rounds,
                      extra={"w5_scenes": args.w5_scenes})
    run(args.workloads, options, args.data, command_line("python benchmarks/bench.py", argv))
    print(f"\npeak memory of this process: {peak_rss() / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
