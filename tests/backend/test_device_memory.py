"""The capped allocator's rules on stand-in pools (no GPU): large requests in pools of their
size class, the cap over all pools together, cached blocks given back before a refusal.
The same allocator on a real device: tests/backend/test_cuda_msm.py::test_memory_limit_*."""

from __future__ import annotations

import random

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
    """A pool that caches freed blocks and reuses one of at least the request's size (the
    part of CuPy's behaviour that matters here), on one device of ``capacity`` bytes."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.used = 0
        self.free: list[int] = []
        self.device.pools.append(self)

    def malloc(self, size: int) -> Block:
        fits = [b for b in self.free if b >= size]
        if fits:
            got = min(fits)
            self.free.remove(got)
        else:
            if self.device.held() + size > self.device.capacity:
                raise DeviceFull(size, self.device.held())
            got = size
        self.used += got
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
