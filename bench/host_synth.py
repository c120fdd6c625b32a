"""Host core-seconds of synthesizing a sample of a 32 GiB partition's block views.

Usage: NUMBA_NUM_THREADS=1 python bench/host_synth.py CIRCUIT VANILLA off|cpu|all BLOCKS [prof]
(VANILLA from ``cuzk gen-vanilla window-post|snap --sector-size 32GiB --virtual``; one numba
thread, as in a synthesis pool worker). Prints per-block core time and its extrapolation.
"""

import resource
import sys
import time

from cuzk.circuits.catalogue import open_statement
from cuzk.r1cs import SynthesisOptions
from cuzk.r1cs.blocks import view_witness
from cuzk.r1cs.deferred import DeferredAux

cid, path, mode, nblocks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
prof = len(sys.argv) > 5 and sys.argv[5] == "prof"
payload = open(path, "rb").read()
t0 = time.perf_counter()
st = open_statement(cid, payload=payload)
c = st.circuit(0)
print(f"open+circuit {time.perf_counter() - t0:.2f}s blocks={c.block_count()}", flush=True)
opts = {
    "off": SynthesisOptions(),
    "cpu": SynthesisOptions(defer_bit_programs=True),
    "all": SynthesisOptions(defer_bit_programs=True, defer_poseidon=True),
}[mode]
# warm: first use checks + numba compile
view_witness(c, (0,), opts)
view_witness(c, (1,), opts)


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


blocks = tuple(range(2, 2 + nblocks))
c0, w0 = cpu(), time.perf_counter()
if prof:
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
header = view_witness(c, (), opts)
ch, wh = cpu(), time.perf_counter()
print(f"header: cpu={ch - c0:.2f}s aux={len(header[1])}", flush=True)
piece = view_witness(c, blocks, opts)
if prof:
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)
c1, w1 = cpu(), time.perf_counter()
aux = piece[1]
host = len(aux.host) if isinstance(aux, DeferredAux) else len(aux)
n = len(aux)
per = (c1 - ch) / nblocks
print(
    f"{cid} mode={mode} blocks={nblocks} cpu={c1 - c0:.2f}s wall={w1 - w0:.2f}s "
    f"per_block={per * 1e3:.1f}ms "
    f"aux={n} host_values={host} values/s/core={n / (c1 - c0) / 1e6:.2f}M "
    f"extrapolated_core_s={per * c.block_count():.0f} "
    f"maxrss={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f}GB"
)
