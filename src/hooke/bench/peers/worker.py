"""The process of one cloth peer (see :mod:`hooke.bench.peers.process` for its protocol).

    python -m hooke.bench.peers.worker taichi 100
"""

from __future__ import annotations

import json
import os
import sys
import time


def serve(name: str, n: int, answers) -> None:
    import numpy as np

    from . import module
    from .common import cloth_arrays

    def send(message: dict) -> None:
        answers.write(json.dumps(message) + "\n")
        answers.flush()

    try:
        stepper = module(name).make(cloth_arrays(n))
    except Exception as error:  # the peer's own failure: reported, not raised
        send({"error": f"{type(error).__name__}: {error}"})
        return
    send({"ready": True})
    warm = False
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if "quit" in request:
                return
            if "check" in request:
                stepper.run(int(request["check"]))
                np.save(request["path"], np.asarray(stepper.positions(), dtype=float))
                send({"done": True})
            elif "time" in request:
                if not warm:
                    stepper.run(10)
                    warm = True
                times = []
                for _ in range(int(request["repeats"])):
                    started = time.perf_counter()
                    stepper.run(int(request["time"]))
                    times.append(time.perf_counter() - started)
                send({"seconds": float(np.median(times))})
        except Exception as error:
            send({"error": f"{type(error).__name__}: {error}"})
            return


def main() -> None:
    answers = os.fdopen(os.dup(1), "w")  # the protocol's channel
    os.dup2(2, 1)  # whatever the peer prints goes to stderr
    sys.stdout = sys.stderr
    serve(sys.argv[1], int(sys.argv[2]), answers)


if __name__ == "__main__":
    main()
