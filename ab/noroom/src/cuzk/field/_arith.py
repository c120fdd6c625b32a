"""Single-element Fr arithmetic for numba kernels, emitted directly as LLVM IR.

An element travels through a kernel as a ``UniTuple(uint64, 4)`` (little-endian limbs, Montgomery
form) so LLVM keeps it in registers. Every operation here is a numba ``@intrinsic``: its body is
generated straight into the calling kernel's IR. That matters twice over:

* numba has no 64×64→128 multiply; the IR uses ``i128`` and LLVM lowers it to ``mulx``/``adc``.
* numba does not inline one ``@njit`` function into another at the LLVM level (each is linked
  as a separate library), and its own ``inline="always"`` makes compiles several times slower.
  A call per multiplication would cost about a third of the throughput.

numba's on-disk cache keys a kernel on its own source file only: after editing this module,
delete the ``__pycache__/*.nbi``/``*.nbc`` files of the modules whose kernels use it, or they
keep running the old code.

Only the cold helpers (:func:`mont_pow`, :func:`mont_inv`) are ordinary ``@njit`` functions.
This module is the kernel-building vocabulary for every numba kernel in cuzk (field, poly, and
any later layer): ``load``/``store`` a row, ``mul``/``add``/``sub``/… on elements.

Everything is strictly ``uint64``: numba promotes ``uint64`` mixed with ``int64`` to ``float64``,
so the intrinsics refuse any other element type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from cuzk.field.constants import MONT_R, R

_MASK64 = (1 << 64) - 1
_I64 = ir.IntType(64)
_I128 = ir.IntType(128)

ELEM = types.UniTuple(types.uint64, 4)


def limbs(x: int) -> tuple[int, int, int, int]:
    """Little-endian 64-bit limbs of a 256-bit non-negative integer."""
    return (x & _MASK64, (x >> 64) & _MASK64, (x >> 128) & _MASK64, (x >> 192) & _MASK64)


Q = limbs(R)
#: −r⁻¹ mod 2^64, the per-word Montgomery reduction factor.
QINV = (-pow(R, -1, 2**64)) % 2**64
#: Montgomery form of 1.
ONE = limbs(MONT_R)
#: 2^512 mod r: a Montgomery product with it turns a canonical value into Montgomery form.
R2 = limbs(pow(2, 512, R))

# The "no-carry" CIOS variant below needs the top limb of r below (2^64 − 1)/2 − 1.
assert Q[3] < 2**63 - 2


# --- IR building blocks (plain Python, run at kernel compile time) ---------------------------

Vals = list[ir.Value]


def _c64(x: int) -> ir.Constant:
    return ir.Constant(_I64, x)


def _split(builder: ir.IRBuilder, t: ir.Value) -> tuple[ir.Value, ir.Value]:
    lo = builder.trunc(t, _I64)
    hi = builder.trunc(builder.lshr(t, ir.Constant(_I128, 64)), _I64)
    return lo, hi


def _mac(
    builder: ir.IRBuilder, a: ir.Value, b: ir.Value, c: ir.Value, d: ir.Value
) -> tuple[ir.Value, ir.Value]:
    # a·b + c + d < 2^128 for 64-bit inputs, so one i128 holds it exactly.
    z = builder.zext
    t = builder.add(builder.add(builder.mul(z(a, _I128), z(b, _I128)), z(c, _I128)), z(d, _I128))
    return _split(builder, t)


def _add_n(builder: ir.IRBuilder, a: Vals, b: Vals) -> tuple[Vals, ir.Value]:
    """Multi-limb a + b; returns limbs and the carry out (i64 0/1)."""
    out, carry = [], _c64(0)
    for x, y in zip(a, b, strict=True):
        t = builder.add(
            builder.add(builder.zext(x, _I128), builder.zext(y, _I128)),
            builder.zext(carry, _I128),
        )
        lo, carry = _split(builder, t)
        out.append(lo)
    return out, carry


def _sub_n(builder: ir.IRBuilder, a: Vals, b: Vals) -> tuple[Vals, ir.Value]:
    """Multi-limb a − b; returns limbs and the borrow out as an i1."""
    out, borrow = [], _c64(0)
    for x, y in zip(a, b, strict=True):
        t = builder.sub(
            builder.sub(builder.zext(x, _I128), builder.zext(y, _I128)),
            builder.zext(borrow, _I128),
        )
        lo = builder.trunc(t, _I64)
        borrow = builder.trunc(builder.lshr(t, ir.Constant(_I128, 127)), _I64)
        out.append(lo)
    return out, builder.trunc(borrow, ir.IntType(1))


def _reduce_once(builder: ir.IRBuilder, t: Vals) -> Vals:
    """t − r if t ≥ r; t must be < 2r."""
    d, borrow = _sub_n(builder, t, [_c64(q) for q in Q])
    return [builder.select(borrow, x, y) for x, y in zip(t, d, strict=True)]


def _mont_mul(builder: ir.IRBuilder, a: Vals, b: Vals) -> Vals:
    # CIOS without the final carry word: valid because r's top limb is < 2^63 − 2, so the
    # running value never needs a fifth limb. Output < 2r before the last conditional subtract.
    zero = _c64(0)
    t = [zero, zero, zero, zero]
    for bi in b:
        t[0], A = _mac(builder, a[0], bi, t[0], zero)
        m = builder.mul(t[0], _c64(QINV))
        _, C = _mac(builder, m, _c64(Q[0]), t[0], zero)
        for j in range(1, 4):
            t[j], A = _mac(builder, a[j], bi, t[j], A)
            t[j - 1], C = _mac(builder, m, _c64(Q[j]), t[j], C)
        t[3] = builder.add(C, A)
    return _reduce_once(builder, t)


def _mod_add(builder: ir.IRBuilder, a: Vals, b: Vals) -> Vals:
    s, _ = _add_n(builder, a, b)  # r < 2^255: the raw sum never needs a fifth limb
    return _reduce_once(builder, s)


def _mod_sub(builder: ir.IRBuilder, a: Vals, b: Vals) -> Vals:
    d, borrow = _sub_n(builder, a, b)
    # Add r back under a mask rather than a branch: the borrow is data-dependent.
    mask = builder.sext(borrow, _I64)
    fix = [builder.and_(mask, _c64(q)) for q in Q]
    s, _ = _add_n(builder, d, fix)
    return s


def _mod_neg(builder: ir.IRBuilder, a: Vals) -> Vals:
    d, _ = _sub_n(builder, [_c64(q) for q in Q], a)
    nonzero = builder.icmp_unsigned("!=", _or_all(builder, a), _c64(0))
    mask = builder.sext(nonzero, _I64)
    return [builder.and_(x, mask) for x in d]


def _or_all(builder: ir.IRBuilder, a: Vals) -> ir.Value:
    acc = a[0]
    for x in a[1:]:
        acc = builder.or_(acc, x)
    return acc


def _unpack(builder: ir.IRBuilder, tup: ir.Value) -> Vals:
    return [builder.extract_value(tup, k) for k in range(4)]


def _pack(context: Any, builder: ir.IRBuilder, vals: Sequence[ir.Value]) -> ir.Value:
    return context.make_tuple(builder, ELEM, list(vals))


def _elementwise(
    arity: int, body: Callable[[ir.IRBuilder, list[Vals]], Vals]
) -> Callable[..., Any]:
    """Wrap an IR generator over ``arity`` elements as a numba intrinsic returning an element.

    The typer needs a fixed Python signature (numba folds ``*args`` into one tuple argument).
    """

    def codegen(context, builder, signature, llargs):
        vals = [_unpack(builder, x) for x in llargs]
        return _pack(context, builder, body(builder, vals))

    if arity == 1:

        def unary(typingctx, x):
            return (ELEM(ELEM), codegen) if x == ELEM else None

        return unary

    def binary(typingctx, x, y):
        return (ELEM(ELEM, ELEM), codegen) if x == ELEM and y == ELEM else None

    return binary


# --- The intrinsics kernels use -----------------------------------------------------------------

#: Montgomery product a·b·2^−256 mod r of two reduced elements.
mul = intrinsic(_elementwise(2, lambda b, v: _mont_mul(b, v[0], v[1])))
add = intrinsic(_elementwise(2, lambda b, v: _mod_add(b, v[0], v[1])))
sub = intrinsic(_elementwise(2, lambda b, v: _mod_sub(b, v[0], v[1])))
neg = intrinsic(_elementwise(1, lambda b, v: _mod_neg(b, v[0])))
square = intrinsic(_elementwise(1, lambda b, v: _mont_mul(b, v[0], v[0])))
#: Canonical (< r) → Montgomery form.
to_mont = intrinsic(_elementwise(1, lambda b, v: _mont_mul(b, v[0], [_c64(x) for x in R2])))
#: Montgomery form → canonical: a Montgomery product with plain 1.
from_mont = intrinsic(
    _elementwise(1, lambda b, v: _mont_mul(b, v[0], [_c64(1), _c64(0), _c64(0), _c64(0)]))
)
#: x − r if x ≥ r, for any x < 2r (canonicalises a value read from outside).
reduce_once = intrinsic(_elementwise(1, lambda b, v: _reduce_once(b, v[0])))


@intrinsic
def geq_modulus(typingctx, x):
    """True if the limbs, read as an integer, are ≥ r (not a canonical scalar)."""
    if x != ELEM:
        return None

    def codegen(context, builder, signature, args):
        _, borrow = _sub_n(builder, _unpack(builder, args[0]), [_c64(q) for q in Q])
        return builder.not_(borrow)

    return types.boolean(ELEM), codegen


@intrinsic
def is_zero(typingctx, x):
    if x != ELEM:
        return None

    def codegen(context, builder, signature, args):
        return builder.icmp_unsigned("==", _or_all(builder, _unpack(builder, args[0])), _c64(0))

    return types.boolean(ELEM), codegen


@intrinsic
def is_one(typingctx, x):
    """True for the Montgomery form of 1."""
    if x != ELEM:
        return None

    def codegen(context, builder, signature, args):
        v = _unpack(builder, args[0])
        diff = [builder.xor(a, _c64(o)) for a, o in zip(v, ONE, strict=True)]
        return builder.icmp_unsigned("==", _or_all(builder, diff), _c64(0))

    return types.boolean(ELEM), codegen


def _row_pointers(context, builder, signature, args):
    """Pointers to the four limbs of row ``args[1]`` of the array ``args[0]``."""
    aryty, idxty = signature.args[0], signature.args[1]
    arr = context.make_array(aryty)(context, builder, args[0])
    i = context.cast(builder, args[1], idxty, types.intp)
    # C-contiguous (n, 4) rows: element [i, 0] sits at data + 4·i.
    base = builder.gep(arr.data, [builder.mul(i, ir.Constant(i.type, 4))])
    return [builder.gep(base, [ir.Constant(i.type, k)]) for k in range(4)]


def _is_row_array(aryty: types.Type) -> bool:
    return (
        isinstance(aryty, types.Array)
        and aryty.dtype == types.uint64
        and aryty.ndim == 2
        and aryty.layout == "C"
    )


@intrinsic
def load(typingctx, ary, idx):
    """Row ``idx`` of a C-contiguous (n, 4) uint64 array, unchecked (no wraparound, no bounds)."""
    if not _is_row_array(ary) or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ptrs = _row_pointers(context, builder, signature, args)
        return _pack(context, builder, [builder.load(p) for p in ptrs])

    return ELEM(ary, idx), codegen


@intrinsic
def store(typingctx, ary, idx, x):
    """Write element ``x`` to row ``idx``, unchecked."""
    if not _is_row_array(ary) or not isinstance(idx, types.Integer) or x != ELEM:
        return None

    def codegen(context, builder, signature, args):
        ptrs = _row_pointers(context, builder, signature, args)
        for p, v in zip(ptrs, _unpack(builder, args[2]), strict=True):
            builder.store(v, p)
        return context.get_dummy_value()

    return types.void(ary, idx, x), codegen


# --- Cold helpers -----------------------------------------------------------------------------

ZERO_T = (np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0))
ONE_T = tuple(np.uint64(x) for x in ONE)
_INV_EXP = tuple(np.uint64(x) for x in limbs(R - 2))


@njit(cache=True, nogil=True)
def mont_pow(a, e):
    """a^e for a 256-bit exponent given as a limb tuple; square-and-multiply from the top."""
    acc = ONE_T
    for k in range(3, -1, -1):
        limb = e[k]
        for bit in range(63, -1, -1):
            acc = square(acc)
            if (limb >> np.uint64(bit)) & np.uint64(1):
                acc = mul(acc, a)
    return acc


@njit(cache=True, nogil=True)
def mont_inv(a):
    """a^(r−2) = a⁻¹ by Fermat; zero maps to zero, so callers check for it first."""
    return mont_pow(a, _INV_EXP)
