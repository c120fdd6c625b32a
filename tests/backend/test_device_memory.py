"""The capped allocator's rules on stand-in pools (no GPU): large requests in pools of their
size class, the cap over all pools together and checked before the device is asked, cached
blocks given back before a refusal.
The same allocator on a real device: tests/backend/test_cuda_msm.py::test_memory_limit_*."""

from __future__ import annotations

import random
import sys
import threading

import pytest

from cuzk.backend.cuda.memory import (
    CLASSES_PER_OCTAVE,
    LARGE_BYTES,
    CappedAllocator,
    size_class,
)


class DeviceFull(Exception):
    def __init__(self, size: int, held: int, limit: int = 0) -> None:
        super().__init__(f"out of memory allocating {size} ({held} held, limit {limit})")


class Block:
    def __init__(self, pool: FakePool, size: int) -> None:
        self.pool, self.size = pool, size

    def __del__(self) -> None:
        self.pool.used -= self.size
        self.pool.free.append(self.size)


class FakePool:
    """A pool that caches freed blocks and reuses one of at least the request's size, and
    refuses to grow past its own limit (0: none) before asking the device (the parts of
    CuPy's behaviour that matter here), on one device of ``capacity`` bytes."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.used = 0
        self.free: list[int] = []
        self.limit = 0
        self.device.pools.append(self)

    def set_limit(self, size: int = 0) -> None:
        self.limit = size

    def get_limit(self) -> int:
        return self.limit

    def malloc(self, size: int) -> Block:
        with self.device.lock:
            fits = [b for b in self.free if b >= size]
            if fits:
                got = min(fits)
                self.free.remove(got)
            else:
                if self.limit and self.total_bytes() + size > self.limit:
                    raise DeviceFull(size, self.total_bytes(), self.limit)
                if self.device.held() + size > self.device.capacity:
                    raise DeviceFull(size, self.device.held())
                got = size
            self.used += got
            self.device.peak = max(self.device.peak, self.device.held())
        return Block(self, got)

    def total_bytes(self) -> int:
        return self.used + sum(self.free)

    def used_bytes(self) -> int:
        return self.used

    def free_all_blocks(self) -> None:
        self.device.released += bool(self.free)
        self.free.clear()


class Device:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.pools: list[FakePool] = []
        self.released = 0
        self.peak = 0  # the most the pools ever held on the device
        self.lock = threading.RLock()

    def held(self) -> int:
        return sum(p.total_bytes() for p in self.pools)


GiB = 1 << 30


def _allocator(capacity: int = 64 * GiB) -> tuple[CappedAllocator, Device]:
    dev = Device(capacity)
    return CappedAllocator(FakePool(dev), lambda: FakePool(dev), DeviceFull, lambda: 0), dev


def test_size_classes_round_up_by_less_than_a_sixteenth():
    rng = random.Random()
    drawn = [rng.randrange(1, 1 << 40) for _ in range(500)]
    for n in [LARGE_BYTES, 3 << 30, 130170221 * 32, *drawn]:
        c = size_class(n)
        assert n <= c < n + n / CLASSES_PER_OCTAVE
        assert size_class(c) == c  # a class is its own class
    assert size_class(130170221 * 32) == size_class(1 << 32) == 1 << 32  # z and a domain vector


def test_large_requests_never_share_a_block_with_another_size():
    alloc, dev = _allocator()
    big = alloc(4 * GiB)
    del big  # cached in the 4 GiB class
    piece = alloc(LARGE_BYTES)  # would be carved from the cached 4 GiB block in one pool
    small = alloc(1 << 20)
    again = alloc(4 * GiB)  # gets the cached block back: nothing new is held
    assert dev.held() == 4 * GiB + LARGE_BYTES + (1 << 20)
    assert {p.total_bytes() for p in dev.pools} >= {4 * GiB, LARGE_BYTES, 1 << 20}
    del piece, small, again


def test_the_cap_counts_every_pool_and_releases_caches_before_refusing():
    alloc, dev = _allocator()
    alloc.limit(0, 6 * GiB)
    a = alloc(2 * GiB)
    cached = alloc(3 * GiB)
    del cached  # 3 GiB cached in its class, counted as held
    b = alloc(5 * GiB // 2)  # another class: fits once the cache goes
    assert dev.released and alloc.held() == 2 * GiB + 5 * GiB // 2  # the 3 GiB went back
    with pytest.raises(DeviceFull, match="limit"):
        alloc(2 * GiB)  # 2 + 2.5 + 2 > 6: refused, and nothing kept for it
    assert alloc.held() == alloc.used() == 2 * GiB + 5 * GiB // 2
    assert dev.peak <= 6 * GiB  # refused before the device was asked, never after
    del b
    c = alloc(2 * GiB)  # what b freed is enough
    assert alloc.used() == 4 * GiB
    del a, c


def test_a_full_device_gives_back_the_caches_then_refuses():
    alloc, dev = _allocator(capacity=5 * GiB)
    cached = alloc(2 * GiB)
    del cached
    kept = alloc(3 * GiB)
    got = alloc(1 * GiB + (1 << 29))  # the device is full until the 2 GiB cache goes
    assert dev.released and dev.held() == 3 * GiB + (3 << 29)
    with pytest.raises(DeviceFull):
        alloc(1 * GiB)
    del kept, got


def test_limits_are_per_device_and_can_be_lifted():
    alloc, _ = _allocator()
    alloc.limit(1, 1 * GiB)  # another device's cap does not bind device 0
    x = alloc(2 * GiB)
    alloc.limit(0, 1 * GiB)
    with pytest.raises(DeviceFull):
        alloc(2 * GiB)
    alloc.limit(0, None)
    y = alloc(2 * GiB)
    del x, y


def test_the_device_never_holds_more_than_the_cap_under_concurrent_requests():
    """Threads drawing random sizes (small and large, kept a while, then freed) under a cap:
    the device's pools never hold more than the cap, not even for a moment, and a request is
    refused only when it could not fit beside what is in use."""
    alloc, dev = _allocator()
    cap = 5 * GiB
    alloc.limit(0, cap)
    seed = random.randrange(1 << 30)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker(k: int) -> None:
        rng = random.Random(seed + k)
        kept: list[Block] = []
        start.wait()
        try:
            for _ in range(300):
                size = rng.choice([1 << 20, 96 << 20, LARGE_BYTES, 1 * GiB, 3 * GiB // 2])
                try:
                    kept.append(alloc(rng.randrange(size // 2, size + 1)))
                except DeviceFull:
                    pass  # near the cap; the next test checks each refusal was due
                if len(kept) > rng.randrange(1, 4):
                    kept.pop(rng.randrange(len(kept)))
        except BaseException as e:  # surfaced below with the seed
            errors.append(e)
        finally:
            kept.clear()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads' requests interleave
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert not errors, (seed, errors)
    assert dev.peak <= cap, (seed, dev.peak)
    assert dev.peak > cap * 3 // 4, seed  # the draw did press on the cap


def test_a_request_is_refused_exactly_when_it_cannot_fit_beside_what_is_in_use():
    alloc, dev = _allocator()
    cap = 4 * GiB
    alloc.limit(0, cap)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kept: list[Block] = []
    refused = served = 0
    for _ in range(400):
        size = rng.randrange(1, 3 * GiB // 2)
        need = size_class(size) if size >= LARGE_BYTES else size
        used = alloc.used()
        try:
            kept.append(alloc(size))
            assert used + need <= cap, (seed, used, size)
            served += 1
        except DeviceFull:
            assert used + need > cap, (seed, used, size)
            refused += 1
        if len(kept) > rng.randrange(1, 5):
            kept.pop(rng.randrange(len(kept)))
        assert dev.held() <= cap, seed
    assert refused and served, seed


def test_a_lifted_cap_lifts_the_pools_own_limits():
    alloc, dev = _allocator()
    alloc.limit(0, 1 * GiB)
    small = alloc(1 << 20)
    with pytest.raises(DeviceFull):
        alloc(2 * GiB)
    alloc.limit(0, None)
    assert not any(p.get_limit() for p in dev.pools)  # CuPy's default pool included
    big = alloc(2 * GiB)  # the class pool and the small pool are free to grow again
    more = alloc(200 << 20)
    assert dev.held() >= 2 * GiB + (200 << 20)
    del small, big, more


def test_near_the_cap_only_the_largest_caches_go_back():
    alloc, dev = _allocator()
    alloc.limit(0, 6 * GiB)
    kept = alloc(2 * GiB)
    one, two = alloc(1 * GiB), alloc(2 * GiB + (1 << 28))
    del one, two  # 1 GiB and 2.25 GiB cached, in two classes
    got = alloc(3 * GiB)  # 5.25 held: the 2.25 GiB cache is enough to give back
    assert dev.held() == 2 * GiB + 1 * GiB + 3 * GiB and dev.released == 1
    assert alloc.give_backs == 1  # counted (and traced) as the device-wide wait it is
    assert alloc.give_backs_by_device == {0: 1}  # and for the device it happened on
    again = alloc(1 * GiB)  # served from the 1 GiB cache that stayed
    assert dev.held() == 6 * GiB and dev.peak <= 6 * GiB
    del kept, got, again


def test_a_give_back_waits_for_the_device_without_holding_up_other_requests():
    """A request that must give cached blocks back first waits for the device (``drain``)
    outside the capped turn: another thread's request is served meanwhile. Requests served
    from cache or new room never wait for the device."""
    dev = Device(64 * GiB)
    served_meanwhile: list[bool] = []
    drains = 0

    def drain() -> None:
        nonlocal drains
        drains += 1
        other = threading.Thread(target=lambda: served_meanwhile.append(bool(alloc(GiB // 2))))
        other.start()
        other.join(timeout=10)
        served_meanwhile.append(not other.is_alive())

    alloc = CappedAllocator(
        FakePool(dev), lambda: FakePool(dev), DeviceFull, lambda: 0, None, drain
    )
    alloc.limit(0, 7 * GiB)
    kept = alloc(2 * GiB)
    cached = alloc(3 * GiB)
    del cached
    small = alloc(1 * GiB)  # new room under the cap: no wait for the device
    assert drains == 0
    got = alloc(5 * GiB // 2)  # 6 held: the 3 GiB cache must go back first
    assert drains == 1 and served_meanwhile == [True, True]  # 0.5 GiB served in the wait
    assert alloc.give_backs == 1 and dev.peak <= 7 * GiB
    assert alloc.used() == 2 * GiB + 1 * GiB + 5 * GiB // 2  # (the other block is gone)
    del kept, small, got
