"""The host memory budget: one number from which every large allocation is reserved.

Three kinds of reservation draw on it: ``srs`` (parameter points resident for the devices),
``shape`` (a circuit's pre-compiled constraint system) and ``partition`` (one partition's working
set). A partition's reservation has two parts released at different times: ``kernel`` (a, b, c,
the H pipeline's vectors and the MSM scalar copies — freed as soon as the kernels finish) and
``carry`` (the witness — freed when the proof is assembled). Releasing is idempotent per part, so
an error path can simply release everything it might hold.

The budget is pure accounting, used under the engine's lock. Waiting for room happens on the
engine's condition variable with a predicate loop, and every release is followed by a
notify_all under that same lock, so a waiter cannot miss the release it waits for.

Working-set estimates (measured with tracemalloc on synthetic:16384, CPU backend, m = 16384
domain, n = 16817 variables): synthesis peaks at ~200 bytes per variable (Python ints before
the bulk conversion) and keeps 32; start() → MSMs done peaks at ~290 bytes per domain element.
SRS residency on the CPU backend costs ~2.6× the points' file size (arkworks points held as
Python objects in the MSM workers; measured per vector: 1.9–3.7×).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from cuzk.errors import InternalError, ResourceExhausted

KINDS = ("srs", "shape", "partition")
SYNTH_BYTES_PER_VARIABLE = 200  # measured peak ~199
#: A GPU engine's witness on the host: Filecoin partitions are made in synthesis processes that
#: write 32-byte values into shared memory (wpost-32g holds 32 B per variable, peaks near 64
#: while the pieces are gathered; a deferred PoRep or SnapDeals witness keeps only 2–6 % of its
#: values on the host), synthetic ones in bulk numpy. 200 B here capped a porep-32g pipeline at
#: four partitions in flight on a 128 GiB host that measured 16 GB in use.
GPU_SYNTH_BYTES_PER_VARIABLE = 96
KERNEL_BYTES_PER_DOMAIN = 320  # measured peak ~288, rounded up
#: The kernel region's device memory per domain element on a GPU (one partition under the
#: compute lock, z staged apart): a, b, c (96 B, h made in place in their buffers), the A and B
#: scalars gathered from z (≤ 64 B), the split MSMs' plans (≈ 16 B as int64 when measured;
#: int32 since) and one whole MSM's sorted entries (52 B at 13 windows). Rounded up to what
#: session 14 measured the uncapped path with (porep-32g: 106.8 GiB at peak with two
#: partitions and the whole key resident).
GPU_KERNEL_BYTES_PER_DOMAIN = 320
#: Under a device memory cap the kernels hold less (:func:`capped_kernel_bytes`): the H
#: quotient in two domain buffers, and every split MSM gathering and planning its scalars pass by
#: pass (passes of at most 2^23 resident points or one 1 GiB stream buffer).
CAPPED_KERNEL_BYTES_PER_DOMAIN = 64  # two domain buffers: a then a·b − c then h; b then c
#: The rest under a cap, bounded whatever the circuit: the a·b = c check's slices (2^23 rows: 0.5
#: GiB; since the check became a random combination (cuzk.backend.cuda.abc_check) they are made only
#: to name a failing row, after the partition's MSMs: still counted, as the measured peak has not
#: been taken without them) beside one MSM pass on the MSM stream (its gathered scalars, plan and
#: sorted entries: at most 0.55 GiB above the pass's point buffers in session 17's trace of
#: porep-32g at 20 GiB, 1 GiB buffers), with 0.2 GiB to spare. The NTT's twiddles are two tables (32
#: MiB) under a cap (its 2 GiB table was what the 2 GiB counted before covered). Once h is made, the
#: H MSM's lane (cuzk.backend.cuda.msm, DENSE_LANE_STREAM_BYTES) runs beside the split MSMs in the
#: domain buffer h does not hold and this scratch.
CAPPED_KERNEL_SCRATCH = 1280 << 20


def kernel_bytes(domain_size: int, backend: str = "cpu", capped: bool = False) -> int:
    """One partition's kernel working set: host memory on the CPU backend, device memory on
    a GPU (where the staging area counts it); ``capped``: a GPU under a memory cap."""
    if backend == "cpu":
        return KERNEL_BYTES_PER_DOMAIN * domain_size
    if capped:
        return capped_kernel_bytes(domain_size)
    return GPU_KERNEL_BYTES_PER_DOMAIN * domain_size


def tail_kernel_bytes(domain_size: int, backend: str = "cpu") -> int:
    """Under a cap, what a partition's kernels still hold once H's MSM is done while split MSMs
    over the witness still run (their stream buffers belong to the key's plan): one pass's
    gathered scalars, plan and sorted entries, and the check's slices should it have to name a
    row, all inside :data:`CAPPED_KERNEL_SCRATCH`; never more than the whole working set.
    The staging area lends the rest to the next partition's staging
    (:meth:`cuzk.engine.staging.StagingArea.lend`)."""
    return min(kernel_bytes(domain_size, backend, capped=True), CAPPED_KERNEL_SCRATCH)


def capped_kernel_bytes(domain_size: int) -> int:
    """A GPU's kernel working set under a cap: two domain buffers while h is made (one after)
    and the scratch; the MSMs gather their scalars pass by pass, through row indices uploaded
    a pass at a time. porep-32g: 8 GiB + 1.25 GiB (session 15 counted 15.8 GiB, whole B
    scalars and int64 plans at every variable; session 16 12.1 then 10.4 GiB, per MSM with
    int32 plans, then planned pass by pass; session 17 9.25 GiB, the scratch as traced and no
    row indices kept on the device)."""
    return CAPPED_KERNEL_BYTES_PER_DOMAIN * domain_size + CAPPED_KERNEL_SCRATCH


#: Host bytes per file byte of points while a key is resident: the CPU backend's MSM workers
#: hold them as objects; a GPU holds them in VRAM (loading streams them through two 32 MB
#: page-locked chunks), so they cost the host nothing lasting.
SRS_RESIDENT_FACTOR = {"cpu": 3.0, "cuda": 0.0}
DEFAULT_MARGIN = 1 << 30
#: Device memory outside both the staging area and the parameters' key budget: the CUDA
#: context, module images and what CuPy's pool rounds up (a few hundred MB on the H200),
#: with room to spare.
DEVICE_MARGIN = 2 << 30


def partition_bytes(num_variables: int, domain_size: int, backend: str = "cpu") -> dict[str, int]:
    """The two-part host working set of one partition (see the module docstring). On a GPU the
    kernels' vectors live in VRAM — the device's staging area accounts for them — so only the
    witness weighs on the host (a 32 GiB partition's 2^27 domain would otherwise ask 43 GB of
    host memory it never uses), and less of it (:data:`GPU_SYNTH_BYTES_PER_VARIABLE`)."""
    on_cpu = backend == "cpu"
    return {
        "kernel": (KERNEL_BYTES_PER_DOMAIN if on_cpu else 0) * domain_size,
        "carry": (SYNTH_BYTES_PER_VARIABLE if on_cpu else GPU_SYNTH_BYTES_PER_VARIABLE)
        * num_variables,
    }


#: Entries per row of A, B and C together, rounded up from the densest circuit: PoSt measures
#: 9.1 (Poseidon), PoRep and SnapDeals 5.5 (SHA-256), synthetic 3.9. An upper bound is what a
#: budget wants before the shape is seen.
NNZ_PER_ROW_ESTIMATE = 10
#: Bytes per entry of a compact shape (cuzk.r1cs.shape): a 4-byte column and a coefficient id,
#: 2 bytes wide for the Filecoin circuits' 1,000–2,500 distinct coefficients.
SHAPE_ENTRY_BYTES = 6
#: What the prover derives from a resident shape and keeps with it: the column masks of A and B
#: (a byte per variable each) and their row-index arrays (at most 4 bytes per variable each).
SHAPE_DERIVED_BYTES_PER_VARIABLE = 10


def shape_bytes_estimate(num_variables: int, domain_size: int) -> int:
    """Before a shape is seen: 4-byte row pointers of three compact CSR matrices plus at most
    ~10 entries per row in all (porep-32g: 52 bytes per constraint measured, 82 estimated).
    Replaced by the exact size once the shape is loaded; a cached shape's files give the exact
    size up front."""
    rows = max(domain_size, num_variables)
    return (
        3 * 4 * (domain_size + 1)
        + SHAPE_ENTRY_BYTES * NNZ_PER_ROW_ESTIMATE * rows
        + SHAPE_DERIVED_BYTES_PER_VARIABLE * num_variables
    )


def detect_total(margin: int = DEFAULT_MARGIN, meminfo: str = "/proc/meminfo") -> int:
    """MemAvailable minus ``margin`` (the machine is shared with other processes, so what is
    available now is the honest ceiling, not MemTotal); falls back to sysconf."""
    available = None
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if available is None:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(0, available - margin)


@dataclass(eq=False)
class Reservation:
    """Bytes held by one owner, in named parts that may be released separately."""

    kind: str  # "srs", "shape" or "partition"
    owner: str  # what holds it, for status and error messages
    parts: dict[str, int] = field(default_factory=dict)  # part name → bytes still held

    @property
    def held(self) -> int:
        return sum(self.parts.values())


class MemoryBudget:
    """Reservations against a fixed total. Not thread-safe: the engine's lock guards it."""

    def __init__(self, total: int) -> None:
        if total <= 0:
            raise ResourceExhausted(f"the memory budget must be positive, got {total} bytes")
        self.total = total
        self._by_kind: Counter[str] = Counter()
        self._live: set[int] = set()  # ids of reservations still holding bytes

    @property
    def reserved(self) -> int:
        return sum(self._by_kind.values())

    @property
    def available(self) -> int:
        return self.total - self.reserved

    def by_kind(self) -> dict[str, int]:
        return {k: self._by_kind.get(k, 0) for k in KINDS}

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.available

    def check_can_fit(self, nbytes: int, what: str) -> None:
        """Refuse at once what could not fit even into an empty budget (never wait for it)."""
        if nbytes > self.total:
            raise ResourceExhausted(
                f"{what} needs {fmt_bytes(nbytes)} but the memory budget is "
                f"{fmt_bytes(self.total)}; it can never run with this configuration (raise "
                "engine.memory_budget, cuzk bench's --memory-budget; by default it is the host's "
                "available memory less engine.memory_margin)"
            )

    def reserve(self, kind: str, owner: str, parts: dict[str, int]) -> Reservation:
        """Take ``parts`` now; the caller has checked :meth:`fits` (InternalError otherwise)."""
        if kind not in KINDS:
            raise InternalError(f"unknown reservation kind {kind!r}")
        need = sum(parts.values())
        if any(v < 0 for v in parts.values()):
            raise InternalError(f"negative reservation for {owner}: {parts}")
        if not self.fits(need):
            raise InternalError(
                f"reservation of {fmt_bytes(need)} for {owner} exceeds the "
                f"{fmt_bytes(self.available)} available (admission must check first)"
            )
        res = Reservation(kind, owner, dict(parts))
        self._by_kind[kind] += need
        self._live.add(id(res))
        return res

    def resize(self, res: Reservation, part: str, nbytes: int) -> None:
        """Replace an estimate by the measured size. May briefly exceed the total: admission
        then waits until releases bring it back under."""
        old = res.parts.get(part, 0)
        res.parts[part] = nbytes
        self._by_kind[res.kind] += nbytes - old
        self._live.add(id(res))

    def release(self, res: Reservation | None, part: str | None = None) -> int:
        """Give back one part (or all parts); returns the bytes freed. Idempotent."""
        if res is None:
            return 0
        names = list(res.parts) if part is None else [part]
        freed = 0
        for name in names:
            freed += res.parts.pop(name, 0)
        self._by_kind[res.kind] -= freed
        if not res.parts:
            self._live.discard(id(res))
        return freed

    @property
    def live_reservations(self) -> int:
        """How many reservations still hold bytes (0 when the engine is idle and empty)."""
        return len(self._live)


def default_staging_bytes(device_total: int) -> int:
    """A device's staging area when not configured: half its memory (the other half holds
    resident keys, :func:`device_key_budget`)."""
    return device_total // 2


def device_key_budget(device_total: int, staging_total: int, margin: int = DEVICE_MARGIN) -> int:
    """Bytes of one device left for resident parameters: its memory (or its cap) less its
    staging area and ``margin`` (:data:`DEVICE_MARGIN` on a GPU; at least 1 byte: a budget
    must be positive, and a key that cannot fit is refused at submit with the reason)."""
    return max(1, device_total - staging_total - margin)


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
