"""Prover families: the one seam where the engine meets a key format.

The engine's machinery — admission, memory budget, residency, the compute lock, the verifying
assembler — does not care whose key it proves with. What differs between a bellperson
``.params`` key (circuits built in-process from seeds or a payload) and a snarkjs ``.zkey``
(constraints in the key, a circom ``.wtns`` witness as the payload, H on snarkjs's odd coset)
is confined to a :class:`ProverFamily`:

* ``open``: parse and check a request at submit, size its job (:class:`CircuitInfo`);
* ``load``: read the key and make its bases resident (on the :class:`SrsManager`'s backends);
* ``synthesize``: turn a partition into an assignment (a synthesis worker);
* ``stage`` / ``start`` / ``wait`` / ``drain`` / ``assemble``: the device worker's stages;
* ``unverified``: the error a proof that fails the final check becomes.

A circuit id picks its family (:func:`family_for`): ``snarkjs:NAME`` is the snarkjs family,
everything else bellperson's. The info of a job records the family's name, so every later
stage finds it with :func:`family_of`.

Staging: bellperson's prover splits its host→device uploads (``prover.stage``) from the
kernels so that, with ``EngineConfig.staging``, uploads run outside the compute lock. The
snarkjs prover has no such split (its ``start`` evaluates a, b from the key's matrices and
submits the MSMs in one go), so it runs entirely inside the lock and draws nothing from the
staging area; the lock still serialises its kernels with every other partition's.
"""

from __future__ import annotations

import logging
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from cuzk.circuits import Statement, open_statement
from cuzk.circuits.registry import snarkjs_name
from cuzk.circuits.statement import payload_digest
from cuzk.engine.budget import (
    KERNEL_BYTES_PER_DOMAIN,
    SHAPE_DERIVED_BYTES_PER_VARIABLE,
    SRS_RESIDENT_FACTOR,
)
from cuzk.engine.srs import CircuitInfo, circuit_info
from cuzk.errors import BadInput, InternalError
from cuzk.field import fr
from cuzk.groth16 import prover
from cuzk.groth16.proof import Proof
from cuzk.r1cs import BulkWitness, R1CSShape

if TYPE_CHECKING:
    from cuzk.engine.config import EngineConfig
    from cuzk.engine.job import Partition
    from cuzk.engine.request import ProofRequest
    from cuzk.engine.srs import Resident, SrsManager
    from cuzk.engine.synth_pool import SynthesisPool
    from cuzk.engine.workers import Device

log = logging.getLogger(__name__)


class ProverFamily:
    """One key format's half of the engine (see the module docstring); stateless."""

    name: ClassVar[str]
    stages: ClassVar[bool]  # has a staging step that may run outside the compute lock

    def info(self, circuit_id: str, config: EngineConfig) -> CircuitInfo:
        """Validate the id and key file, and size the circuit (cheap: headers only)."""
        raise NotImplementedError

    def open(self, request: ProofRequest, config: EngineConfig) -> tuple[Statement, CircuitInfo]:
        """Parse and check a request completely (BadInput naming the problem)."""
        raise NotImplementedError

    def load(self, srs: SrsManager, info: CircuitInfo) -> tuple[Any, R1CSShape]:
        """Read the key, make its vectors resident on every device; (key, shape). The key
        has ``vk`` and ``vectors`` (what residency evicts)."""
        raise NotImplementedError

    def synthesize(self, part: Partition, pool: SynthesisPool | None = None) -> tuple[Any, Any]:
        """(circuit, assignment) of a partition; BadInput if the witness is not acceptable."""
        raise NotImplementedError

    def staged_bytes(self, info: CircuitInfo) -> int:
        """Staging-area bytes a partition holds from staging until its kernels end."""
        return 0

    def stage(self, part: Partition, entry: Resident, device: Device) -> Any:
        return None

    def release_staged(self, staged: Any, device: Device) -> None:
        """Give back what ``stage`` borrowed (idempotent through the caller's resets)."""

    def start(self, part: Partition, entry: Resident, device: Device, staged: Any) -> Any:
        """Submit the kernels (under the compute lock); returns the pending proof."""
        raise NotImplementedError

    def wait(self, pending: Any) -> Any:
        """Wait for the device's work (still under the lock); returns the MSM sums."""
        raise NotImplementedError

    def drain(self, pending: Any) -> None:
        """After a failure: wait out the device's remaining work, ignoring errors."""
        raise NotImplementedError

    def assemble(self, pending: Any, sums: Any) -> tuple[Proof, tuple[int, ...]]:
        """The proof and its public inputs (without ONE), outside the lock, unverified."""
        raise NotImplementedError

    def unverified(self, index: int) -> Exception:
        """What a partition whose proof fails the final check turns its job into."""
        return InternalError(
            f"partition {index}: the proof did not verify (prover, device or key fault); "
            "it was discarded"
        )


class BellpersonFamily(ProverFamily):
    """bellperson ``.params`` keys; circuits synthesized in-process (:mod:`cuzk.groth16`)."""

    name = "bellperson"
    stages = True

    def info(self, circuit_id: str, config: EngineConfig) -> CircuitInfo:
        return circuit_info(circuit_id, config.params_path(circuit_id), config.backend,
                            config.devices, config.shape_cache)  # fmt: skip

    def open(self, request: ProofRequest, config: EngineConfig) -> tuple[Statement, CircuitInfo]:
        # The payload first: a malformed request is reported before a missing key file.
        statement = open_statement(request.circuit_id, request.seeds, request.payload)
        return statement, self.info(request.circuit_id, config)

    def load(self, srs: SrsManager, info: CircuitInfo) -> tuple[Any, R1CSShape]:
        return srs.load(info)

    def synthesize(self, part: Partition, pool: SynthesisPool | None = None) -> tuple[Any, Any]:
        statement = part.job.statement
        circuit = statement.circuit(part.index)
        if pool is None or isinstance(circuit, BulkWitness):
            assignment = prover.synthesize(circuit, part.timings)
        else:  # Python gadget code: build the witness in a worker process, off this GIL
            t0 = time.perf_counter()
            req = part.job.request
            inputs, aux = pool.synthesize(req.circuit_id, req.seeds, req.payload, part.index)
            assignment = prover.Assignment(fr.from_ints(inputs), aux, tuple(inputs[1:]))
            part.timings.record("synthesis", time.perf_counter() - t0)
        expected = statement.expected(part.index)
        if expected is not None and tuple(assignment.public_inputs) != expected:
            raise BadInput(
                f"the witness proves other public inputs than the request states "
                f"(input {_first_difference(assignment.public_inputs, expected)} differs)"
            )
        return circuit, assignment

    def staged_bytes(self, info: CircuitInfo) -> int:
        device, host = prover.staged_bytes(info.num_variables)
        return device + host + KERNEL_BYTES_PER_DOMAIN * info.domain_size

    def stage(self, part: Partition, entry: Resident, device: Device) -> Any:
        assert part.assignment is not None and entry.shape is not None
        return prover.stage(part.assignment, entry.shape, device.backend, device.pinned.take,
                            part.timings)  # fmt: skip

    def release_staged(self, staged: Any, device: Device) -> None:
        for buf in staged.host_buffers:
            device.pinned.give(buf)

    def start(self, part: Partition, entry: Resident, device: Device, staged: Any) -> Any:
        return prover.start(staged, entry.shape, entry.params, device.backend,  # type: ignore[arg-type]
                            part.circuit, part.timings)  # fmt: skip

    def wait(self, pending: Any) -> Any:
        return prover.wait_kernels(pending)

    def drain(self, pending: Any) -> None:
        for f in (pending.h, pending.l, pending.a, pending.b_g1, pending.b_g2):
            try:
                f.result()
            except BaseException:  # noqa: BLE001, S110 - the first failure is already reported
                pass

    def assemble(self, pending: Any, sums: Any) -> tuple[Proof, tuple[int, ...]]:
        return prover.assemble(pending, sums), tuple(pending.public_inputs)


class SnarkjsFamily(ProverFamily):
    """snarkjs ``.zkey`` keys proved from circom witnesses (:mod:`cuzk.interop`).

    ``snarkjs:NAME`` proves with ``<param_dir>/NAME.zkey``; a request's payload is one
    ``.wtns`` file (one partition). Results name the ``.zkey`` as their ``vk_path``: it holds
    the verifying key (``snarkjs zkey export verificationkey`` writes the JSON form, and
    :func:`cuzk.interop.read_zkey` reads it as ``.vk``). The key's bases are translated once
    and cached (:mod:`cuzk.interop.bases_cache`) under ``<shape_cache>/snarkjs-bases`` when
    the engine has a shape cache, else ``<param_dir>/.cuzk-bases``.
    """

    name = "snarkjs"
    stages = False

    def key_path(self, circuit_id: str, config: EngineConfig) -> Path:
        return config.param_dir / f"{snarkjs_name(circuit_id)}.zkey"

    def info(self, circuit_id: str, config: EngineConfig) -> CircuitInfo:
        from cuzk.interop.zkey import read_zkey_header

        path = self.key_path(circuit_id, config)
        if not path.is_file():
            raise BadInput(
                f"no proving key for {circuit_id!r}: {path} does not exist (put the snarkjs "
                f".zkey there)"
            )
        h = read_zkey_header(path)
        m = h.domain_size
        # CSR of A and B at worst (zkey coefficients may all differ): a 4-byte column, a
        # 4-byte id and a 32-byte table row per entry, an indptr per matrix.
        shape_bytes = (
            h.coefficient_entries * 40
            + 3 * 8 * (m + 1)
            + SHAPE_DERIVED_BYTES_PER_VARIABLE * h.n_vars
        )
        return CircuitInfo(
            circuit_id, path, h.n_vars, m,
            int(h.point_bytes * SRS_RESIDENT_FACTOR[config.backend]) * config.devices,
            shape_bytes, family=self.name, vk_file=path,
        )  # fmt: skip

    def open(self, request: ProofRequest, config: EngineConfig) -> tuple[Statement, CircuitInfo]:
        from cuzk.interop.wtns import read_wtns
        from cuzk.interop.zkey import read_zkey_header

        cid = request.circuit_id
        if request.seeds or not request.payload:
            raise BadInput(f"{cid}: a snarkjs request takes a .wtns payload, not witness seeds")
        info = self.info(cid, config)
        payload, name = request.payload, f"the .wtns payload of {cid}"
        witness = read_wtns(name, payload)  # BadInput naming the section
        if len(witness) != info.num_variables:
            raise BadInput(
                f"{name} has {len(witness)} wires; {info.params_path} expects nVars = "
                f"{info.num_variables} (a witness of another circuit?)"
            )
        n_public = read_zkey_header(info.params_path).n_public
        public = tuple(witness.public(n_public))
        del witness  # the request keeps the bytes; synthesis parses them again
        digest = payload_digest(cid, (), payload)
        return (
            Statement(
                cid,
                1,
                lambda _i: read_wtns(name, payload),
                digest,  # type: ignore[arg-type, return-value]
                (public,),
            ),  # fmt: skip
            info,
        )

    def load(self, srs: SrsManager, info: CircuitInfo) -> tuple[Any, R1CSShape]:
        from cuzk.interop.prover import prepare
        from cuzk.interop.zkey import read_zkey

        zkey = read_zkey(info.params_path)
        if (zkey.n_vars, zkey.domain_size) != (info.num_variables, info.domain_size):
            raise BadInput(f"{info.params_path} changed after the request was accepted")
        cache = _bases_cache_dir(srs.shape_cache_dir, info.params_path.parent)
        try:
            key = prepare(zkey, cache_dir=cache)
        except OSError as e:  # a read-only directory: translate into a temporary file
            log.warning("cannot cache the bases of %s in %s (%s); translating into a "
                        "temporary file", info.params_path, cache, e)  # fmt: skip
            key = prepare(zkey)
            weakref.finalize(key, key.bases.remove)
        srs.preload(key.vectors)
        return key, key.shape

    def synthesize(self, part: Partition, pool: SynthesisPool | None = None) -> tuple[Any, Any]:
        witness = part.job.statement.circuit(part.index)  # a Witness for this family
        return None, witness

    def start(self, part: Partition, entry: Resident, device: Device, staged: Any) -> Any:
        from cuzk.interop.prover import start

        return start(entry.params, part.assignment, device.backend,  # type: ignore[arg-type]
                     timings=part.timings)  # fmt: skip

    def wait(self, pending: Any) -> Any:
        from cuzk.interop.prover import wait_msms

        return wait_msms(pending)

    def drain(self, pending: Any) -> None:
        from cuzk.interop.prover import drain

        drain(pending)

    def assemble(self, pending: Any, sums: Any) -> tuple[Proof, tuple[int, ...]]:
        from cuzk.interop.prover import assemble

        return assemble(pending, sums), tuple(pending.public)

    def unverified(self, index: int) -> Exception:
        # The key has no C matrix, so an unsatisfying witness is only seen here.
        return BadInput(
            f"partition {index}: the proof did not verify against the key: the witness does "
            "not satisfy the key's circuit (or the key is inconsistent); it was discarded"
        )


def _bases_cache_dir(shape_cache: Path | None, key_dir: Path) -> Path:
    return shape_cache / "snarkjs-bases" if shape_cache is not None else key_dir / ".cuzk-bases"


BELLPERSON = BellpersonFamily()
SNARKJS = SnarkjsFamily()
_FAMILIES: dict[str, ProverFamily] = {f.name: f for f in (BELLPERSON, SNARKJS)}


def family_for(circuit_id: str) -> ProverFamily:
    """The family a circuit id belongs to (BadInput for a malformed ``snarkjs:`` id)."""
    return SNARKJS if snarkjs_name(circuit_id) is not None else BELLPERSON


def family_of(info: CircuitInfo) -> ProverFamily:
    """The family recorded in a job's info."""
    return _FAMILIES[info.family]


def _first_difference(got: tuple[int, ...], want: tuple[int, ...]) -> int:
    return next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)))  # fmt: skip


__all__ = ["BELLPERSON", "SNARKJS", "ProverFamily", "family_for", "family_of"]
