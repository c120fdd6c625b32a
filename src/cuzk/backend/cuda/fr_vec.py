"""Elementwise Fr kernels on one CUDA device (``fr_vec.cu``), on device arrays, and the tables
of powers they share: what the NTTs' pointwise steps, the MSMs' scalar plans and the a·b = c
combination have in common. :class:`~cuzk.backend.cuda.ntt.GpuNtt` builds on it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuzk.errors import BadInput
from cuzk.field import fr
from cuzk.field.constants import R

ELT = "fr_vec.cu"
#: Threads per block of the elementwise kernels.
ELT_THREADS = 256


@dataclass(frozen=True)
class PowTable:
    """scale·base^i = hi[i >> bits]·lo[i & (2^bits − 1)] for i < n, on the device."""

    lo: Any
    hi: Any
    bits: int


def _mont(x: int) -> np.ndarray:
    return fr.from_int(x).reshape(1, 4)


class GpuFr:
    """Elementwise Fr kernels on one :class:`~cuzk.backend.cuda.device.Gpu` (device FrVecs in
    and out, results in fresh arrays from CuPy's pool), and the tables they share."""

    def __init__(self, gpu: Any) -> None:
        self.gpu = gpu
        self._lock = threading.RLock()
        self._pow: dict[tuple[int, int, int, int | None], PowTable] = {}
        self._const: dict[int, Any] = {}

    # -- tables ----------------------------------------------------------------------------------
    def pow_table(self, base: int, scale: int, n: int, bits: int | None = None) -> PowTable:
        """Device tables of scale·base^i for i < n (built on the host with the CPU kernels):
        ``2^bits`` low entries (by default about √n, the least memory) and n / 2^bits high."""
        base, scale = base % R, scale % R
        n = max(1, n)
        key = (base, scale, n, bits)
        with self._lock:
            t = self._pow.get(key)
            if t is None:
                if bits is None:
                    bits = max(1, ((n - 1).bit_length() + 1) // 2)
                lo = fr.powers(base, 1 << bits)
                hi = fr.powers(pow(base, 1 << bits, R), -(-n >> bits), start=scale)
                t = PowTable(self.gpu.upload(lo), self.gpu.upload(hi), bits)
                self._pow[key] = t
            return t

    def const(self, x: int) -> Any:
        x %= R
        with self._lock:
            c = self._const.get(x)
            if c is None:
                c = self._const[x] = self.gpu.upload(_mont(x))
            return c

    # -- elementwise ---------------------------------------------------------------------------
    def _elementwise(self, name: str, n: int, *args: Any, stream: Any = None) -> None:
        blocks = max(1, min(-(-n // ELT_THREADS), self.gpu.sm_count * 16))
        self.gpu.launch(ELT, name, blocks, ELT_THREADS, args, stream=stream)

    def _binary(self, name: str, *vs: Any) -> Any:
        n = int(vs[0].shape[0])
        for v in vs:
            if tuple(v.shape) != (n, 4) or v.dtype != np.uint64:
                raise BadInput(f"{name}: operands must be (n, 4) uint64 of one length")
        with self.gpu.context():
            out = self.gpu.empty(n)
            if n:
                self._elementwise(name, n, out, *vs, np.int64(n))
        return out

    def add(self, a: Any, b: Any) -> Any:
        return self._binary("fr_vec_add", a, b)

    def sub(self, a: Any, b: Any) -> Any:
        return self._binary("fr_vec_sub", a, b)

    def mul(self, a: Any, b: Any) -> Any:
        return self._binary("fr_vec_mul", a, b)

    def mul_sub(self, a: Any, b: Any, c: Any) -> Any:
        """a·b − c."""
        return self._binary("fr_vec_mul_sub", a, b, c)

    def scale(self, v: Any, k: int) -> Any:
        """v·k for an integer constant k."""
        n = int(v.shape[0])
        words = [np.uint64(w) for w in fr.from_int(k)]
        with self.gpu.context():
            out = self.gpu.empty(n)
            if n:
                self._elementwise("fr_vec_scale", n, out, v, *words, np.int64(n))
        return out

    def scale_by_powers(self, v: Any, base: int, start: int = 1) -> Any:
        """v[i]·start·base^i (the coset shift)."""
        n = int(v.shape[0])
        with self.gpu.context():
            out = self.gpu.empty(n)
            if n:
                t = self.pow_table(base, start, n)
                self._elementwise(
                    "fr_vec_scale_powers",
                    n,
                    out,
                    v,
                    t.lo,
                    t.hi,
                    np.int32(t.bits),
                    np.int64(0),
                    np.int64(n),
                )
        return out

    def powers(self, base: int, n: int, start: int = 1) -> Any:
        """[start·base^i for i < n] on the device."""
        with self.gpu.context():
            out = self.gpu.empty(n)
            if n:
                t = self.pow_table(base, start, n)
                bits = np.int32(t.bits)
                self._elementwise("fr_vec_powers", n, out, t.lo, t.hi, bits, np.int64(n))
        return out

    def combine(self, a: Any, b: Any, powers: PowTable, partials: Any) -> None:
        """partials[j] ← block j's share of Σ ρ^i·a[i]·b[i] (Σ ρ^i·a[i] with ``b`` None), ρ^i
        from ``powers``: one row of ``partials`` per block, whose count sets the grid."""
        n = int(a.shape[0])
        self.gpu.launch(ELT, "fr_vec_rlc", int(partials.shape[0]), ELT_THREADS,
                        (partials, a, b, powers.lo, powers.hi, np.int32(powers.bits),
                         np.int64(n)))  # fmt: skip

    def sums_equal(self, equal: Any, p: Any, q: Any) -> None:
        """equal[0] ← 1 if Σ p = Σ q (two rows of partial sums), else 0; one block."""
        self.gpu.launch(ELT, "fr_vec_sums_equal", 1, ELT_THREADS,
                        (equal, p, q, np.int64(p.shape[0])))  # fmt: skip

    def classify(self, v: Any, stream: Any = None) -> Any:
        """int8 per element: 0 zero, 1 one, 2 otherwise (as cuzk.field.fr.classify), queued on
        ``stream`` (default: the compute stream)."""
        n = int(v.shape[0])
        with self.gpu.context(stream), self.gpu.guard("classifying scalars"):
            out = self.gpu.cp.empty(n, dtype=np.int8)  # in ``stream``'s pool
            if n:
                self._elementwise("fr_vec_classify", n, out, v, np.int64(n), stream=stream)
        return out

    def split_plan(self, v: Any) -> tuple[Any, Any]:
        """(indices of ones, indices of the others that are not zero) as device arrays: the
        split MSM's plan (cf. cuzk.backend.base.MsmPlan). int32 below 2^31 scalars: a PoRep
        partition's L and B plans are then 1 GB, not 2, while the H quotient runs beside them."""
        kinds = self.classify(v)
        xp = self.gpu.xp
        index = xp.int32 if int(v.shape[0]) < 1 << 31 else xp.int64
        with self.gpu.context():
            return (
                xp.flatnonzero(kinds == 1).astype(index),
                xp.flatnonzero(kinds == 2).astype(index),
            )
