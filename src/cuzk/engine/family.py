"""Prover families: the one seam where the engine meets a key format.

The engine's machinery — admission, memory budget, residency, the compute lock, the verifying
assembler — does not care whose key it proves with. What differs between a bellperson
``.params`` key (circuits built in-process from seeds or a payload) and a snarkjs ``.zkey``
(constraints in the key, a circom ``.wtns`` witness as the payload, H on snarkjs's odd coset)
is confined to a :class:`ProverFamily`:

* ``open``: parse and check a request at submit, size its job (:class:`CircuitInfo`);
* ``load``: read the key as :class:`~cuzk.groth16.keys.Parameters` (a snarkjs key's bases
  translated into bellperson's layout, its QAP reduction recorded in the key) and make its
  vectors resident (through the :class:`SrsManager`'s loader, on its backends);
* ``synthesize``: turn a partition into an assignment (a synthesis worker);
* ``unverified``: the error a proof that fails the final check becomes.

Everything after synthesis — staging, the kernels, assembly — is the one prover's
(:mod:`cuzk.groth16.prover`), the same for every family, so snarkjs partitions stage outside
the compute lock like all others.

A circuit id picks its family (:func:`family_for`): ``snarkjs:NAME`` is the snarkjs family,
everything else bellperson's. The info of a job records the family's name, so every later
stage finds it with :func:`family_of`.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from cuzk.circuits import Statement, get_circuit, open_statement
from cuzk.circuits.catalogue import prover_of, snarkjs_name
from cuzk.circuits.statement import payload_digest
from cuzk.engine.budget import (
    SHAPE_DERIVED_BYTES_PER_VARIABLE,
    SRS_RESIDENT_FACTOR,
    shape_bytes_estimate,
)
from cuzk.engine.key_plan import VECTORS
from cuzk.engine.srs import CircuitInfo
from cuzk.errors import BadInput, InternalError
from cuzk.field import fr
from cuzk.groth16 import prover
from cuzk.groth16.keys import Parameters
from cuzk.groth16.params_io import G1_SIZE, G2_SIZE, read_header, read_params
from cuzk.groth16.prover import check_compatible
from cuzk.r1cs import DEFAULT_OPTIONS, BulkWitness, Circuit, R1CSShape, SynthesisOptions
from cuzk.r1cs.blocks import BlockCircuit
from cuzk.r1cs.cache import ShapeCache
from cuzk.r1cs.shape import SHAPE_FORMAT_VERSION, matrix_files, shape_format

if TYPE_CHECKING:
    from cuzk.engine.config import EngineConfig
    from cuzk.engine.job import Partition
    from cuzk.engine.request import ProofRequest
    from cuzk.engine.srs import SrsManager
    from cuzk.engine.synth_pool import SynthesisPool

log = logging.getLogger(__name__)


class ProverFamily:
    """One key format's half of the engine (see the module docstring); stateless."""

    name: ClassVar[str]

    def info(self, circuit_id: str, config: EngineConfig) -> CircuitInfo:
        """Validate the id and key file, and size the circuit (cheap: headers only)."""
        raise NotImplementedError

    def open(self, request: ProofRequest, config: EngineConfig) -> tuple[Statement, CircuitInfo]:
        """Parse and check a request completely (BadInput naming the problem)."""
        raise NotImplementedError

    def load(
        self, srs: SrsManager, info: CircuitInfo, devices: Sequence[int]
    ) -> tuple[Parameters, R1CSShape]:
        """Read the key, make its vectors resident on ``devices``; (key, shape)."""
        raise NotImplementedError

    def synthesize(
        self,
        part: Partition,
        pool: SynthesisPool | None = None,
        options: SynthesisOptions = DEFAULT_OPTIONS,
    ) -> tuple[Circuit | None, prover.Assignment]:
        """(circuit, assignment) of a partition; BadInput if the witness is not acceptable.
        The circuit, when there is one, names a violated constraint if the kernels find one.
        ``options`` say what the witness leaves to the backend (:mod:`cuzk.r1cs.deferred`)."""
        raise NotImplementedError

    def unverified(self, index: int) -> Exception:
        """What a partition whose proof fails the final check turns its job into."""
        return InternalError(
            f"partition {index}: the proof did not verify (prover, device or key fault); "
            "it was discarded"
        )


def circuit_info(
    circuit_id: str,
    params_path: Path,
    backend: str,
    devices: int,
    shape_cache: Path | None = None,
) -> CircuitInfo:
    """Validate a circuit id and its key file; raises BadInput naming a missing file."""
    get_circuit(circuit_id)  # unknown or malformed ids fail here, before any work
    if not params_path.is_file():
        raise BadInput(
            f"no proving key for {circuit_id!r}: {params_path} does not exist "
            f"(make one with `cuzk setup --circuit {circuit_id} --out {params_path.parent}`)"
        )
    header = read_header(params_path)
    if header.kind != "params" or header.domain_size is None:
        raise BadInput(f"{params_path} is a verifying key, not a proving key")
    c = header.counts
    sizes = {v: c[v] * (G2_SIZE if v == "b_g2" else G1_SIZE) for v in VECTORS}
    point_bytes = sum(sizes.values())
    n = header.num_ic + c["l"]
    m = header.domain_size
    return CircuitInfo(
        circuit_id,
        params_path,
        n,
        m,
        int(point_bytes * SRS_RESIDENT_FACTOR[backend]) * devices,
        _cached_shape_bytes(circuit_id, shape_cache, n) or shape_bytes_estimate(n, m),
        backend=backend,
        point_bytes=point_bytes,
        vector_bytes=tuple(sizes.items()),
    )


def _cached_shape_bytes(
    circuit_id: str, shape_cache: Path | None, num_variables: int
) -> int | None:
    """The size of a shape already in the cache (its matrix files, plus what the prover derives
    from them), else None."""
    if shape_cache is None:
        return None
    d = ShapeCache(shape_cache).path_for(circuit_id)
    if shape_format(d) != SHAPE_FORMAT_VERSION:  # absent, or stale: the cache rebuilds it
        return None
    try:
        files = sum(f.stat().st_size for f in matrix_files(d))
        return files + SHAPE_DERIVED_BYTES_PER_VARIABLE * num_variables
    except OSError:
        return None


class BellpersonFamily(ProverFamily):
    """bellperson ``.params`` keys; circuits synthesized in-process (:mod:`cuzk.groth16`)."""

    name = "bellperson"

    def info(self, circuit_id: str, config: EngineConfig) -> CircuitInfo:
        return circuit_info(circuit_id, config.params_path(circuit_id), config.backend,
                            config.devices, config.shape_cache)  # fmt: skip

    def open(self, request: ProofRequest, config: EngineConfig) -> tuple[Statement, CircuitInfo]:
        # The payload first: a malformed request is reported before a missing key file.
        statement = open_statement(request.circuit_id, request.seeds, request.payload)
        return statement, self.info(request.circuit_id, config)

    def load(
        self, srs: SrsManager, info: CircuitInfo, devices: Sequence[int]
    ) -> tuple[Parameters, R1CSShape]:
        """Read the key, get the shape, check they match and preload ``devices``."""
        params = read_params(info.params_path)
        shape = srs.loader.shape_for(info.circuit_id, get_circuit(info.circuit_id))
        check_compatible(params, shape)
        srs.loader.preload(params.vectors, devices, info.circuit_id, shape)
        return params, shape

    def synthesize(
        self,
        part: Partition,
        pool: SynthesisPool | None = None,
        options: SynthesisOptions = DEFAULT_OPTIONS,
    ) -> tuple[Circuit | None, prover.Assignment]:
        statement = part.job.statement
        circuit = statement.circuit(part.index)
        if pool is None or isinstance(circuit, BulkWitness):
            assignment = prover.synthesize(circuit, part.timings, options)
        else:  # Python gadget code: build the witness in a worker process, off this GIL
            t0 = time.perf_counter()
            key = part.key  # the scheduler's order: the pool's tasks run in it too
            rank = (key.priority, key.job_seq, key.partition)
            if isinstance(circuit, BlockCircuit) and circuit.block_count() > 1:
                inputs, aux = pool.synthesize_blocks(circuit, options, rank)
            else:
                inputs, aux = pool.synthesize(circuit, options, rank)
            assignment = prover.Assignment(fr.from_ints(inputs), aux, tuple(inputs[1:]))
            part.timings.record("synthesis", time.perf_counter() - t0)
        expected = statement.expected(part.index)
        if expected is not None and tuple(assignment.public_inputs) != expected:
            raise BadInput(
                f"the witness proves other public inputs than the request states "
                f"(input {_first_difference(assignment.public_inputs, expected)} differs)"
            )
        return circuit, assignment


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
            shape_bytes, family=self.name, vk_file=path, backend=config.backend,
            point_bytes=h.point_bytes,
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
        n_in = read_zkey_header(info.params_path).n_public + 1
        public = tuple(witness.public(n_in - 1))
        del witness  # the request keeps the bytes; synthesis parses them again
        digest = payload_digest(cid, (), payload)

        def assignment(_index: int) -> prover.Assignment:
            return prover.Assignment.split(read_wtns(name, payload).values, n_in, public)

        # why the ignore below: a snarkjs statement makes assignments, not circuits: the family's
        # synthesize calls it so
        return Statement(cid, 1, assignment, digest, (public,)), info  # type: ignore[arg-type]

    def load(
        self, srs: SrsManager, info: CircuitInfo, devices: Sequence[int]
    ) -> tuple[Parameters, R1CSShape]:
        from cuzk.interop.prover import prepare
        from cuzk.interop.zkey import read_zkey

        zkey = read_zkey(info.params_path)
        if (zkey.n_vars, zkey.domain_size) != (info.num_variables, info.domain_size):
            raise BadInput(f"{info.params_path} changed after the request was accepted")
        cache = _bases_cache_dir(srs.loader.shape_cache_dir, info.params_path.parent)
        try:
            key = prepare(zkey, cache_dir=cache)
        except OSError as e:  # a read-only directory: translate into a temporary file
            log.warning("cannot cache the bases of %s in %s (%s); translating into a "
                        "temporary file", info.params_path, cache, e)  # fmt: skip
            key = prepare(zkey)
            weakref.finalize(key.params, key.bases.remove)  # the engine keeps the params
        with key.section_errors():
            srs.loader.preload(key.vectors, devices, info.circuit_id, key.shape)
        return key.params, key.shape

    def synthesize(
        self,
        part: Partition,
        pool: SynthesisPool | None = None,
        options: SynthesisOptions = DEFAULT_OPTIONS,
    ) -> tuple[Circuit | None, prover.Assignment]:
        assignment = part.job.statement.circuit(part.index)  # an Assignment for this family
        assert isinstance(assignment, prover.Assignment)
        return None, assignment

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
    """The family the catalogue names for a circuit id (BadInput for an unknown or malformed
    id)."""
    return _FAMILIES[prover_of(circuit_id)]


def family_of(info: CircuitInfo) -> ProverFamily:
    """The family recorded in a job's info."""
    return _FAMILIES[info.family]


def _first_difference(got: tuple[int, ...], want: tuple[int, ...]) -> int:
    return next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)))  # fmt: skip


__all__ = ["BELLPERSON", "SNARKJS", "ProverFamily", "family_for", "family_of"]
