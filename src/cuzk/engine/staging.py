"""Per-device staging: the memory a partition holds between staging and its kernels' end, and
the pinned host buffers its inputs are gathered into.

The reference engine tried a second per-device lock for uploads and abandoned it: staged
buffers piled up until VRAM ran out, and device-global calls inside the locks serialised them.
Here staging is safe by construction:

* A partition reserves its bytes from its device's :class:`StagingArea` *before* taking the
  staging lock, and holds them until its kernels end — so the compute lock's holder never
  waits for memory. Its staged inputs go back a little earlier, once the MSMs over the
  witness are done and only H's still runs (:meth:`StagingArea.release_staged`): nothing
  reads z then, and the next partition stages in its place. The reservation has two parts:
  the staged inputs (the device copy of the assignment and the MSM scalars, and any pinned
  host buffers they were gathered into), held by every staged partition, and the kernels'
  working set (a, b, c, the H pipeline, MSM scratch), which exists only under the device's
  compute lock — one partition at a time — so the area counts it once, as the largest among
  its holders. Counting it per staged partition (as this area first did) let a 32 GiB PoRep
  partition (12.5 GB staged, 43 GB of kernels, a 75 GB area) stage only after the previous
  one's kernels ended: the device idled for the whole staging step between partitions.
* Under a cap a holder lends what its H quotient held once H's MSM ends before the MSMs over
  the witness (:meth:`StagingArea.lend`): from then on it holds its staged inputs and a tail
  of split-MSM scratch, nothing else, and the next partition may stage beside them. The
  working set is counted once as the larger of the holders' kernel sets and the lenders'
  tails: a lender is the compute lock's holder, so no other partition's kernels run until its
  own have ended and its tail is gone. Measured before (porep-32g at 16 GiB, session 33): A
  ended ≈ 0.11 s after H, and the next z waited for it with 8 GiB of the device free.
* Waiters are served in arrival order: the worker that just released its bytes and comes
  straight back for more cannot overtake one that has been waiting (it holds the GIL and
  wins every race otherwise; measured: one worker's partition waited 13 s while the other
  ran seven).
* One lock order: reservation → staging lock → (released) → compute lock. No thread ever holds
  the compute lock while waiting for the staging lock or for a reservation, so no cycle exists.
* A request whose partition could never fit the area is refused at submit.

:class:`PinnedPool` recycles page-locked host buffers (``cudaHostAlloc`` of a few hundred MB
costs tens of milliseconds; pageable uploads run at 7 instead of 55 GB/s on the H200 host).
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, deque
from collections.abc import Callable

import numpy as np

from cuzk.errors import ResourceExhausted

#: VRAM a device keeps free beyond the estimates before a second partition may stage beside
#: one already holding: the estimates undercount what a 32 GiB partition really takes (CuPy's
#: pool, MSM scratch of full-width scalars: wpost-32g peaked 22 GiB above them on the H200).
SECOND_STAGE_HEADROOM = 24 << 30


class StagingArea:
    """Bytes of one device that staged-but-unfinished partitions may hold: the sum of their
    staged inputs plus the largest kernel working set among them.

    With ``device_total`` (a GPU's memory) a partition stages beside others only if the
    device keeps :data:`SECOND_STAGE_HEADROOM` free after the resident key (the caller's
    ``resident_bytes``), every staged input and one kernel working set: a key that takes most
    of the device (wpost-32g: 61 GB of 141) then stages one partition at a time, as before
    the kernel set was counted once. A partition alone always fits what the budget allows."""

    def __init__(self, device: int, total: int, device_total: int | None = None) -> None:
        if total <= 0:
            raise ResourceExhausted(f"device {device}: the staging budget must be positive")
        self.device = device
        self.total = total
        self.device_total = device_total
        self.staged = 0  # Σ staged inputs of the holders that have not lent
        self._kernels: Counter[int] = Counter()  # the holders' kernel working sets
        self.tail = 0  # Σ what lenders still hold: their staged inputs and kernels' tails
        self.high_water = 0
        self._cv = threading.Condition()
        self._tickets = itertools.count()
        self._queue: deque[int] = deque()  # waiting tickets, oldest first

    @property
    def held(self) -> int:
        """Bytes counted now: staged inputs plus one kernel working set (the largest, or what
        the lenders still hold if more)."""
        with self._cv:  # (an RLock: also read inside reserve)
            return self.staged + max(max(self._kernels, default=0), self.tail)

    @property
    def waiting(self) -> int:
        """Reservations waiting for room now."""
        with self._cv:
            return len(self._queue)

    def check_can_fit(self, nbytes: int, what: str) -> None:
        if nbytes > self.total:
            raise ResourceExhausted(
                f"{what} needs {nbytes} bytes staged on device {self.device}, more than its "
                f"staging budget of {self.total}; it can never run with this configuration"
            )

    def _fits(self, staged: int, kernels: int, resident: int) -> bool:
        need = self.staged + staged + max(max(self._kernels, default=0), kernels, self.tail)
        if need > self.total:
            return False
        beside = self._kernels or self.tail
        if beside and self.device_total is not None:  # beside another partition
            return self.device_total - resident - need >= SECOND_STAGE_HEADROOM
        return True

    def reserve(
        self,
        nbytes: int,
        abandon: Callable[[], bool],
        poll_s: float = 0.05,
        kernel_bytes: int = 0,
        resident_bytes: int = 0,
    ) -> bool:
        """Wait until ``nbytes`` of staged inputs and a kernel working set of ``kernel_bytes``
        fit, in turn (first come, first served), then take them; False (nothing taken) if
        ``abandon()`` turns true while waiting (the job was cancelled or failed).
        ``resident_bytes``: the device memory the partition's key holds."""
        self.check_can_fit(nbytes + kernel_bytes, "a partition")
        with self._cv:
            ticket = next(self._tickets)
            self._queue.append(ticket)
            try:
                while self._queue[0] != ticket or not self._fits(
                    nbytes, kernel_bytes, resident_bytes
                ):
                    if abandon():
                        return False
                    self._cv.wait(poll_s)
                self.staged += nbytes
                self._kernels[kernel_bytes] += 1
                self.high_water = max(self.high_water, self.held)
                return True
            finally:
                self._queue.remove(ticket)
                self._cv.notify_all()  # the next in line may fit too

    def grow(self, total: int) -> None:
        """Make the area ``total`` bytes (never smaller: a key's placement grows it to hold one
        partition of its circuit, :meth:`cuzk.engine.srs.SrsManager.place`)."""
        with self._cv:
            self.total = max(self.total, total)
            self._cv.notify_all()

    def lend(self, staged: int, kernel_bytes: int, tail: int) -> None:
        """A holder of ``staged`` inputs and a ``kernel_bytes`` working set keeps only ``tail``
        bytes of kernels from now on (its H MSM is done; split MSMs still read z): it then
        holds ``staged + tail`` until :meth:`release_tail` gives them back. Only the compute
        lock's holder may lend (its tail must end before any other partition's kernels
        begin), and it waits for nothing here, so lending adds no wait to the lock order."""
        with self._cv:
            assert self._kernels[kernel_bytes] > 0, "staging area lent what it never held"
            assert 0 <= tail <= kernel_bytes, "a tail is part of the working set"
            self._kernels[kernel_bytes] -= 1
            if not self._kernels[kernel_bytes]:
                del self._kernels[kernel_bytes]
            self.staged -= staged
            assert self.staged >= 0, "staging area lent more than it held"
            self.tail += staged + tail
            self._cv.notify_all()

    def release_tail(self, nbytes: int) -> None:
        """Give back part or all of what a lender holds (its z once the MSMs over the witness
        are done, its tail when its kernels end)."""
        with self._cv:
            self.tail -= nbytes
            assert self.tail >= 0, "staging area released more tail than was lent"
            self._cv.notify_all()

    def release_staged(self, nbytes: int) -> None:
        """Give back a holder's staged inputs while it keeps its kernel working set: its
        kernels no longer read them (the device worker frees z once the MSMs over the witness
        are done), so the next partition may stage while its last MSM runs."""
        with self._cv:
            self.staged -= nbytes
            assert self.staged >= 0, "staging area released more than it held"
            self._cv.notify_all()

    def release(self, nbytes: int, kernel_bytes: int = 0) -> None:
        with self._cv:
            assert self._kernels[kernel_bytes] > 0, "staging area released what it never held"
            self._kernels[kernel_bytes] -= 1
            if not self._kernels[kernel_bytes]:
                del self._kernels[kernel_bytes]
            self.release_staged(nbytes)  # (the condition's lock is re-entrant)


class PinnedPool:
    """Reusable host buffers from ``allocate(rows)`` (page-locked on CUDA), handed out as
    (rows, 4) uint64 views and given back after the kernels. Keeps at most ``keep_bytes`` of
    idle buffers; larger requests than any idle buffer allocate a new one."""

    def __init__(self, allocate: Callable[[int], np.ndarray], keep_bytes: int) -> None:
        self._allocate = allocate
        self._keep = keep_bytes
        self._idle: list[np.ndarray] = []  # base buffers, smallest first
        self._lent: dict[int, np.ndarray] = {}  # id(view) → its base buffer
        self._lock = threading.Lock()
        self.allocations = 0

    def take(self, rows: int) -> np.ndarray:
        with self._lock:
            at = next((i for i, b in enumerate(self._idle) if len(b) >= rows), None)
            base = self._idle.pop(at) if at is not None else None
        if base is None:
            base = self._allocate(max(rows, 1))
            with self._lock:
                self.allocations += 1
        view = base[:rows]
        with self._lock:
            self._lent[id(view)] = base
        return view

    def give(self, view: np.ndarray) -> None:
        with self._lock:
            base = self._lent.pop(id(view), None)
            if base is None:
                return
            self._idle.append(base)
            self._idle.sort(key=len)
            while self._idle and sum(b.nbytes for b in self._idle) > self._keep:
                self._idle.pop()  # drop the largest idle buffer

    @property
    def lent(self) -> int:
        with self._lock:
            return len(self._lent)

    @property
    def idle_bytes(self) -> int:
        with self._lock:
            return sum(b.nbytes for b in self._idle)
