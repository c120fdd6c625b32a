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
stay resident in the order L, A, B₁, B₂, H while they fit, and the rest stream. On the H200's
55 GB/s bus the whole rule is worth little (porep-32g, two workers: L and A resident at 48 GiB
saved 0.014 s of GPU a partition over all five streamed, B₁ and B₂ at 32 GiB 0.006 s): the
other MSM lane fills the waits. It is the slower buses of the cards that run capped (PCIe 4.0,
≈ 25 GB/s: L's or A's upload ≈ 0.5 s against ≈ 0.15 s of work) that it is for. Under a cap a
resident MSM still runs in bounded passes, so residency never buys the uncapped one-pass MSM.

The shape's matrices stay before any vector: a partition reads them four times (A, B, and C
twice under a cap), about 7 GB of transfers for porep-32g's 5.5 GB, and their products are
too short to hide an upload. They stream too (:meth:`cuzk.backend.base.Backend.stream_shape`,
two slots of :data:`MATRIX_BLOCK_BYTES`) only when the points' buffers would otherwise shrink
below :data:`MATRIX_STREAM_BELOW`, which costs more (porep-32g: on devices of less than about
30 GB, where one partition's working set leaves less than 7.5 GB for the key).
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
#: Bytes of each of the two device slots streamed matrices pass through: porep-32g's 1.8 GB
#: matrices in 7–8 blocks each, a block's upload ≈ 5 ms at 55 GB/s.
MATRIX_BLOCK_BYTES = 256 << 20
#: Points' stream buffers smaller than this make a plan stream the shape's matrices as well:
#: more passes per MSM cost more than the matrices' transfers. Measured on porep-32g (H200):
#: 0.4 GiB buffers beside resident matrices, 2.47 s of GPU per partition; 0.9 GiB buffers with
#: the matrices streamed, 2.36 s; 1 GiB buffers beside resident matrices, 2.19 s.
MATRIX_STREAM_BELOW = STREAM_BUFFER_BYTES
#: The name a plan's ``streamed`` gives the shape's matrices.
MATRICES = "matrices"
#: What a key of unknown per-vector sizes (a snarkjs key before it is prepared) is planned as:
#: one block, all resident or all streamed.
WHOLE = "all"


@dataclass(frozen=True)
class KeyPlan:
    """How one key sits on one device."""

    streamed: frozenset[str]  # names from VECTORS (or WHOLE), and MATRICES, in host memory
    stream_bytes: int  # bytes of each of the two device buffers (0: nothing streams)
    device_bytes: int  # resident points + the shape's matrices (or slots) + the two buffers
    host_bytes: int  # page-locked host memory of what streams
    matrix_bytes: int = 0  # of device_bytes: the shape's matrices, or their two slots
    block_bytes: int = 0  # bytes of each matrix slot when the matrices stream

    def streams(self, name: str) -> bool:
        return name in self.streamed or (WHOLE in self.streamed and name != MATRICES)


def streamed_matrix_bytes(shape_bytes: int) -> int:
    """Device bytes of a shape's matrices when they stream: two slots (no more than the
    matrices themselves, for a small shape)."""
    return min(shape_bytes, 2 * MATRIX_BLOCK_BYTES)


def min_device_bytes(vector_bytes: Mapping[str, int], shape_bytes: int) -> int:
    """The least a key can take on a device: its shape's matrices streamed through their two
    slots, and two point buffers of the smallest size a plan shrinks them to."""
    largest = max(vector_bytes.values(), default=0)
    return streamed_matrix_bytes(shape_bytes) + 2 * min(MIN_STREAM_BUFFER_BYTES, largest)


def plan_key(vector_bytes: Mapping[str, int], shape_bytes: int, room: int) -> KeyPlan | None:
    """The plan for a key of these vectors (bytes by name) and shape matrices on a device
    with ``room`` bytes for it: everything resident when it fits, else the buffers and as
    many vectors as fit in :data:`RESIDENT_FIRST` order, the matrices streamed too when the
    buffers would be smaller than :data:`MATRIX_STREAM_BELOW`. None when even the slots and
    the smallest buffers do not fit."""
    total = sum(vector_bytes.values()) + shape_bytes
    if total <= room:
        return KeyPlan(frozenset(), 0, total, 0, shape_bytes)
    largest = max(vector_bytes.values(), default=0)
    matrices, block, host = shape_bytes, 0, 0
    if (room - shape_bytes) // 2 < min(MATRIX_STREAM_BELOW, largest):
        matrices = streamed_matrix_bytes(shape_bytes)
        if matrices < shape_bytes:
            block, host = matrices // 2, shape_bytes
        else:  # two slots would take no less than the matrices: keep them
            matrices = shape_bytes
    buffer = min(STREAM_BUFFER_BYTES, largest, (room - matrices) // 2)
    if buffer < min(MIN_STREAM_BUFFER_BYTES, largest) or buffer <= 0:
        return None
    left = room - matrices - 2 * buffer
    resident = set()
    for name in sorted(vector_bytes, key=_residency_rank):
        if vector_bytes[name] <= left:
            resident.add(name)
            left -= vector_bytes[name]
    streamed = frozenset(vector_bytes) - resident
    kept = sum(vector_bytes[n] for n in resident)
    host += sum(vector_bytes[n] for n in streamed)
    if block:
        streamed |= {MATRICES}
    return KeyPlan(streamed, buffer, kept + matrices + 2 * buffer, host, matrices, block)


def _residency_rank(name: str) -> int:
    return RESIDENT_FIRST.index(name) if name in RESIDENT_FIRST else len(RESIDENT_FIRST)
