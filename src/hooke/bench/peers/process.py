"""A cloth peer in its own long-lived process, driven over a pipe.

Contract: ``PeerProcess(name, n)`` starts ``python -m hooke.bench.peers.worker NAME N``, which
builds peer ``name``'s cloth of n × n particles once and then answers requests, one JSON object
per line: ``{"check": K, "path": P}`` runs K steps and saves the positions to P (``.npy``);
``{"time": STEPS, "repeats": R}`` answers the median seconds of R runs of STEPS steps (after a
warm-up of 10 steps); ``{"quit": true}`` ends it. A peer that fails (at start or later) answers
``{"error": "…"}``; :attr:`PeerProcess.error` keeps the first such line and every later request
returns it at once. The worker writes anything the peer itself prints to stderr, so the
protocol's stdout stays clean.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile


class PeerProcess:
    def __init__(self, name: str, n: int):
        self.name = name
        self.error: str | None = None
        # A file, not a pipe: a peer that prints much would otherwise fill the pipe and stall.
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hooke.bench.peers.worker", name, str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self._answer()

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        try:
            answer = json.loads(line)
        except ValueError:
            self.process.wait(timeout=30)
            self.log.seek(0)
            lines = self.log.read().strip().splitlines()
            answer = {"error": lines[-1] if lines else f"exited with code {self.process.returncode}"}
        if "error" in answer and self.error is None:
            self.error = answer["error"]
        return answer

    def request(self, **message) -> dict:
        if self.error is not None:
            return {"error": self.error}
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.process.poll() is None:
            if self.error is None:
                try:
                    self.process.stdin.write(json.dumps({"quit": True}) + "\n")
                    self.process.stdin.flush()
                except OSError:
                    pass
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.log):
            stream.close()

    def __enter__(self) -> PeerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
