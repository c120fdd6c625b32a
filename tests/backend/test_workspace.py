"""The workspace's carving rules on a stand-in block (no GPU): pieces aligned and first-fit,
given back from any thread and coalesced, what does not fit served by the fallback. The same
workspace on a device: tests/backend/test_cuda_msm.py::test_two_lanes_run_side_by_side."""

from __future__ import annotations

import gc
import random
import threading

from cuzk.backend.cuda.workspace import ALIGN, Workspace


class Block:
    ptr = 1 << 40


class Piece:
    """What CuPy's MemoryPointer over UnownedMemory keeps: the address and the owner."""

    def __init__(self, ptr: int, size: int, owner: object) -> None:
        self.ptr, self.size, self.owner = ptr, size, owner


def _workspace(size: int) -> tuple[Workspace, list[int]]:
    fell_back: list[int] = []

    def fallback(n: int) -> Piece:
        fell_back.append(n)
        return Piece(0, n, None)

    return Workspace(Block(), size, fallback, Piece), fell_back


def test_pieces_are_aligned_disjoint_and_come_back_whole():
    rng = random.Random()
    size = 1 << 24
    ws, fell_back = _workspace(size)
    held: list[Piece] = []
    for _ in range(2000):
        if held and rng.random() < 0.45:
            held.pop(rng.randrange(len(held)))  # dropped in any order
        else:
            held.append(ws.malloc(rng.randrange(1, 1 << 20)))
        inside = sorted((p.ptr, p.ptr + p.size) for p in held if p.owner is not None)
        assert all(a % ALIGN == 0 and Block.ptr <= a and b <= Block.ptr + size for a, b in inside)
        assert all(b <= c for (_, b), (c, _) in zip(inside, inside[1:], strict=False))
        used = sum(b - a for a, b in inside)
        assert ws.free_bytes() == size - used
    assert fell_back and ws.overflow == len(fell_back)  # some requests found no room
    held.clear()
    gc.collect()
    assert ws.free_bytes() == size
    whole = ws.malloc(size)  # coalesced back into one range
    assert whole.ptr == Block.ptr and ws.overflow == len(fell_back)


def test_first_fit_reuses_the_lowest_hole_and_a_piece_may_be_dropped_elsewhere():
    ws, fell_back = _workspace(8 * ALIGN)
    a, b, c = ws.malloc(ALIGN), ws.malloc(3 * ALIGN), ws.malloc(1)
    assert (a.ptr, b.ptr, c.ptr) == (Block.ptr, Block.ptr + ALIGN, Block.ptr + 4 * ALIGN)
    dropper = threading.Thread(target=lambda: held.pop())
    held = [b]
    del b
    dropper.start()
    dropper.join()
    d = ws.malloc(2 * ALIGN)  # the lowest hole that fits: b's
    assert d.ptr == Block.ptr + ALIGN
    e = ws.malloc(4 * ALIGN)  # 1 free in b's hole, 3 at the end: neither fits
    assert e.owner is None and fell_back == [4 * ALIGN]
    del a, c, d, e
    gc.collect()
    assert ws.free_bytes() == 8 * ALIGN
