"""Witness time of generated 2 KiB SnapDeals and PoRep requests (witness mode, one core):
``python bench/bench_witness.py``."""

from __future__ import annotations

import time

from cuzk.circuits import open_statement
from cuzk.circuits.filecoin.seal import generate_c1
from cuzk.circuits.filecoin.snap_vanilla import generate_update
from cuzk.openmp import configure_openmp
from cuzk.r1cs import synthesize_witness


def main() -> None:
    for cid, doc in (("snap-2k", generate_update(2048, 1)), ("porep-2k", generate_c1(2048, 5))):
        circuit = open_statement(cid, payload=doc.encode()).circuit(0)
        t = time.perf_counter()
        cs = synthesize_witness(circuit)
        dt = time.perf_counter() - t
        print(f"{cid} witness {dt:.2f} s, {len(cs.aux) / dt / 1e3:.0f}k aux values/s")


if __name__ == "__main__":
    configure_openmp()  # the process's choice, before any kernel runs
    main()
