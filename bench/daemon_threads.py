"""Threads a daemon holds while N jobs are queued (CPU only, a few seconds).

Starts a daemon (unix socket, CPU backend, one MSM process) with keys for a tiny synthetic
circuit, makes every kernel region sleep (the slow-kernel fault) so the jobs stay queued,
submits N jobs over gRPC and counts the process's threads by name before and after.

    python bench/daemon_threads.py [--jobs 1000]
"""

from __future__ import annotations

import argparse
import collections
import re
import tempfile
import threading
import time
from pathlib import Path

CIRCUIT = "synthetic:512"


def _groups() -> dict[str, int]:
    """Live threads by name with digits folded (cuzk-collect-job-… → cuzk-collect-job-N)."""
    names = (re.sub(r"[0-9a-f]{16}|\d+", "N", t.name) for t in threading.enumerate())
    return dict(sorted(collections.Counter(names).items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    args = ap.parse_args()

    from cuzk.circuits import get_circuit, key_file_stem
    from cuzk.curve.pool import MsmPool
    from cuzk.groth16.setup import generate_parameters
    from cuzk.r1cs import synthesize_shape
    from cuzk.server.client import Client
    from cuzk.server.config import load_config
    from cuzk.server.daemon import Daemon
    from cuzk.server.proto import proving_pb2 as pb

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        shape = synthesize_shape(get_circuit(CIRCUIT), CIRCUIT)
        with MsmPool(1) as pool:
            generate_parameters(shape, tmp, key_file_stem(CIRCUIT), seed=1, pool=pool)
        config = load_config(
            None,
            {
                "server.listen": f"unix://{tmp}/cuzk.sock",
                "http.enabled": False,
                "engine.param_dir": str(tmp),
                "engine.msm_workers": 1,
                "engine.memory_budget": 1 << 30,
                "engine.faults.slow_kernel": 1.0,
                "engine.faults.slow_kernel_s": 2.0,
                "journal.path": str(tmp / "journal.sqlite3"),
            },
        )
        daemon = Daemon(config)
        daemon.start()
        try:
            idle = threading.active_count()
            print(f"idle daemon: {idle} threads {_groups()}")
            t0 = time.perf_counter()
            with Client(daemon.address) as client:
                for i in range(args.jobs):
                    client.submit(pb.SubmitProofRequest(circuit_id=CIRCUIT, seeds=[i + 1]))
            wall = time.perf_counter() - t0
            st = daemon.engine.status() if daemon.engine is not None else None
            queued = st.counts["NORMAL"]["queued"] if st is not None else -1
            busy = threading.active_count()
            print(f"{args.jobs} jobs submitted in {wall:.1f} s, {queued} still queued: "
                  f"{busy} threads (+{busy - idle}) {_groups()}")  # fmt: skip
        finally:
            daemon.stop(graceful=False)


if __name__ == "__main__":
    main()
