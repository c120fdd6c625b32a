"""Parameter files at 32 GiB scale without 32 GiB of work: open time and memory, write speed.

    python bench/bench_params_io.py open  --file /tmp/fake.params [--num-ic 328]
    python bench/bench_params_io.py write --file /tmp/w.params --gib 8

``open`` makes (once) a sparse file with porep-32g-sized vectors — real points only in the
verifying key and where the sampled check looks, holes elsewhere, so it costs no disk — then
times ``read_header``, ``read_params_unchecked`` and ``read_params`` in fresh processes and
reports each one's peak RSS over a bare interpreter's. ``write`` streams a file of about that
many GiB through :class:`ParamsWriter` in 2^22-point chunks (what setup hands it), fsync
included, and deletes it.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from cuzk.curve import g1_generator, g1_mul, g2_generator, g2_mul
from cuzk.curve.encoding import g1_to_bytes, g2_to_bytes
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.params_io import (
    VECTOR_NAMES,
    ParamsWriter,
    params_file_size,
    sample_indices,
    vk_to_bytes,
)

#: Vector sizes of about a porep-32g key (h for the 2^27 domain): ~47 GB in all.
COUNTS = [(1 << 27) - 1, 130_000_000, 110_000_000, 40_000_000, 40_000_000]
SIZES = {"g1": 96, "g2": 192}


def _vk(num_ic: int) -> VerifyingKey:
    g1, g2 = g1_generator(), g2_generator()
    ic = tuple(g1_mul(g1, 13 + i) for i in range(num_ic))
    return VerifyingKey(g1_mul(g1, 3), g1_mul(g1, 5), g2_mul(g2, 5), g2_mul(g2, 7),
                        g1_mul(g1, 11), g2_mul(g2, 11), ic)  # fmt: skip


def make_sparse(path: Path, num_ic: int) -> None:
    vk = vk_to_bytes(_vk(num_ic))
    points = {"g1": g1_to_bytes(g1_mul(g1_generator(), 17), compressed=False),
              "g2": g2_to_bytes(g2_mul(g2_generator(), 17), compressed=False)}  # fmt: skip
    with open(path, "wb") as f:
        pos = f.write(vk)
        for (_, group), n in zip(VECTOR_NAMES, COUNTS, strict=True):
            f.seek(pos)
            pos += f.write(struct.pack(">I", n))
            for i in sample_indices(n):
                f.seek(pos + int(i) * SIZES[group])
                f.write(points[group])
            pos += n * SIZES[group]
        f.truncate(pos)
    assert pos == params_file_size(num_ic, COUNTS)


_PROBE = """
import resource, sys, time
from cuzk.groth16.params_io import read_header, read_params, read_params_unchecked
readers = {"header": read_header, "unchecked": read_params_unchecked, "sampled": read_params}
fn = readers[sys.argv[1]]
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter(); fn(sys.argv[2]); t = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(t, (r1 - r0) * 1024)
"""


def cmd_open(args: argparse.Namespace) -> dict:
    if not args.file.exists():
        make_sparse(args.file, args.num_ic)
    result: dict = {"file_bytes": args.file.stat().st_size, "num_ic": args.num_ic}
    for kind in ("header", "unchecked", "sampled"):
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, "-c", _PROBE, kind, str(args.file)],
                                 check=True, capture_output=True, text=True).stdout  # fmt: skip
            t, rss = out.split()
            runs.append((float(t), int(rss)))
        best = min(runs)
        result[kind] = {"ms": round(best[0] * 1e3, 2), "rss_growth_mib": round(best[1] / 2**20, 2)}
    t0 = time.perf_counter()
    subprocess.run(["cuzk", "info", str(args.file)], check=True, capture_output=True)
    result["cuzk_info_wall_s"] = round(time.perf_counter() - t0, 3)
    return result


def cmd_write(args: argparse.Namespace) -> dict:
    vk = _vk(328)
    chunk_points = 1 << 22
    # Vector sizes in the porep proportions, scaled to about --gib GiB.
    scale = args.gib * 2**30 / params_file_size(0, COUNTS)
    counts = [int(n * scale) for n in COUNTS]
    rng = np.random.default_rng(1)
    chunks = {g: rng.integers(0, 256, (chunk_points, s), dtype=np.uint8) for g, s in SIZES.items()}
    t0 = time.perf_counter()
    with ParamsWriter(args.file, vk, counts) as w:
        for (_, group), n in zip(VECTOR_NAMES, counts, strict=True):
            for lo in range(0, n, chunk_points):
                w.write(chunks[group][: min(chunk_points, n - lo)])
        w.commit()
    seconds = time.perf_counter() - t0
    size = args.file.stat().st_size
    args.file.unlink()
    return {"bytes": size, "seconds": round(seconds, 2), "gb_per_s": round(size / seconds / 1e9, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=["open", "write"])
    ap.add_argument("--file", type=Path, required=True)
    ap.add_argument("--num-ic", type=int, default=328, help="328: porep-32g; 25840: wpost-32g")
    ap.add_argument("--gib", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps((cmd_open if args.what == "open" else cmd_write)(args), indent=1))
    os.sync()


if __name__ == "__main__":
    main()
