"""Radix-2 domains: sizes, roots of unity, cached tables, immutability."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk.field import fr
from cuzk.field.constants import FR_ROOT_OF_UNITY, R
from cuzk.poly import Domain, root_of_unity


@pytest.mark.parametrize("log_m", [0, 1, 2, 5, 16, 32])
def test_domain_roots(log_m: int) -> None:
    d = Domain(1 << log_m)
    assert d.m == 1 << log_m and d.log_m == log_m
    assert d.omega == pow(FR_ROOT_OF_UNITY, 1 << (32 - log_m), R)
    assert pow(d.omega, d.m, R) == 1
    if log_m:
        assert pow(d.omega, d.m // 2, R) == R - 1  # primitive
    assert d.omega * d.omega_inv % R == 1
    assert d.m * d.m_inv % R == 1
    assert d.coset_shift == 7
    assert (pow(7, d.m, R) - 1) * d.vanishing_on_coset_inv() % R == 1


@pytest.mark.parametrize("bad", [0, 3, 6, 1 << 33, -4, 2.0])
def test_domain_rejects_bad_sizes(bad) -> None:
    with pytest.raises(ValueError):
        Domain(bad)


@pytest.mark.parametrize(
    ("n", "m"), [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (1000, 1024), (1025, 2048)]
)
def test_for_size(n: int, m: int) -> None:
    assert Domain.for_size(n).m == m
    assert Domain.for_size(np.int64(n)) == Domain(np.int64(m))


def test_for_size_rejects_empty() -> None:
    with pytest.raises(ValueError):
        Domain.for_size(0)


def test_immutable_and_hashable() -> None:
    d = Domain(8)
    with pytest.raises(AttributeError):
        d.m = 16  # type: ignore[misc]
    assert d == Domain(8) and hash(d) == hash(Domain(8)) and d != Domain(16)


def test_omega_powers_are_cached_and_correct() -> None:
    d = Domain(256)
    t = d.omega_powers(4)
    assert t is d.omega_powers(4)
    assert not t.flags.writeable
    assert fr.to_ints(t) == [pow(d.omega, 4 * k, R) for k in range(256 // 8)]
    assert fr.to_ints(Domain(2).omega_powers(4)) == [1]


def test_root_of_unity_range() -> None:
    assert root_of_unity(0) == 1
    with pytest.raises(ValueError):
        root_of_unity(33)
