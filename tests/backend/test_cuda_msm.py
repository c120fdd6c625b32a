"""GpuMsm (CUDA Pippenger) against the CPU reference (py-arkworks MSM) on fresh random inputs.

Bases are random multiples of the generators written zcash-uncompressed to a temporary file at
a non-zero offset, with identity points, repeated points and negated points among them; scalars
are uniform with 0, 1 and r − 1 sprinkled in. Every test prints its seed.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.backend.base import PointSet
from cuzk.curve import g1_generator, g2_generator
from cuzk.curve.encoding import (
    g1_array_from_uncompressed,
    g1_to_bytes,
    g2_array_from_uncompressed,
    g2_to_bytes,
)
from cuzk.curve.msm import g1_fixed_base_batch, g1_msm, g2_fixed_base_batch, g2_msm
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R

try:
    import cupy

    _NDEV = cupy.cuda.runtime.getDeviceCount()
    _WHY = "" if _NDEV else "no CUDA device"
except Exception as e:  # ImportError, or CUDA missing/failing
    _NDEV, _WHY = 0, f"CuPy or a CUDA device is unavailable ({type(e).__name__}: {e})"

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_NDEV == 0, reason=_WHY)]

GROUPS = {
    "g1": (96, g1_generator, g1_fixed_base_batch, g1_array_from_uncompressed, g1_msm, g1_to_bytes),
    "g2": (192, g2_generator, g2_fixed_base_batch, g2_array_from_uncompressed, g2_msm, g2_to_bytes),
}
INFINITY_ROW = {"g1": bytes([0x40]) + bytes(95), "g2": bytes([0x40]) + bytes(191)}


@pytest.fixture(scope="module")
def gpu():
    from cuzk.backend.cuda.device import Gpu
    from cuzk.backend.cuda.msm import GpuMsm

    with GpuMsm(Gpu(0)) as g:
        yield g


def make_bases(group: str, n: int, rng: np.random.Generator, tmp_path, *, special: bool = True):
    """(PointSet, arkworks points): n random points; with ``special``, some identities,
    repeats and negations among them."""
    size, gen, batch, decode, _, _ = GROUPS[group]
    ks = [int.from_bytes(rng.bytes(32), "little") % R for _ in range(n)]
    if special and n >= 4:
        for i in rng.choice(n, size=max(1, n // 10), replace=False):
            j = int(rng.integers(n))
            ks[i] = ks[j] if rng.random() < 0.5 else (R - ks[j]) % R  # repeat or negate
    raw = bytearray(batch(gen(), b"".join(k.to_bytes(32, "little") for k in ks)))
    if special and n >= 2:
        for i in rng.choice(n, size=max(1, n // 20), replace=False):
            raw[i * size : (i + 1) * size] = INFINITY_ROW[group]
    offset = int(rng.integers(1, 200))
    path = tmp_path / f"{group}_{n}_{offset}.bin"
    path.write_bytes(bytes(rng.integers(0, 256, offset, dtype=np.uint8)) + bytes(raw) + b"tail")
    return PointSet(group, str(path), offset, n), decode(bytes(raw))


def make_scalars(n: int, rng: np.random.Generator, *, special: bool = True) -> np.ndarray:
    s = fr.random(n, rng)
    if special and n:
        for value in (0, 1, R - 1):
            idx = rng.choice(n, size=max(1, n // 16), replace=False)
            s[idx] = fr.from_int(value)
    return s


def skewed_scalars(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """All equal (one huge bucket per window), all r − 1, and all below 2^16 (most windows
    empty)."""
    return (
        np.repeat(fr.random(1, rng), n, axis=0),
        np.repeat(fr.from_int(R - 1)[None, :], n, axis=0),
        fr.from_ints(rng.integers(0, 1 << 16, n)),
    )


def reference(group: str, points, scalars) -> bytes:
    _, _, _, _, msm, enc = GROUPS[group]
    return enc(msm(points, fr.to_bytes_le(scalars)), compressed=False)


def encoded(group: str, point) -> bytes:
    return GROUPS[group][5](point, compressed=False)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 100, 1000, (1 << 12) + 5])
def test_msm_g1(gpu, rng, seed, tmp_path, n):
    bases, points = make_bases("g1", n, rng, tmp_path)
    scalars = make_scalars(n, rng)
    got = gpu.msm(bases, scalars).result()
    assert encoded("g1", got) == reference("g1", points, scalars), f"seed {seed}, n {n}"


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 100, 1000, (1 << 12) + 5])
def test_msm_g2(gpu, rng, seed, tmp_path, n):
    bases, points = make_bases("g2", n, rng, tmp_path)
    scalars = make_scalars(n, rng)
    got = gpu.msm(bases, scalars).result()
    assert encoded("g2", got) == reference("g2", points, scalars), f"seed {seed}, n {n}"


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("window", [2, 3, 4, 7, 11, 13, 16, 20])
def test_msm_windows(gpu, rng, seed, tmp_path, group, window):
    """Every window width (digits straddling limb boundaries, mostly empty buckets)."""
    n = 257
    bases, points = make_bases(group, n, rng, tmp_path)
    scalars = make_scalars(n, rng)
    got = gpu.msm(bases, scalars, window=window).result()
    assert encoded(group, got) == reference(group, points, scalars), f"seed {seed}, c {window}"


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("threads", [0, 64, 1 << 15])
def test_msm_reduction_plans(gpu, rng, seed, tmp_path, group, threads):
    """Each bucket-reduction plan (fixed 32-bucket groups, groups shrunk towards a thread
    target) gives the CPU's result; c = 13 makes a 4096-bucket, four-level reduction."""
    from cuzk.backend.cuda.msm import REDUCE_THREADS

    n = 1000
    bases, points = make_bases(group, n, rng, tmp_path)
    scalars = make_scalars(n, rng)
    gpu.reduce_threads = threads
    try:
        got = gpu.msm(bases, scalars, window=13).result()
    finally:
        gpu.reduce_threads = REDUCE_THREADS
    want = reference(group, points, scalars)
    assert encoded(group, got) == want, f"seed {seed}, reduce_threads {threads}"


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_msm_skewed_buckets(gpu, rng, seed, tmp_path, group):
    """All scalars equal (one huge bucket per window, split across many chunks), then all
    scalars r − 1, then scalars below 2^16 (most windows empty)."""
    n = 3000
    bases, points = make_bases(group, n, rng, tmp_path)
    for scalars in skewed_scalars(n, rng):
        got = gpu.msm(bases, scalars).result()
        assert encoded(group, got) == reference(group, points, scalars), f"seed {seed}"


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_split_msm(gpu, cuda_backend, rng, seed, tmp_path, group):
    """Host scalars (host plan), and device scalars planned on the device (the prover's
    staged path), against the CPU reference."""
    n = 1500
    bases, points = make_bases(group, n, rng, tmp_path)
    kinds = {
        "zeros": fr.zeros(n),
        "ones": fr.ones(n),
        "mixed": make_scalars(n, rng),
        "rare ones": fr.random(n, rng),
    }
    m = kinds["mixed"]
    m[rng.random(n) < 0.4] = fr.from_int(0)
    m[rng.random(n) < 0.4] = fr.from_int(1)
    kinds["rare ones"][:3] = fr.from_int(1)
    for name, scalars in kinds.items():
        got = gpu.split_msm(bases, scalars).result()
        want = reference(group, points, scalars)
        assert encoded(group, got) == want, f"seed {seed}, {name}"
        assert encoded(group, gpu.msm(bases, scalars).result()) == want, f"seed {seed}, {name}"
        on_device = cuda_backend.upload(scalars)  # the MSM waits for the upload by an event
        got = cuda_backend.split_msm(bases, on_device).result()
        assert encoded(group, got) == want, f"seed {seed}, {name}, device plan"


@pytest.mark.parametrize("group", ["g1", "g2"])
@pytest.mark.parametrize("window, copies", [(7, 2), (11, 3), (13, 20), (None, 4)])
def test_precomputed_bases(gpu, rng, seed, tmp_path, group, window, copies):
    """MSMs over shifted copies of the bases (GpuMsm.precompute) give the CPU's result: mixed
    scalars, one huge bucket per row (all scalars equal: K windows' entries in one bucket),
    the split MSM's gathered tail and ones, and dropping the copies again."""
    n = 1000
    bases, points = make_bases(group, n, rng, tmp_path)
    held = gpu.precompute(bases, copies, window=window)
    if window is None:  # the window choose_window makes for n points and 4 copies
        assert 2 <= held <= copies
    else:  # at most one copy per window
        assert held == min(copies, -(-256 // window))
    assert gpu.resident(bases).shape[0] == n
    for scalars in (make_scalars(n, rng), *skewed_scalars(n, rng)[:2]):
        want = reference(group, points, scalars)
        assert encoded(group, gpu.msm(bases, scalars).result()) == want, f"seed {seed}"
        got = gpu.split_msm(bases, scalars).result()
        assert encoded(group, got) == want, f"seed {seed}, split"
    with pytest.raises(BadInput, match="precomputed for window"):
        gpu.msm(bases, scalars, window=5 if window != 5 else 6)
    assert gpu.precompute(bases, 1) == 1
    assert encoded(group, gpu.msm(bases, scalars).result()) == want, f"seed {seed}, dropped"
    gpu.evict(bases)


def test_residency(gpu, rng, seed, tmp_path):
    """Explicit preload, device-resident scalars, evict and reload, length mismatch."""
    n = 333
    bases, points = make_bases("g1", n, rng, tmp_path)
    scalars = make_scalars(n, rng)
    want = reference("g1", points, scalars)
    gpu.preload(bases)
    gpu.preload(bases)
    with cupy.cuda.Device(gpu.device):
        d_scalars = cupy.asarray(scalars)
    assert encoded("g1", gpu.msm(bases, d_scalars).result()) == want, f"seed {seed}"
    gpu.evict(bases)
    assert encoded("g1", gpu.msm(bases, scalars).result()) == want, f"seed {seed}"
    with pytest.raises(BadInput):
        gpu.msm(bases, scalars[:-1])


def test_many_futures(gpu, rng, seed, tmp_path):
    """Several MSMs in flight at once resolve to their own results."""
    n = 200
    bases, points = make_bases("g1", n, rng, tmp_path)
    batches = [make_scalars(n, rng) for _ in range(4)]
    futures = [gpu.msm(bases, s) for s in batches]
    for s, f in zip(batches, futures, strict=True):
        assert encoded("g1", f.result()) == reference("g1", points, s), f"seed {seed}"


@pytest.mark.parametrize("defines", [{"ACC_MIN_BLOCKS": "4"}])
def test_msm_g1_kernel_variants(rng, seed, tmp_path, defines):
    """msm.cu's tuning switches at values other than the default (the register cap of the
    accumulation, what ``bench/gpu_msm.py --variant`` times) give the same sums, through
    ``GpuMsm.defines`` (so a benchmark that picks one measures a correct kernel); skewed
    buckets included."""
    from cuzk.backend.cuda.device import Gpu
    from cuzk.backend.cuda.msm import GpuMsm

    n = 3000
    bases, points = make_bases("g1", n, rng, tmp_path)
    with GpuMsm(Gpu(0)) as g:
        g.defines = dict(defines)
        for scalars in (make_scalars(n, rng), np.repeat(fr.random(1, rng), n, axis=0)):
            got = g.msm(bases, scalars).result()
            assert encoded("g1", got) == reference("g1", points, scalars), f"seed {seed}"


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_bad_flags_are_refused_at_load(gpu, rng, seed, tmp_path, group):
    """The device-side conversion reports the first point with impossible flags (here the
    compressed flag on an uncompressed point), by index, and keeps nothing resident."""
    n = 2000
    bases, _ = make_bases(group, n, rng, tmp_path, special=False)
    raw = bytearray(open(bases.path, "rb").read())
    bad = sorted(int(i) for i in rng.choice(n, 2, replace=False))
    for i in bad:
        raw[bases.offset + i * (96 if group == "g1" else 192)] |= 0x80
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(raw))
    broken = PointSet(group, str(path), bases.offset, n)
    with pytest.raises(BadInput, match=f"{group} point {bad[0]}: flags"):
        gpu.preload(broken)
    with pytest.raises(KeyError):
        gpu.resident(broken)


def test_two_lanes_run_side_by_side(rng, seed, tmp_path, monkeypatch):
    """With two lanes, plain MSMs run on the second while split MSMs run on the first, both
    over the same streamed bases (the second lane in passes of its own, smaller buffers):
    submitted together, interleaved, every sum equals the CPU's."""
    from cuzk.backend.cuda import msm as cuda_msm
    from cuzk.backend.cuda.device import Gpu

    n = 3000
    bases, points = make_bases("g1", n, rng, tmp_path)
    monkeypatch.setattr(cuda_msm, "DENSE_LANE_STREAM_BYTES", 400 * GROUPS["g1"][0])
    monkeypatch.setattr(cuda_msm, "WORKSPACE_MIN_BYTES", 0)  # device scalars: a workspace
    # The second lane's accumulation aims at its own chunk count: here few, long chunks
    # (each over many buckets), the first lane's many short ones.
    monkeypatch.setattr(cuda_msm, "DENSE_LANE_CHUNKS", 1 << 6)
    with cuda_msm.GpuMsm(Gpu(0), lanes=2) as gpu:
        gpu.preload(bases, stream_bytes=900 * GROUPS["g1"][0])
        assert gpu.streamed(bases)
        res = gpu._bases[bases.key]
        assert gpu._pass_size(res) == 900  # this (test) thread: the first lane's
        sizes = [f.result() for f in (ex.submit(gpu._pass_size, res) for ex in gpu._executors)]
        assert sizes == [900, 400]
        # The split MSMs' lane goes first (the device clamps the priorities to its range).
        first, dense = (lane.stream.priority for lane in gpu._lanes)
        assert first < dense == 0
        jobs = []
        for _ in range(3):
            mixed = make_scalars(n, rng)
            mixed[rng.random(n) < 0.5] = fr.from_int(1)
            dense = make_scalars(n, rng)
            jobs.append((mixed, gpu.split_msm_planned(bases, cupy.asarray(mixed))))
            jobs.append((dense, gpu.msm(bases, dense)))
            jobs.append((mixed, gpu.split_msm(bases, mixed)))
            # Device scalars on the second lane: its requests carved from a workspace of
            # their size class (here too small for all of them: the rest fall back).
            jobs.append((dense, gpu.msm(bases, cupy.asarray(dense))))
        for scalars, future in jobs:
            want = reference("g1", points, scalars)
            assert encoded("g1", future.result()) == want, f"seed {seed}"
        assert gpu.workspaces == 3 and gpu.workspace_overflow > 0
    with pytest.raises(BadInput):
        cuda_msm.GpuMsm(Gpu(0), lanes=3)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_streamed_bases(gpu, cuda_backend, rng, seed, tmp_path, group):
    """Bases kept in page-locked host memory and streamed through two device buffers (passes
    of 700 points, the last one short) give the CPU's result for plain and split MSMs, host
    and device plans; so do resident bases run in passes (``max_pass_points``)."""
    n = 3000
    bases, points = make_bases(group, n, rng, tmp_path)
    stream = 700 * GROUPS[group][0]
    gpu.preload(bases, stream_bytes=stream)
    assert gpu.streamed(bases)
    assert gpu.precompute(bases, 4) == 1  # no copies of streamed bases
    cuda_backend.preload(bases, stream_bytes=stream)
    mixed = make_scalars(n, rng)
    mixed[rng.random(n) < 0.5] = fr.from_int(1)
    for scalars in (make_scalars(n, rng), mixed, *skewed_scalars(n, rng)):
        want = reference(group, points, scalars)
        assert encoded(group, gpu.msm(bases, scalars).result()) == want, f"seed {seed}"
        assert encoded(group, gpu.split_msm(bases, scalars).result()) == want, f"seed {seed}"
        got = cuda_backend.split_msm(bases, cuda_backend.upload(scalars)).result()
        assert encoded(group, got) == want, f"seed {seed}, device plan"
        got = cuda_backend.msm(bases, cuda_backend.upload(scalars)).result()
        assert encoded(group, got) == want, f"seed {seed}, device scalars"
    gpu.evict(bases)
    cuda_backend.evict(bases)
    gpu.preload(bases)
    assert not gpu.streamed(bases)
    gpu.max_pass_points = 777
    try:
        for scalars in (mixed, make_scalars(n, rng)):
            want = reference(group, points, scalars)
            assert encoded(group, gpu.msm(bases, scalars).result()) == want, f"seed {seed}"
            got = gpu.split_msm(bases, scalars).result()
            assert encoded(group, got) == want, f"seed {seed}, passes"
    finally:
        gpu.max_pass_points = None
        gpu.evict(bases)


def test_streamed_bad_flags_are_refused(gpu, rng, seed, tmp_path):
    n = 50
    bases, _ = make_bases("g1", n, rng, tmp_path, special=False)
    raw = bytearray(open(bases.path, "rb").read())
    raw[bases.offset + 17 * 96] |= 0xA0  # compressed + sign flags in an uncompressed file
    open(bases.path, "wb").write(bytes(raw))
    with pytest.raises(BadInput, match="point 17"):
        gpu.preload(bases, stream_bytes=1 << 20)
    assert not gpu.streamed(bases)


def test_memory_limit_is_enforced():
    """A backend capped at 1 GiB above what the device holds now refuses a 2 GiB array with
    ResourceExhausted, but not one that fits once the blocks cached for another stream are
    released (and the cap is lifted when the backend closes)."""
    from cuzk.backend.cuda.backend import CAPPED_POOL_SLACK, CudaBackend
    from cuzk.backend.cuda.device import MODULE_HEADROOM
    from cuzk.backend.cuda.memory import capped_allocator
    from cuzk.errors import ResourceExhausted

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    free, total = cupy.cuda.runtime.memGetInfo()
    backend = CudaBackend(0, memory_limit=(total - free) + (1 << 30))
    try:
        after, _ = cupy.cuda.runtime.memGetInfo()
        info = backend.memory()
        assert info.limit == (total - free) + (1 << 30) and info.peak is not None
        assert info.usable == info.limit
        # The margin the engine plans beside is what the cap set aside (the device's use when
        # the cap was set, measured between the two queries above, and the modules'
        # headroom) and the slack.
        beside = MODULE_HEADROOM + CAPPED_POOL_SLACK
        assert (total - free) + beside <= info.margin <= (total - after) + beside, (
            info.margin,
            total - free,
            total - after,
        )
        small = backend.gpu.empty((256 << 20) // 32)  # well under the cap
        with pytest.raises(ResourceExhausted, match="out of memory"):
            backend.gpu.empty((2 << 30) // 32)
        del small
        # Blocks freed on another stream stay cached in that stream's arena and count
        # against the limit; an allocation that needs them gets them back, not a refusal.
        side = backend.gpu.side_stream()
        with side:
            cached = cupy.empty((700 << 20) // 8, dtype=cupy.uint64)
        side.synchronize()
        del cached
        alloc = capped_allocator(cupy)
        assert alloc.held() - alloc.used() >= 700 << 20  # cached, not given back
        got = backend.gpu.empty((700 << 20) // 32)  # 0.7 + 0.7 GiB > the 1 GiB cap
        assert got.nbytes == 700 << 20
    finally:
        backend.close()
        cupy.cuda.set_allocator(pool.malloc)


def test_memory_limit_is_not_lost_to_split_blocks():
    """Under a cap a smaller array kept from the memory a large vector freed does not keep
    the next large vector out: large requests are served by pools of their size class (one
    CuPy pool splits the cached block, then needs a new one past the cap — a porep-32g
    partition at 20 GiB was refused its 4 GiB vector with 3.6 GiB held in such pieces)."""
    from cuzk.backend.cuda.backend import CudaBackend
    from cuzk.errors import ResourceExhausted

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    free, total = cupy.cuda.runtime.memGetInfo()
    backend = CudaBackend(0, memory_limit=(total - free) + (3 << 30))  # 2.75 GiB for arrays
    rng = np.random.default_rng()
    try:
        rows = (1536 << 20) // 32  # 1.5 GiB
        big = backend.gpu.upload(rng.integers(0, 2**64, size=(rows, 4), dtype=np.uint64))
        del big
        piece = backend.gpu.zeros((128 << 20) // 32)  # kept
        small = backend.gpu.zeros(1 << 10)
        again = backend.gpu.empty(rows)  # 1.5 + 0.125 ≤ 2.75: served by the cached block
        again[:] = 7
        assert int(piece.sum()) == 0 and int(small.sum()) == 0 and int(again[-1, 3]) == 7
        with pytest.raises(ResourceExhausted, match="out of memory"):
            backend.gpu.empty(rows)  # 1.5 + 0.125 + 1.5 > 2.75
    finally:
        backend.close()
        cupy.cuda.set_allocator(pool.malloc)


def test_a_capped_device_never_passes_its_cap():
    """Random requests (1 MiB to 700 MiB, some kept, most freed) against a cap 2 GiB above the
    device's use: the device's memory, read at every block the pools take from it (a CuPy
    memory hook), never passes the cap, and the cap was pressed (some requests refused). The
    allocator once allocated a block past the cap and only then gave it back: a porep-32g run
    under 16 GiB measured 16.64 GiB."""
    from cupy.cuda.memory_hook import MemoryHook

    from cuzk.backend.cuda.backend import CudaBackend
    from cuzk.errors import ResourceExhausted

    class DevicePeak(MemoryHook):
        name = "device_peak"

        def __init__(self) -> None:
            self.peak = 0
            self.blocks = 0

        def alloc_postprocess(self, **kwargs) -> None:
            free, total = cupy.cuda.runtime.memGetInfo()
            self.peak = max(self.peak, total - free)
            self.blocks += 1

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    free, total = cupy.cuda.runtime.memGetInfo()
    limit = (total - free) + (2 << 30)
    backend = CudaBackend(0, memory_limit=limit)
    rng = np.random.default_rng()
    hook = DevicePeak()
    kept: list = []
    refused = 0
    try:
        with hook:
            for _ in range(300):
                top = int(rng.choice([1 << 20, 96 << 20, 300 << 20, 700 << 20]))
                nbytes = int(rng.integers(top // 2, top + 1))
                try:
                    kept.append(backend.gpu.empty(nbytes // 32))
                except ResourceExhausted:
                    refused += 1
                if len(kept) > rng.integers(1, 6):
                    kept.pop(int(rng.integers(len(kept))))
        kept.clear()
        assert refused and hook.blocks, (refused, hook.blocks)
        assert hook.peak <= limit, (hook.peak - limit) / (1 << 20)
    finally:
        kept.clear()
        backend.close()
        cupy.cuda.set_allocator(pool.malloc)


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_planned_split_msm_gathers_and_plans_each_pass(gpu, rng, seed, tmp_path, group):
    """The capped backend's split MSM (``split_msm_planned``): each pass uploads its slice of
    the host row indices (pageable here, through the staging chunks; page-locked in the
    backend), gathers its scalars from a longer vector through them (or reads them in place),
    classifies them and splits ones from the rest on the device. Resident bases in passes of
    777 points and bases streamed in passes of 700, with scalars mostly ones, mostly other
    values, or skewed, give the CPU's result."""
    n = 3000
    bases, points = make_bases(group, n, rng, tmp_path)
    z_len = 5000
    rows = np.sort(rng.choice(z_len, size=n, replace=False)).astype(np.uint32)
    mixed = make_scalars(n, rng)
    mixed[rng.random(n) < 0.7] = fr.from_int(1)  # ones common enough to split off
    cases = (make_scalars(n, rng), mixed, *skewed_scalars(n, rng))
    for streamed in (False, True):
        if streamed:
            gpu.preload(bases, stream_bytes=700 * GROUPS[group][0])
        else:
            gpu.preload(bases)
            gpu.max_pass_points = 777
        try:
            for scalars in cases:
                want = reference(group, points, scalars)
                z = fr.random(z_len, rng)  # the other rows are noise the gather must skip
                z[rows] = scalars
                got = gpu.split_msm_planned(bases, cupy.asarray(z), rows).result()
                assert encoded(group, got) == want, f"seed {seed}, rows, streamed={streamed}"
                got = gpu.split_msm_planned(bases, cupy.asarray(scalars)).result()
                assert encoded(group, got) == want, f"seed {seed}, in place, streamed={streamed}"
            with pytest.raises(BadInput):
                gpu.split_msm_planned(bases, cupy.asarray(z), rows[:-1])
        finally:
            gpu.max_pass_points = None
            gpu.evict(bases)
