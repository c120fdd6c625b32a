"""Field laws and encodings as hypothesis properties on short vectors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk.field import fr
from cuzk.field.constants import R

elements = st.one_of(
    st.integers(min_value=0, max_value=R - 1),
    st.sampled_from([0, 1, 2, R - 1, R - 2, 2**64 - 1, 2**128, 2**254]),
)
vectors = st.lists(elements, min_size=1, max_size=16)
# deadline=None: the first example may include loading (or compiling) the numba kernels.
few = settings(max_examples=60, deadline=None)


@few
@given(vectors, vectors, vectors)
def test_ring_laws(xs: list[int], ys: list[int], zs: list[int]) -> None:
    n = min(len(xs), len(ys), len(zs))
    a, b, c = fr.from_ints(xs[:n]), fr.from_ints(ys[:n]), fr.from_ints(zs[:n])
    assert fr.equal(fr.add(a, b), fr.add(b, a))
    assert fr.equal(fr.mul(a, b), fr.mul(b, a))
    assert fr.equal(fr.mul(a, fr.add(b, c)), fr.add(fr.mul(a, b), fr.mul(a, c)))
    assert fr.equal(fr.sub(fr.add(a, b), b), a)
    assert fr.equal(fr.add(a, fr.neg(a)), fr.zeros(n))
    assert fr.to_ints(fr.mul(a, b)) == [x * y % R for x, y in zip(xs[:n], ys[:n], strict=True)]


@few
@given(st.lists(st.integers(min_value=1, max_value=R - 1), min_size=1, max_size=16))
def test_inverse_law(xs: list[int]) -> None:
    a = fr.from_ints(xs)
    assert fr.equal(fr.mul(a, fr.batch_inverse(a)), fr.ones(len(xs)))
    assert fr.equal(fr.inverse(a), fr.batch_inverse(a))


@few
@given(st.lists(st.integers(min_value=-(2**300), max_value=2**300), max_size=16))
def test_int_and_byte_encodings_round_trip(xs: list[int]) -> None:
    v = fr.from_ints(xs)
    assert fr.to_ints(v) == [x % R for x in xs]
    assert fr.equal(fr.from_bytes_le(fr.to_bytes_le(v).tobytes()), v)
