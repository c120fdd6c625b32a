"""snarkjs's Groth16 proving keys (``.zkey``).

Sections (ids as stored; the file may order them differently):

1. protocol: u32, 1 = Groth16 (2 PLONK, 10 FFLONK);
2. header: u32 n8q, q, u32 n8r, r, u32 nVars, u32 nPublic, u32 domainSize, then [α]₁ [β]₁
   [β]₂ [γ]₂ [δ]₁ [δ]₂;
3. IC: nPublic + 1 G1 points;
4. the QAP's A and B matrices: u32 count, then per entry u32 matrix (0 = A, 1 = B), u32 row
   (constraint), u32 column (wire), 32-byte coefficient stored as coef·R² mod r (R = 2^256);
   C is absent: the prover derives C·z as (A·z)∘(B·z);
5. A, 6. B₁ (G1), 7. B₂ (G2): one point per wire; 8. C: one per private wire (nPublic + 1 …);
9. H: domainSize G1 points, the odd Lagrange basis of the 2·domainSize domain over δ;
10. contributions (MPC transcript; not needed to prove).

Points are "LEM" (:mod:`cuzk.interop.points`). The reader checks the framing, every size
against the header, the header and IC points completely, and every matrix entry; the large
point sections are checked when they are translated for a backend (:mod:`.bases`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cuzk.curve import g1_identity
from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import FR_BYTES, FR_TWO_ADICITY, P, R
from cuzk.groth16.keys import VerifyingKey
from cuzk.interop.binfile import BinFile, Cursor, Section
from cuzk.interop.curves import describe_prime
from cuzk.interop.points import G1_LEM_SIZE, G2_LEM_SIZE, g1_from_lem, g2_from_lem
from cuzk.r1cs import CsrMatrix

ZKEY_SECTIONS = {
    1: "protocol",
    2: "Groth16 header",
    3: "IC points",
    4: "A/B coefficients",
    5: "A points",
    6: "B1 points",
    7: "B2 points",
    8: "C points",
    9: "H points",
    10: "contributions",
}
GROTH16_PROTOCOL = 1
_PROTOCOLS = {1: "Groth16", 2: "PLONK", 10: "FFLONK"}
_COEF = np.dtype([("m", "<u4"), ("c", "<u4"), ("s", "<u4"), ("v", "u1", (FR_BYTES,))])
# coef·R² → coef: the stored integer is R² times the coefficient.
_INV_R2 = pow(2, -512, R)


@dataclass(frozen=True)
class Zkey:
    """A snarkjs Groth16 proving key; point vectors stay in the file (see :attr:`vectors`)."""

    path: str  # the .zkey file
    n_vars: int  # wires, ONE included (the witness length)
    n_public: int  # public signals without ONE
    domain_size: int  # m: rows of the QAP, a power of two
    vk: VerifyingKey  # α, β, γ, δ and IC (β₁, δ₁ included: the prover needs them)
    a: CsrMatrix  # QAP A: m rows × n_vars columns, Montgomery coefficients
    b: CsrMatrix  # QAP B
    vectors: dict[str, Section]  # "a", "b1", "b2", "c", "h" → where the LEM points lie

    @property
    def log_domain(self) -> int:
        return self.domain_size.bit_length() - 1


@dataclass(frozen=True)
class ZkeyHeader:
    """A key's sizes, read without touching its points or coefficients (cheap: the engine
    reads it at every submit to size the job)."""

    path: str
    n_vars: int
    n_public: int
    domain_size: int
    coefficient_entries: int  # A and B entries of section 4
    point_bytes: int  # sections 5–9 together (the bases a prover keeps resident)


def read_zkey_header(path: str | os.PathLike[str]) -> ZkeyHeader:
    """The sizes of a Groth16 ``.zkey``; BadInput naming the file and section as
    :func:`read_zkey` does for the framing, protocol, curve and header checks."""
    with BinFile(path, "zkey", 2, ZKEY_SECTIONS) as f:
        protocol = int.from_bytes(f.body(1, 4), "little")
        if protocol != GROTH16_PROTOCOL:
            kind = _PROTOCOLS.get(protocol, f"protocol {protocol}")
            raise f.error(1, f"this is a {kind} key; cuzk proves Groth16 keys only")
        cur = Cursor(f, 2)
        q = cur.bigint(cur.u32("n8q"), "the base field prime q")
        r = cur.bigint(cur.u32("n8r"), "the scalar field prime r")
        if q != P or r != R:
            wrong = q if q != P else r
            raise f.error(
                2, f"the key is for {describe_prime(wrong)}; cuzk proves over BLS12-381 only"
            )
        n_vars, n_public, m = cur.u32("nVars"), cur.u32("nPublic"), cur.u32("domainSize")
        if m < 1 or m & (m - 1) or m.bit_length() - 1 > FR_TWO_ADICITY:
            raise f.error(2, f"domainSize {m} is not a power of two ≤ 2^{FR_TWO_ADICITY}")
        if n_vars < n_public + 1:
            raise f.error(2, f"nVars {n_vars} cannot hold ONE and {n_public} public signals")
        entries = Cursor(f, 4).u32("the number of entries")
        point_bytes = sum(f.section(sid).size for sid in range(5, 10))
    return ZkeyHeader(str(path), n_vars, n_public, m, entries, point_bytes)


def read_zkey(path: str | os.PathLike[str]) -> Zkey:
    """Read and validate a Groth16 ``.zkey`` file.

    Raises:
        BadInput: naming the file and section: not a zkey, not Groth16, another curve, a
            section missing, truncated or of a size the header contradicts, a header or IC
            point off the curve or out of the subgroup, a matrix entry out of range.
    """
    with BinFile(path, "zkey", 2, ZKEY_SECTIONS) as f:
        protocol = int.from_bytes(f.body(1, 4), "little")
        if protocol != GROTH16_PROTOCOL:
            kind = _PROTOCOLS.get(protocol, f"protocol {protocol}")
            raise f.error(1, f"this is a {kind} key; cuzk proves Groth16 keys only")
        n_vars, n_public, m, vk_points = _read_header(f)
        if m < 1 or m & (m - 1) or m.bit_length() - 1 > FR_TWO_ADICITY:
            raise f.error(2, f"domainSize {m} is not a power of two ≤ 2^{FR_TWO_ADICITY}")
        if n_vars < n_public + 1:
            raise f.error(2, f"nVars {n_vars} cannot hold ONE and {n_public} public signals")
        ic_raw = f.body(3, (n_public + 1) * G1_LEM_SIZE)
        ic = tuple(
            g1_from_lem(ic_raw[i * G1_LEM_SIZE : (i + 1) * G1_LEM_SIZE], f"{path}: IC[{i}]")
            for i in range(n_public + 1)
        )
        a, b = _read_coefficients(f, n_vars, m)
        sizes = {
            "a": (5, n_vars * G1_LEM_SIZE),
            "b1": (6, n_vars * G1_LEM_SIZE),
            "b2": (7, n_vars * G2_LEM_SIZE),
            "c": (8, (n_vars - n_public - 1) * G1_LEM_SIZE),
            "h": (9, m * G1_LEM_SIZE),
        }
        vectors = {}
        for name, (sid, size) in sizes.items():
            f.body(sid, size)  # checks presence and size
            vectors[name] = f.section(sid)
    alpha1, beta1, beta2, gamma2, delta1, delta2 = vk_points
    vk = VerifyingKey(alpha1, beta1, beta2, gamma2, delta1, delta2, ic)
    return Zkey(str(path), n_vars, n_public, m, vk, a, b, vectors)


def _read_header(f: BinFile) -> tuple[int, int, int, tuple]:
    cur = Cursor(f, 2)
    n8q = cur.u32("n8q")
    q = cur.bigint(n8q, "the base field prime q")
    n8r = cur.u32("n8r")
    r = cur.bigint(n8r, "the scalar field prime r")
    if q != P or r != R:
        wrong = q if q != P else r
        raise f.error(2, f"the key is for {describe_prime(wrong)}; cuzk proves over BLS12-381 only")
    n_vars = cur.u32("nVars")
    n_public = cur.u32("nPublic")
    m = cur.u32("domainSize")
    names = ("alpha_1", "beta_1", "beta_2", "gamma_2", "delta_1", "delta_2")
    points = []
    for name in names:
        g2 = name.endswith("_2")
        raw = cur.take(G2_LEM_SIZE if g2 else G1_LEM_SIZE, f"vk_{name}")
        what = f"{f.path}: section 2 (Groth16 header): vk_{name}"
        points.append(g2_from_lem(raw, what) if g2 else g1_from_lem(raw, what))
    cur.expect_end()
    if any(p == g1_identity() for p in (points[0], points[1], points[4])):
        raise f.error(2, "α, β or δ is the point at infinity")
    return n_vars, n_public, m, tuple(points)


def _read_coefficients(f: BinFile, n_vars: int, m: int) -> tuple[CsrMatrix, CsrMatrix]:
    """Section 4 → CSR matrices A and B (rows = constraints, columns = wires)."""
    count = Cursor(f, 4).u32("the number of entries")
    sec = f.section(4)
    if sec.size != 4 + count * _COEF.itemsize:
        raise f.error(
            4,
            f"declares {count} entries ({4 + count * _COEF.itemsize} bytes) but is "
            f"{sec.size} bytes",
        )
    entries = f.array(4, _COEF, count, offset=4)
    mat, row, col = (entries[k].astype(np.int64) for k in ("m", "c", "s"))
    for bad, why in (
        (mat > 1, "matrix id is not 0 (A) or 1 (B)"),
        (row >= m, f"row is ≥ domainSize {m}"),
        (col >= n_vars, f"wire is ≥ nVars {n_vars}"),
    ):
        if bad.any():
            k = int(np.argmax(bad))
            raise f.error(4, f"entry {k}: {why}")
    try:
        coeffs = fr.from_bytes_le(np.ascontiguousarray(entries["v"]))
    except BadInput as e:
        raise f.error(4, f"entry {str(e).removeprefix('scalar ')}") from e
    fr.scale_inplace(coeffs, _INV_R2)
    out = []
    for which in (0, 1):
        sel = np.flatnonzero(mat == which)
        order = sel[np.argsort(row[sel], kind="stable")]
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(row[order], minlength=m), out=indptr[1:])
        out.append(CsrMatrix.from_coeffs(indptr, col[order], coeffs[order], n_vars))
    return out[0], out[1]
