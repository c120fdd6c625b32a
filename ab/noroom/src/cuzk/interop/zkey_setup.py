"""snarkjs Groth16 keys made directly from a circom ``.r1cs``, for tests and benchmarks only.

NOT A CEREMONY: the toxic waste (τ, α, β, γ, δ) is drawn here, so anyone holding it can forge
proofs. It exists because snarkjs's own path (powers of tau, then ``groth16 setup``) takes
minutes at 2^12 constraints and hours at 2^16 on a small machine, while the key it produces is
fully determined by the circuit and five scalars. Computed as snarkjs's setup defines the key
(``zkey_new.js``), with L_i the Lagrange basis of snarkjs's domain ⟨ω'⟩ of size m:

* QAP rows: the circuit's constraints, then one row per public signal s (ONE included) with
  A[n + s][s] = 1, so m = 2^(⌊log2(n + nPublic)⌋ + 1) as snarkjs sizes it;
* uⱼ, vⱼ, wⱼ = Σᵢ A/B/C[i, j]·Lᵢ(τ);  A = [uⱼ]₁, B₁ = [vⱼ]₁, B₂ = [vⱼ]₂ for every wire;
* IC = [(β·uⱼ + α·vⱼ + wⱼ)/γ]₁ for j ≤ nPublic, C = [(β·uⱼ + α·vⱼ + wⱼ)/δ]₁ for the rest;
* H = [L^{2m}_{2i+1}(τ)/δ]₁: the odd Lagrange basis of the 2m-domain (no vanishing factor:
  the prover sends A·B − C's values on those points, which vanish on the even ones).

snarkjs proves and verifies with these keys like with its own (the test suite checks that).
"""

from __future__ import annotations

import random
import secrets
import struct
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from cuzk.backend.base import Backend, Group
from cuzk.curve import G1, G2, g1_generator, g1_mul, g2_generator, g2_mul
from cuzk.curve.encoding import g1_to_bytes, g2_to_bytes
from cuzk.curve.pool import MsmPool
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import FP_BYTES, FR_BYTES, FR_TWO_ADICITY, P, R
from cuzk.interop.points import zcash_to_lem
from cuzk.interop.r1cs import CircomR1cs
from cuzk.interop.zkey import GROTH16_PROTOCOL
from cuzk.poly.snarkjs_h import snarkjs_odd_shift, snarkjs_root

_CHUNK = 8192  # points per pool task
_R2 = pow(2, 512, R)  # coefficients are stored times R² (R = 2^256)


def snarkjs_domain_size(num_constraints: int, num_public: int) -> int:
    """m as ``snarkjs groth16 setup`` chooses it for this circuit."""
    return 1 << ((num_constraints + num_public).bit_length())


def _lagrange(tau: int, points: fr.FrVec, m: int) -> fr.FrVec:
    """[Lₖ(τ)] for the size-m domain whose points (or odd points of) ``points`` lists:
    Lₖ(τ) = xₖ·(τ^m − 1)/(m·(τ − xₖ))."""
    tau_vec = np.broadcast_to(fr.from_int(tau), points.shape).copy()
    scale = (pow(tau, m, R) - 1) * pow(m, -1, R) % R
    return fr.scale(fr.mul(points, fr.batch_inverse(fr.sub(tau_vec, points))), scale)


def write_test_zkey(
    r1cs: CircomR1cs,
    path: str | Path,
    pool: MsmPool,
    *,
    seed: int | None = None,
    backend: Backend | None = None,
) -> Path:
    """Write an (insecure) snarkjs Groth16 key for ``r1cs`` to ``path``.

    Args:
        r1cs: the circuit.
        path: the .zkey to write.
        pool: worker pool for the fixed-base multiplications.
        seed: reproducible toxic waste (tests, benchmarks).
        backend: runs the fixed-base multiplications instead of ``pool`` when given (the
            CUDA backend turns minutes at 2^20 into a second).
    Raises:
        BadInput: the circuit needs a domain beyond 2^31 (snarkjs's limit for Groth16).
    """
    rng: random.Random = random.Random(seed) if seed is not None else secrets.SystemRandom()
    n, n_pub, n_vars = r1cs.num_constraints, r1cs.num_public, r1cs.num_wires
    m = snarkjs_domain_size(n, n_pub)
    log_m = m.bit_length() - 1
    if log_m >= FR_TWO_ADICITY:
        raise BadInput(f"{r1cs.path}: a domain of 2^{log_m} is too large for snarkjs Groth16")
    while True:
        tau = rng.randrange(2, R)
        if pow(tau, 2 * m, R) != 1:  # τ on the 2m-domain would divide by zero
            break
    alpha, beta, gamma, delta = (rng.randrange(1, R) for _ in range(4))

    lag = _lagrange(tau, fr.powers(snarkjs_root(log_m), m), m)
    u = r1cs.a.transpose().matvec(lag[:n])
    u[: n_pub + 1] = fr.add(u[: n_pub + 1], lag[n : n + n_pub + 1])  # the public rows
    v = r1cs.b.transpose().matvec(lag[:n])
    w = r1cs.c.transpose().matvec(lag[:n])
    mixed = fr.add(fr.add(fr.scale(u, beta), fr.scale(v, alpha)), w)
    ic = fr.scale(mixed[: n_pub + 1], pow(gamma, -1, R))
    c = fr.scale(mixed[n_pub + 1 :], pow(delta, -1, R))
    odd = fr.powers(snarkjs_root(log_m), m, start=snarkjs_odd_shift(log_m))
    h = fr.scale(_lagrange(tau, odd, 2 * m), pow(delta, -1, R))

    g1, g2 = g1_generator(), g2_generator()
    jobs: dict[str, tuple[Group, fr.FrVec]] = {
        "ic": ("g1", ic),
        "a": ("g1", u),
        "b1": ("g1", v),
        "b2": ("g2", v),
        "c": ("g1", c),
        "h": ("g1", h),
    }
    points = {}
    if backend is not None:
        for name, (group, scalars) in jobs.items():
            rows = backend.fixed_base(group, scalars)
            points[name] = zcash_to_lem(rows, group).tobytes()
    else:
        pending = {
            name: _fixed_base(pool, group, g1 if group == "g1" else g2, scalars)
            for name, (group, scalars) in jobs.items()
        }
        for name, futures in pending.items():
            group = jobs[name][0]
            size = 96 if group == "g1" else 192
            raw = b"".join(f.result() for f in futures)
            rows = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size)
            points[name] = zcash_to_lem(rows, group).tobytes()

    header = b"".join(
        [
            struct.pack("<I", FP_BYTES),
            P.to_bytes(FP_BYTES, "little"),
            struct.pack("<I", FR_BYTES),
            R.to_bytes(FR_BYTES, "little"),
            struct.pack("<III", n_vars, n_pub, m),
            _g1_lem(g1_mul(g1, alpha)),
            _g1_lem(g1_mul(g1, beta)),
            _g2_lem(g2_mul(g2, beta)),
            _g2_lem(g2_mul(g2, gamma)),
            _g1_lem(g1_mul(g1, delta)),
            _g2_lem(g2_mul(g2, delta)),
        ]
    )
    # snarkjs's own order of sections, which is not id order: readers must not assume one.
    sections = [
        (1, struct.pack("<I", GROTH16_PROTOCOL)),
        (2, header),
        (4, _coefficients(r1cs, n_pub)),
        (3, points["ic"]),
        (9, points["h"]),
        (8, points["c"]),
        (5, points["a"]),
        (6, points["b1"]),
        (7, points["b2"]),
        (10, bytes(64) + struct.pack("<I", 0)),  # circuit hash (unset), no contributions
    ]
    out = Path(path)
    with open(out, "wb") as f:
        f.write(b"zkey" + struct.pack("<II", 1, len(sections)))
        for sid, body in sections:
            f.write(struct.pack("<IQ", sid, len(body)))
            f.write(body)
    return out


def _fixed_base(pool: MsmPool, group: Group, base: G1 | G2, scalars: fr.FrVec) -> list[Future]:
    rows = fr.to_bytes_le(scalars)
    return [
        pool.fixed_base(group, base, rows[lo : lo + _CHUNK]) for lo in range(0, len(rows), _CHUNK)
    ]


def _g1_lem(p: G1) -> bytes:
    row = np.frombuffer(g1_to_bytes(p, compressed=False), dtype=np.uint8).reshape(1, 96)
    return zcash_to_lem(row, "g1").tobytes()


def _g2_lem(p: G2) -> bytes:
    row = np.frombuffer(g2_to_bytes(p, compressed=False), dtype=np.uint8).reshape(1, 192)
    return zcash_to_lem(row, "g2").tobytes()


def _coefficients(r1cs: CircomR1cs, n_pub: int) -> bytes:
    """Section 4: A entries (with the public rows), then B entries; values as coef·R²."""
    n = r1cs.num_constraints
    parts = []
    for which, mat in ((0, r1cs.a), (1, r1cs.b)):
        rows = np.repeat(np.arange(n, dtype=np.uint32), np.diff(mat.indptr))
        cols = mat.indices.astype(np.uint32)
        coeffs = mat.coeffs
        if which == 0:
            rows = np.concatenate([rows, np.arange(n, n + n_pub + 1, dtype=np.uint32)])
            cols = np.concatenate([cols, np.arange(n_pub + 1, dtype=np.uint32)])
            coeffs = np.concatenate([coeffs, fr.ones(n_pub + 1)])
        rec = np.empty(
            len(rows), dtype=[("m", "<u4"), ("c", "<u4"), ("s", "<u4"), ("v", "u1", (FR_BYTES,))]
        )
        rec["m"], rec["c"], rec["s"] = which, rows, cols
        rec["v"] = fr.to_bytes_le(fr.scale(coeffs, _R2))
        parts.append(rec.tobytes())
    count = sum(len(p) for p in parts) // (12 + FR_BYTES)
    return struct.pack("<I", count) + b"".join(parts)
