"""NTTs and the Groth16 H quotient on one CUDA device, on device arrays.

Conventions are :mod:`cuzk.poly`'s (bellperson's): ω = FR_ROOT_OF_UNITY^(2^(32 − log m)),
iNTT scales by m⁻¹, the coset is g·⟨ω⟩ with g = 7, coset iNTT multiplies coefficient i by g⁻ⁱ;
inputs shorter than m are zero-padded, orders are natural in and out.

Every transform is a few passes of ``ntt.cu`` (each runs ≤ 9 radix-2 stages on tiles of
≤ 2^11 points in shared memory): 2^24 takes three passes, 2^27 three. The plain transforms are
DIF passes whose last pass writes in bit-reversed position (so the output is natural). The H
pipeline never permutes: per input an inverse DIF (natural → bit-reversed coefficients) and a
forward DIT whose loads multiply by m⁻¹·gᵏ (bit-reversed coefficients → natural coset values),
then one inverse DIF whose loads compute a·b − c and whose last pass permutes and multiplies by
m⁻¹·(gᵐ − 1)⁻¹·g⁻ⁱ. Scaling by powers uses two small tables per (base, scale, m) (one
multiplication per element); butterfly twiddles come from one table of ω^j per device, kept at
the largest domain seen and read with a stride for smaller ones (under a memory cap, from two
tables whose high one holds 2^20 entries: :data:`COMPACT_TWIDDLE_HI_LOG`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuzk.backend.cuda.fr_vec import GpuFr, PowTable
from cuzk.errors import BadInput
from cuzk.field.constants import FR_GENERATOR, R
from cuzk.poly.domain import Domain, root_of_unity

SRC = "ntt.cu"

#: log2 of the most points one block holds (2^11 · 32 B = 64 KiB of shared memory).
TILE_LOG = 11
#: log2 of the groups a block takes when the group's points are strided (4 · 32 B = 128 B rows).
GROUP_LOG = 2
#: Threads per block of the NTT passes.
THREADS = 256
#: log2 of the entries of compact twiddles' high table (2^20 · 32 B = 32 MiB; a smaller domain
#: keeps one whole table, no larger). ω^j = lo[j mod 2^b]·hi[j >> b] costs a product, except in
#: the stages whose exponents are multiples of 2^b, which read hi alone: the larger hi, the
#: smaller b and the more such stages (20 of the 26 of a 2^27 transform, against 13 with two
#: tables of √ the size).
COMPACT_TWIDDLE_HI_LOG = 20

# flags of ntt.cu
LOAD_BITREV = 1
STORE_BITREV = 2
LOAD_POW = 4
STORE_POW = 8
POW_BITREV = 16
LOAD_MULSUB = 32
STORE_CONST = 64

_G_INV = pow(FR_GENERATOR, -1, R)


def pass_sizes(log_m: int, tile_log: int | None = None, group_log: int | None = None) -> list[int]:
    """Stages per pass, in DIF order (the first pass takes the top bits), balanced."""
    tile_log = TILE_LOG if tile_log is None else tile_log
    group_log = GROUP_LOG if group_log is None else group_log
    if log_m <= tile_log:
        return [log_m]
    kmax = tile_log - group_log
    passes = -(-log_m // kmax)
    base, extra = divmod(log_m, passes)
    return [base + 1] * extra + [base] * (passes - extra)


class GpuNtt(GpuFr):
    """Transforms on one :class:`~cuzk.backend.cuda.device.Gpu` (device arrays in and out).

    Tables (twiddles, powers, constants) are built once per device and size and kept; the H
    pipeline's three work buffers are kept at the largest domain seen.
    """

    def __init__(
        self,
        gpu: Any,
        *,
        compact_twiddles: bool = False,
        twiddle_hi_log: int = COMPACT_TWIDDLE_HI_LOG,
    ) -> None:
        """``compact_twiddles``: butterflies of a domain over 2^(twiddle_hi_log + 1) read ω^e
        from two tables, the high one of 2^twiddle_hi_log entries (a product in a quarter of
        the stages of 2^27), instead of one of m/2 entries (2 GiB at 2^27): under a memory
        cap. (Tests lower ``twiddle_hi_log`` to take that path on small domains.)"""
        super().__init__(gpu)
        self.compact_twiddles = compact_twiddles
        self.twiddle_hi_log = twiddle_hi_log
        self._tw: PowTable | None = None
        self._tw_log = -1
        self._work: list[Any] = []
        self._work_m = 0

    def twiddles(self, log_m: int) -> tuple[PowTable, int]:
        """(table of ω_T^j for j < 2^(T−1), stride shift T − log_m) with T ≥ log_m: one
        table (``bits`` 0) or, with compact twiddles, ω_T^j = lo[j mod 2^bits]·hi[j >> bits]."""
        with self._lock:
            if self._tw is None or self._tw_log < log_m:
                half = 1 << (log_m - 1)
                bits = None
                if self.compact_twiddles and log_m - 1 > self.twiddle_hi_log:
                    bits = log_m - 1 - self.twiddle_hi_log
                t = self.pow_table(root_of_unity(log_m), 1, half, bits)
                # the per-size tables of ω are only needed to build this one (or are it)
                self._pow.pop((root_of_unity(log_m), 1, half, bits), None)
                if bits is None:  # one whole table
                    tw = self.gpu.empty(half)
                    self._elementwise(
                        "fr_vec_powers", half, tw, t.lo, t.hi, np.int32(t.bits), np.int64(half)
                    )
                    t = PowTable(tw, None, 0)
                self._tw, self._tw_log = t, log_m
            return self._tw, self._tw_log - log_m

    def work_buffers(self, m: int) -> list[Any]:
        """Three persistent length-m scratch vectors (views of buffers of the largest m)."""
        with self._lock:
            if self._work_m < m:
                self._work = []  # free the old ones first
                self._work = [self.gpu.empty(m) for _ in range(3)]
                self._work_m = m
            return [w[:m] for w in self._work]

    # -- kernel plumbing -------------------------------------------------------------------------
    def _transform(
        self,
        *,
        dit: bool,
        inv: bool,
        log_m: int,
        src: Any,
        n_src: int,
        work: Any,
        out: Any,
        load: int = 0,
        store: int = 0,
        pw: PowTable | None = None,
        cst: Any = None,
        src_b: Any = None,
        src_c: Any = None,
    ) -> None:
        """Run every pass of one transform: the first reads ``src`` (zero beyond n_src),
        the middle ones work in place on ``work``, the last writes ``out``."""
        ks = pass_sizes(log_m)
        if dit:
            ks = ks[::-1]
        tw, tw_shift = self.twiddles(log_m)
        name = ("ntt_dit_" if dit else "ntt_dif_") + ("inv" if inv else "fwd")
        covered = 0
        for p, k in enumerate(ks):
            first, last = p == 0, p == len(ks) - 1
            R_ = covered if dit else log_m - covered - k
            covered += k
            flags = (load if first else 0) | (store if last else 0)
            if (flags & LOAD_POW) and (flags & STORE_POW):
                raise AssertionError("one pass takes one table of powers")
            if not first:
                flags &= ~(LOAD_BITREV | LOAD_MULSUB)
            if (flags & (LOAD_POW | STORE_POW)) == 0:
                flags &= ~POW_BITREV
            s = src if first else work
            d = out if last else work
            q = log_m - k
            gg = min(GROUP_LOG, q)
            tile = 1 << (k + gg)
            threads = min(THREADS, max(32, tile // 2))
            self.gpu.launch(
                SRC,
                name,
                1 << (q - gg),
                threads,
                (
                    d,
                    s,
                    src_b if first else None,
                    src_c if first else None,
                    np.int64(n_src if first else 1 << log_m),
                    tw.lo,
                    tw.hi,
                    np.int32(tw.bits),
                    np.int32(tw_shift),
                    pw.lo if pw is not None else None,
                    pw.hi if pw is not None else None,
                    np.int32(pw.bits if pw is not None else 0),
                    cst,
                    np.int32(log_m),
                    np.int32(R_),
                    np.int32(k),
                    np.int32(GROUP_LOG),
                    np.int32(flags),
                ),
                smem=tile * 32,
            )

    # -- public transforms (device arrays) -------------------------------------------------------
    def _check(self, v: Any, domain: Domain) -> int:
        if v.ndim != 2 or v.shape[1] != 4 or v.dtype != np.uint64:
            raise BadInput(f"expected an (n, 4) uint64 device FrVec, got {v.shape} {v.dtype}")
        if not v.flags.c_contiguous:
            raise BadInput("device FrVec must be C-contiguous")
        n = int(v.shape[0])
        if n > domain.m:
            raise BadInput(f"{n} values do not fit a domain of {domain.m}")
        return n

    def _trivial(self, v: Any, n: int, domain: Domain) -> Any:
        """m = 1: every transform is the identity on the (padded) single value."""
        out = self.gpu.empty(1)
        if n:
            out[...] = v[:1]
        else:
            out.fill(0)
        return out

    def ntt(self, v: Any, domain: Domain, *, coset: bool = False, out: Any = None) -> Any:
        """Coefficients → values at ω^i (g·ω^i with ``coset``), length m."""
        n = self._check(v, domain)
        with self.gpu.context():
            if domain.log_m == 0:
                return self._trivial(v, n, domain)
            m, L = domain.m, domain.log_m
            out = self.gpu.empty(m) if out is None else out
            work = self.gpu.empty(m) if len(pass_sizes(L)) > 1 else None
            pw = self.pow_table(domain.coset_shift, 1, m) if coset else None
            self._transform(
                dit=False,
                inv=False,
                log_m=L,
                src=v,
                n_src=n,
                work=work,
                out=out,
                load=LOAD_POW if coset else 0,
                store=STORE_BITREV,
                pw=pw,
            )
            return out

    def intt(self, v: Any, domain: Domain, *, coset: bool = False, out: Any = None) -> Any:
        """Values at ω^i (g·ω^i with ``coset``) → coefficients, length m."""
        n = self._check(v, domain)
        with self.gpu.context():
            if domain.log_m == 0:
                return self._trivial(v, n, domain)
            m, L = domain.m, domain.log_m
            out = self.gpu.empty(m) if out is None else out
            work = self.gpu.empty(m) if len(pass_sizes(L)) > 1 else None
            if coset:
                pw, cst, store = self.pow_table(_G_INV, domain.m_inv, m), None, STORE_POW
            else:
                pw, cst, store = None, self.const(domain.m_inv), STORE_CONST
            self._transform(
                dit=False,
                inv=True,
                log_m=L,
                src=v,
                n_src=n,
                work=work,
                out=out,
                store=STORE_BITREV | store,
                pw=pw,
                cst=cst,
            )
            return out

    def h_quotient(self, a: Any, b: Any, c: Any, domain: Domain, *, out: Any = None) -> Any:
        """Coefficients of h = (A·B − C)/Z on device: length m − 1 (a view of a length-m
        array). a, b, c: device FrVecs of one length n ≤ m (zero-padded)."""
        n = self._check(a, domain)
        if self._check(b, domain) != n or self._check(c, domain) != n:
            raise BadInput("a, b and c must have the same length")
        m, L = domain.m, domain.log_m
        with self.gpu.context():
            if L == 0:
                return self.gpu.empty(0)
            in_place = out is None and [_capacity(x, m) for x in (a, b, c)]
            if in_place and all(x is not None for x in in_place):
                wa, wb, wc = in_place
                return self._quotient(a, b, c, wa, wb, wc, wb, n, domain)[: m - 1]
            out = self.gpu.empty(m) if out is None else out
            with self._lock:
                wa, wb, wc = self.work_buffers(m)
                return self._quotient(a, b, c, wa, wb, wc, out, n, domain)[: m - 1]

    def _quotient(
        self, a: Any, b: Any, c: Any, wa: Any, wb: Any, wc: Any, out: Any, n: int, domain: Domain
    ) -> Any:
        """The H pipeline from a, b, c (n values each) through the length-m buffers wa, wb, wc
        (which may be a, b, c themselves, zero-padded: then nothing else is allocated) into
        ``out`` (length m; wb in place: the last pass reads only wa)."""
        coset_in = self.pow_table(domain.coset_shift, domain.m_inv, domain.m)
        for x, w in ((a, wa), (b, wb), (c, wc)):
            self._to_coset(x, w, n, domain, coset_in)
        return self._from_coset(wa, out, domain, wb, wc)

    def h_quotient_two(self, a: Any, b: Any, fill_c: Callable[[Any], Any], domain: Domain) -> Any:
        """h as :meth:`h_quotient` makes it, in the two zero-padded length-m buffers a and b
        head (:func:`_capacity`; h ends in b's), with c made only once a·b is formed:
        ``fill_c(out)`` writes c's n values into ``out``. Two vectors of the domain instead of
        three (4 GiB less at PoRep 32 GiB); the a·b = c check under a cap is finished where
        c is made (the backend's ``fill_c``, :mod:`~cuzk.backend.cuda.abc_check`)."""
        n = self._check(a, domain)
        if self._check(b, domain) != n:
            raise BadInput("a and b must have the same length")
        m, L = domain.m, domain.log_m
        with self.gpu.context():
            if L == 0:
                return self.gpu.empty(0)
            wa, wb = _capacity(a, m), _capacity(b, m)
            if wa is None or wb is None:
                raise BadInput("a and b must head zero-padded buffers of the domain")
            coset_in = self.pow_table(domain.coset_shift, domain.m_inv, m)
            self._to_coset(a, wa, n, domain, coset_in)
            self._to_coset(b, wb, n, domain, coset_in)
            self._elementwise("fr_vec_mul", m, wa, wa, wb, np.int64(m))  # in place: a·b
            fill_c(wb[:n])
            self._to_coset(wb[:n], wb, n, domain, coset_in)  # reads c's n values, zero beyond
            self._elementwise("fr_vec_sub", m, wa, wa, wb, np.int64(m))  # a·b − c
            return self._from_coset(wa, wb, domain)[: m - 1]

    def _from_coset(self, wa: Any, out: Any, domain: Domain, wb: Any = None, wc: Any = None) -> Any:
        """The H pipeline's last step: wa (or wa·wb − wc on load, given wb and wc), values on
        the coset, divided by Z there and taken back to coefficients in ``out``. ``out`` is
        never wa: the last pass stores bit-reversed, across tiles, so it cannot run in place."""
        z_inv = domain.vanishing_on_coset_inv()
        coset_out = self.pow_table(_G_INV, domain.m_inv * z_inv, domain.m)
        self._transform(
            dit=False,
            inv=True,
            log_m=domain.log_m,
            src=wa,
            src_b=wb,
            src_c=wc,
            n_src=domain.m,
            work=wa,
            out=out,
            load=LOAD_MULSUB if wb is not None else 0,
            store=STORE_BITREV | STORE_POW,
            pw=coset_out,
        )
        return out

    def _to_coset(self, x: Any, w: Any, n: int, domain: Domain, coset_in: PowTable) -> None:
        """Values x (n of them, zero beyond) → values on the coset g·⟨ω⟩ in the length-m
        buffer w (which x may head)."""
        m, L = domain.m, domain.log_m
        # values → m·coefficients, bit-reversed order
        self._transform(dit=False, inv=True, log_m=L, src=x, n_src=n, work=w, out=w)
        # × m⁻¹·g^k on load, then → values on the coset, natural order
        self._transform(
            dit=True,
            inv=False,
            log_m=L,
            src=w,
            n_src=m,
            work=w,
            out=w,
            load=LOAD_POW | POW_BITREV,
            pw=coset_in,
        )


def _capacity(x: Any, m: int) -> Any:
    """The length-m buffer ``x`` heads (x = buffer[:n], zero beyond: what the CUDA backend's
    evaluate_abc returns), or None."""
    base = getattr(x, "base", None)
    if base is None or base.ndim != 2 or base.shape[0] < m or base.shape[1] != 4:
        return None
    if base.data.ptr != x.data.ptr or not base.flags.c_contiguous:
        return None
    return base[:m]
