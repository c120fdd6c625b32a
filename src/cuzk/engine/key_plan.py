"""Which of a key's point vectors stay in a device's memory and which stream from the host.

A key larger than what a device keeps for keys is not refused: the vectors that do not fit stay
in page-locked host memory (loaded once, counted in the host budget) and every MSM over them
streams them through two device buffers (:meth:`cuzk.backend.base.Backend.preload`'s
``stream_bytes``), the upload of one pass overlapping the bucket work of the last.

The rule — by the time residency saves per byte: a streamed vector costs its upload on every
partition, but only the part of the upload its own bucket work does not hide. The MSMs of L and
A have mostly 0/1 scalars (a PoRep partition's are 89 % bits: batch additions and a short tail),
so they finish before their points have crossed the bus (on the H200: 0.13–0.16 s of work
against 0.23 s of upload at 55 GB/s; on PCIe 4.0, 0.5 s): each of their bytes kept resident
saves time. B₁'s and B₂'s tails and the dense H take longer than their uploads (B₂ 0.60 s for
6.4 GB, H 1.3 s for 12.9 GB): streamed, their upload hides under their own work. So vectors
stay resident in the order L, A, B₁, B₂, H while they fit, and the rest stream. The shape's
matrices always stay (the a/b/c kernels read them at random).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: The vectors of a key, in :attr:`cuzk.groth16.keys.Parameters.vectors`' order.
VECTORS = ("h", "l", "a", "b_g1", "b_g2")
#: Which vectors stay on the device first (see the module docstring).
RESIDENT_FIRST = ("l", "a", "b_g1", "b_g2", "h")
#: Bytes of each of the two device buffers a streamed vector passes through: 1 GiB is 11.2M
#: G1 points a pass, so the extra bucket reduction per pass costs a few percent of an MSM.
STREAM_BUFFER_BYTES = 1 << 30
#: The smallest buffer a plan shrinks to on a small device (thousands of points a pass).
MIN_STREAM_BUFFER_BYTES = 1 << 20
#: What a key of unknown per-vector sizes (a snarkjs key before it is prepared) is planned as:
#: one block, all resident or all streamed.
WHOLE = "all"


@dataclass(frozen=True)
class KeyPlan:
    """How one key sits on one device."""

    streamed: frozenset[str]  # names from VECTORS (or WHOLE) kept in host memory
    stream_bytes: int  # bytes of each of the two device buffers (0: nothing streams)
    device_bytes: int  # resident points + the shape's matrices + the two buffers
    host_bytes: int  # page-locked host memory of the streamed vectors

    def streams(self, name: str) -> bool:
        return name in self.streamed or WHOLE in self.streamed


def min_device_bytes(vector_bytes: Mapping[str, int], shape_bytes: int) -> int:
    """The least a key can take on a device: its shape's matrices and two stream buffers of
    the smallest size a plan shrinks them to."""
    largest = max(vector_bytes.values(), default=0)
    return shape_bytes + 2 * min(MIN_STREAM_BUFFER_BYTES, largest)


def plan_key(vector_bytes: Mapping[str, int], shape_bytes: int, room: int) -> KeyPlan | None:
    """The plan for a key of these vectors (bytes by name) and shape matrices on a device
    with ``room`` bytes for it: everything resident when it fits, else the buffers and as
    many vectors as fit in :data:`RESIDENT_FIRST` order. None when even the shape and the
    smallest buffers do not fit."""
    total = sum(vector_bytes.values()) + shape_bytes
    if total <= room:
        return KeyPlan(frozenset(), 0, total, 0)
    largest = max(vector_bytes.values(), default=0)
    buffer = min(STREAM_BUFFER_BYTES, largest, (room - shape_bytes) // 2)
    if buffer < min(MIN_STREAM_BUFFER_BYTES, largest) or buffer <= 0:
        return None
    left = room - shape_bytes - 2 * buffer
    resident = set()
    for name in sorted(vector_bytes, key=_residency_rank):
        if vector_bytes[name] <= left:
            resident.add(name)
            left -= vector_bytes[name]
    streamed = frozenset(vector_bytes) - resident
    kept = sum(vector_bytes[n] for n in resident)
    host = sum(vector_bytes[n] for n in streamed)
    return KeyPlan(streamed, buffer, kept + shape_bytes + 2 * buffer, host)


def _residency_rank(name: str) -> int:
    return RESIDENT_FIRST.index(name) if name in RESIDENT_FIRST else len(RESIDENT_FIRST)
