"""The residency table's vocabulary: what it holds about a key, and what a key takes on a device.

:class:`~cuzk.engine.srs.SrsManager` decides (under the engine's lock) where keys live and
:class:`~cuzk.engine.srs_load.KeyLoader` does the slow loading outside it; both, and the engine
around them (admission, the device workers, the status), speak in these types. They live apart
so that a reader of the data — a status view, a test sizing a device — need not read the
placement policy, and so that the policy and the loader share them without importing each
other.

* :class:`CircuitInfo`: a circuit as its key file's header sizes it (cheap, before any load);
* :class:`Resident`: one key's entry in the table and where it is on each device, with the
  states it passes through (:data:`LOADING`, :data:`RESIDENT`, :data:`FAILED`, and
  :data:`DRAINING` for a device giving its place up);
* :class:`Placement` and :class:`LoadOutcome`: a load handed from the lock to the loader and
  back;
* :func:`device_bytes`, :func:`matrix_bytes`, :func:`least_device_bytes`, :func:`shape_nbytes`:
  the sizes the budgets reserve for a key.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from cuzk.engine.budget import SHAPE_DERIVED_BYTES_PER_VARIABLE, Reservation, partition_bytes
from cuzk.engine.key_plan import MATRICES, VECTORS, WHOLE, KeyPlan, min_device_bytes
from cuzk.groth16.keys import Parameters
from cuzk.r1cs import R1CSShape

#: A key's states (``Resident.state``); LOADING and RESIDENT are a device's for it too.
LOADING, RESIDENT, FAILED = "loading", "resident", "failed"
#: A device whose place for a key is being given up: its partitions finish, no new one comes.
DRAINING = "draining"


@dataclass(frozen=True)
class CircuitInfo:
    """What the engine knows about a circuit from its key file's header alone (cheap)."""

    circuit_id: str
    params_path: Path
    num_variables: int  # inputs (with ONE) + aux
    domain_size: int  # m
    srs_bytes: int  # host bytes to keep its points resident on every device
    shape_bytes: int  # estimate until the shape is loaded
    family: str = "bellperson"  # the prover family (:mod:`cuzk.engine.family`) that proves it
    vk_file: Path | None = None  # where its verifying key is, when not beside the params
    backend: str = "cpu"  # where its partitions run (what of their working set is host memory)
    point_bytes: int = 0  # its key's points as a device holds them (affine, one device)
    #: (name, bytes) of each vector (key_plan.VECTORS' names); one WHOLE block when unknown
    vector_bytes: tuple[tuple[str, int], ...] = ()

    @property
    def vectors(self) -> dict[str, int]:
        return dict(self.vector_bytes) if self.vector_bytes else {WHOLE: self.point_bytes}

    @property
    def partition_parts(self) -> dict[str, int]:
        return partition_bytes(self.num_variables, self.domain_size, self.backend)

    @property
    def vk_path(self) -> Path:
        """The file results point clients to: ``.vk`` beside bellperson params; the
        ``.zkey`` itself for snarkjs keys (it carries the verifying key)."""
        return self.vk_file if self.vk_file is not None else self.params_path.with_suffix(".vk")


@dataclass(eq=False)
class Resident:
    """One circuit's residency entry (mutable, guarded by the engine's lock).

    ``state`` is the key's own: LOADING until it has been read once, then RESIDENT (or FAILED).
    Where it is on the devices is per device (``placed``): a device may be LOADING it, hold it
    (RESIDENT) or be DRAINING it (partitions already there finish; no new one comes; it leaves
    when the last one ends, to make room for another key)."""

    info: CircuitInfo
    state: str  # LOADING, RESIDENT or FAILED
    srs: Reservation
    shape_res: Reservation
    last_used: float
    users: int = 0  # partitions in flight that need it (any device, or none yet)
    params: Parameters | None = None
    shape: R1CSShape | None = None
    error: BaseException | None = None
    load_span: tuple[float, float] | None = None  # engine clock: when its first load ran
    placed: dict[int, str] = field(default_factory=dict)  # device → LOADING/RESIDENT/DRAINING
    device_res: dict[int, Reservation] = field(default_factory=dict)  # each device's key budget
    copies: dict[int, int] = field(default_factory=dict)  # shifted copies of its bases there
    plans: dict[int, KeyPlan] = field(default_factory=dict)  # what streams on each device
    bound: Counter[int] = field(default_factory=Counter)  # partitions on each device now

    @property
    def held(self) -> int:
        return self.srs.held + self.shape_res.held

    @property
    def device_held(self) -> int:
        """Bytes of a device's key budget it holds (the most on any device; 0 without one)."""
        return max((r.held for r in self.device_res.values()), default=0)

    @property
    def msm_copies(self) -> int:
        """Copies of its bases on every device that holds it (1: none on one of them)."""
        return min((self.copies.get(d, 1) for d in self.placed), default=1)

    @property
    def streamed(self) -> tuple[str, ...]:
        """Its vectors (and its shape's matrices) that stream from host memory on some
        device that holds it."""
        names = {n for p in self.plans.values() for n in p.streamed}
        return tuple(n for n in (*VECTORS, WHOLE, MATRICES) if n in names)

    @property
    def devices(self) -> tuple[int, ...]:
        """The devices that hold it now (loaded, draining included)."""
        return tuple(sorted(d for d, s in self.placed.items() if s != LOADING))

    def takes(self, device: int) -> bool:
        """A ready partition of it may go to ``device``: the key is there or on its way, not
        draining. A failed key's partitions go anywhere, to meet its error there."""
        return self.state == FAILED or self.placed.get(device) in (LOADING, RESIDENT)

    def _usable_elsewhere(self, device: int) -> bool:
        return any(s in (LOADING, RESIDENT) for d, s in self.placed.items() if d != device)

    def idle_on(self, device: int) -> bool:
        """Its place on ``device`` can go now without stopping any work: nothing runs there,
        and either nothing needs it at all or it is draining (its work goes elsewhere)."""
        state = self.placed.get(device)
        if state is None or state == LOADING or self.bound[device]:
            return False
        return self.users == 0 or state == DRAINING

    def drainable_on(self, device: int) -> bool:
        """Its place on ``device`` may be taken from it while it is busy: another device holds
        it (or is loading it) for the work that remains."""
        return self.placed.get(device) == RESIDENT and self._usable_elsewhere(device)


@dataclass(frozen=True)
class LoadOutcome:
    """What a placement's load came to: the key and shape (or the error that stopped it), the
    copies of its bases each device made, and the devices of a later load that failed."""

    loaded: tuple[Parameters, R1CSShape] | BaseException
    copies: dict[int, int] = field(default_factory=dict)
    failed: dict[int, BaseException] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """A load to run outside the engine's lock: ``entry``'s key onto ``devices`` (``first``:
    read it from its file too; else its key is in memory and goes to more devices)."""

    entry: Resident
    devices: tuple[int, ...]
    first: bool


def device_bytes(info: CircuitInfo) -> int:
    """What a circuit holds on each device while wholly resident: its points, and its shape's
    matrices (the a/b/c kernels keep them there; the estimate until the shape is loaded,
    less what the prover derives from them on the host). wpost-32g: 56.6 + 9.0 GiB."""
    return info.point_bytes + matrix_bytes(info)


def matrix_bytes(info: CircuitInfo) -> int:
    """The shape's matrices on a device (estimated until the shape is loaded)."""
    return max(0, info.shape_bytes - SHAPE_DERIVED_BYTES_PER_VARIABLE * info.num_variables)


def least_device_bytes(info: CircuitInfo) -> int:
    """The least a circuit's key can take on a device: every vector streamed."""
    return min(device_bytes(info), min_device_bytes(info.vectors, matrix_bytes(info)))


def shape_nbytes(shape: R1CSShape) -> int:
    """The matrices, plus the masks and row indices the prover derives and keeps."""
    return shape.nbytes + SHAPE_DERIVED_BYTES_PER_VARIABLE * shape.num_variables
