"""Groth16 setup for tests and benchmarks (not a ceremony: the toxic waste is drawn locally).

With τ secret and Lᵢ the Lagrange basis of the domain ⟨ω⟩ of size m,
Aⱼ(τ) = Σᵢ A[i, j]·Lᵢ(τ) — one transposed sparse product with the vector of Lᵢ(τ), which is
    Lᵢ(τ) = ωⁱ·(τᵐ − 1) / (m·(τ − ωⁱ)).
Every point is then a fixed-base multiplication of a generator, done in bulk by a backend
(on the GPU with the CUDA backend) or in the worker pool.
"""

from __future__ import annotations

import random
import secrets
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from cuzk.backend.base import Backend, Group
from cuzk.curve import g1_generator, g1_mul, g2_generator, g2_mul
from cuzk.curve.encoding import g1_array_from_uncompressed
from cuzk.curve.points import BytesLike, G1Point, G2Point
from cuzk.curve.pool import MsmPool
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R
from cuzk.groth16.keys import Parameters, VerifyingKey
from cuzk.groth16.params_io import ParamsWriter, read_params_unchecked, write_vk
from cuzk.poly import Domain
from cuzk.r1cs import R1CSShape

Progress = Callable[[int, int], None]
"""Called with (points done, points total) as the fixed-base work completes."""

CHUNK = 8192  # points per pool task: small enough for smooth progress, large enough to amortise


def _nonzero(rng: random.Random) -> int:
    while True:
        x = rng.randrange(R)
        if x:
            return x


def lagrange_at(tau: int, domain: Domain) -> fr.FrVec:
    """[Lᵢ(τ) for i < m]; τ must lie outside the domain."""
    m = domain.m
    omegas = fr.powers(domain.omega, m)
    tau_vec = np.broadcast_to(fr.from_int(tau), (m, 4)).copy()
    scale = (pow(tau, m, R) - 1) * pow(m, R - 2, R) % R
    return fr.scale(fr.mul(omegas, fr.batch_inverse(fr.sub(tau_vec, omegas))), scale)


def generate_parameters(
    shape: R1CSShape,
    out_dir: str | Path,
    name: str,
    *,
    seed: int | None = None,
    pool: MsmPool | None = None,
    backend: Backend | None = None,
    progress: Progress | None = None,
) -> Parameters:
    """Write ``out_dir/name.params`` and ``out_dir/name.vk`` for ``shape`` and return the
    parameters. ``seed`` makes the toxic waste reproducible (tests, benchmarks only).

    The fixed-base multiplications run on ``backend`` (:meth:`Backend.fixed_base`; on the CUDA
    backend 2^22 constraints take ≈ 2 s of it on an H200, ≈ 120× the 16-core pool) when one is
    given, else on ``pool``. Both give the same bytes for the same seed. Points go to the file
    chunk by chunk as they are made (:class:`ParamsWriter`): memory holds the scalars (32 bytes
    per point) but never the key's points (96 or 192 bytes each, tens of GB at 2^27)."""
    rng: random.Random = random.Random(seed) if seed is not None else secrets.SystemRandom()
    domain = Domain.for_size(shape.num_constraints)
    while True:
        tau = _nonzero(rng)
        if pow(tau, domain.m, R) != 1:  # τ in the domain would divide by zero below
            break
    alpha, beta, gamma, delta = (_nonzero(rng) for _ in range(4))
    gamma_inv, delta_inv = pow(gamma, R - 2, R), pow(delta, R - 2, R)

    lag = lagrange_at(tau, domain)
    lag = lag[: shape.num_constraints]
    at = shape.a.transpose().matvec(lag)  # Aⱼ(τ) for every variable j
    bt = shape.b.transpose().matvec(lag)
    ct = shape.c.transpose().matvec(lag)
    mixed = fr.add(fr.add(fr.scale(at, beta), fr.scale(bt, alpha)), ct)
    ni = shape.num_inputs

    l_scalars = fr.scale(mixed[ni:], delta_inv)
    unconstrained = np.flatnonzero(fr.is_zero(l_scalars))
    if len(unconstrained):
        raise BadInput(
            f"circuit {shape.circuit_id!r}: aux variable {int(unconstrained[0])} is "
            "unconstrained (its l point would be the identity)"
        )
    ic_scalars = fr.scale(mixed[:ni], gamma_inv)
    a_scalars = np.concatenate([at[:ni], at[ni:][shape.a_aux_density]])
    b_scalars = np.concatenate([bt[:ni][shape.b_input_density], bt[ni:][shape.b_aux_density]])
    t_tau = (pow(tau, domain.m, R) - 1) % R
    h_scalars = fr.powers(tau, domain.m - 1, start=t_tau * delta_inv % R)

    jobs: list[tuple[Group, fr.FrVec]] = [
        ("g1", h_scalars),
        ("g1", l_scalars),
        ("g1", a_scalars),
        ("g1", b_scalars),
        ("g2", b_scalars),
    ]
    # Only the scalars of the five vectors are needed from here on: at 2^27 each array below
    # is ~4 GB, so holding them through the point work would double setup's peak.
    del lag, at, bt, ct, mixed
    total = sum(len(s) for _, s in jobs) + len(ic_scalars)
    if progress is not None:
        progress(0, total)
    if backend is not None:
        producer: _Producer = _BackendProducer(backend)
    elif pool is not None:
        producer = _PoolProducer(pool)
    else:
        raise BadInput("generate_parameters needs a backend or a worker pool")
    ic_bytes = producer.ic(ic_scalars)
    g1, g2 = g1_generator(), g2_generator()
    vk = VerifyingKey(
        alpha_g1=g1_mul(g1, alpha),
        beta_g1=g1_mul(g1, beta),
        beta_g2=g2_mul(g2, beta),
        gamma_g2=g2_mul(g2, gamma),
        delta_g1=g1_mul(g1, delta),
        delta_g2=g2_mul(g2, delta),
        ic=tuple(g1_array_from_uncompressed(ic_bytes)),
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    done = len(ic_scalars)
    with ParamsWriter(out / f"{name}.params", vk, [len(s) for _, s in jobs]) as writer:
        for group, scalars in jobs:
            for chunk in producer.points(group, scalars):
                writer.write(chunk)
                done += len(chunk) // (96 if group == "g1" else 192)
                if progress is not None:
                    progress(done, total)
        writer.commit()
    write_vk(out / f"{name}.vk", vk)
    return read_params_unchecked(out / f"{name}.params")


#: Points per fixed-base call on a backend: bounds host memory to a few such chunks (400 MB of
#: G1, 800 MB of G2) and matches the CUDA kernel's pass, whose window is already the best for
#: the full 2^27 at this size.
BACKEND_CHUNK = 1 << 22
#: Pool requests kept in flight: enough to keep every worker busy, few enough that finished
#: points never pile up in memory ahead of the writer.
POOL_IN_FLIGHT = 8


class _Producer:
    """The fixed-base multiplications of setup, as chunks of uncompressed points in order."""

    def ic(self, scalars: fr.FrVec) -> bytes:
        raise NotImplementedError

    def points(self, group: Group, scalars: fr.FrVec) -> Iterator[BytesLike]:
        raise NotImplementedError


class _BackendProducer(_Producer):
    """``backend.fixed_base``, :data:`BACKEND_CHUNK` scalars per call."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def ic(self, scalars: fr.FrVec) -> bytes:
        return self.backend.fixed_base("g1", scalars).tobytes()

    def points(self, group: Group, scalars: fr.FrVec) -> Iterator[BytesLike]:
        for lo in range(0, len(scalars), BACKEND_CHUNK):
            yield self.backend.fixed_base(group, scalars[lo : lo + BACKEND_CHUNK]).reshape(-1)


class _PoolProducer(_Producer):
    """The worker pool, :data:`CHUNK` scalars per request, :data:`POOL_IN_FLIGHT` at a time."""

    def __init__(self, pool: MsmPool) -> None:
        self.pool = pool
        self.bases: dict[str, G1Point | G2Point] = {"g1": g1_generator(), "g2": g2_generator()}

    def ic(self, scalars: fr.FrVec) -> bytes:
        return self.pool.fixed_base("g1", self.bases["g1"], fr.to_bytes_le(scalars)).result()

    def points(self, group: Group, scalars: fr.FrVec) -> Iterator[BytesLike]:
        pending: deque[Future] = deque()
        for lo in range(0, len(scalars), CHUNK):
            chunk = fr.to_bytes_le(scalars[lo : lo + CHUNK])
            pending.append(self.pool.fixed_base(group, self.bases[group], chunk))
            if len(pending) >= POOL_IN_FLIGHT:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
