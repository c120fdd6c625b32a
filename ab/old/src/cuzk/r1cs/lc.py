"""Variables and linear combinations: the vocabulary circuits are written in.

A variable is an index into one of two vectors: the public inputs (index 0 is the constant ONE)
or the private auxiliary values. Internally both live in one integer ``key`` (inputs are
negative: ``~index``) so that a linear combination is a plain ``dict[int, int]`` — the cheapest
mapping Python has, which matters when shape synthesis visits millions of terms.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from cuzk.field.constants import R


class Variable:
    """One wire of the circuit: an input (``is_input``) or an auxiliary value."""

    __slots__ = ("key",)

    def __init__(self, key: int) -> None:
        self.key = key

    @classmethod
    def input(cls, index: int) -> Variable:
        return cls(~index)

    @classmethod
    def aux(cls, index: int) -> Variable:
        return cls(index)

    @property
    def is_input(self) -> bool:
        return self.key < 0

    @property
    def index(self) -> int:
        """Position in the input vector (ONE is 0) or in the aux vector."""
        return ~self.key if self.key < 0 else self.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Variable) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"{'input' if self.is_input else 'aux'}[{self.index}]"

    # Arithmetic builds linear combinations, so `x + y`, `3 * x`, `ONE - b` read like math.
    def __add__(self, other: Term) -> LinearCombination:
        return LinearCombination.of(self) + other

    def __radd__(self, other: Term) -> LinearCombination:
        return LinearCombination.of(self) + other

    def __sub__(self, other: Term) -> LinearCombination:
        return LinearCombination.of(self) - other

    def __rsub__(self, other: Term) -> LinearCombination:
        return LinearCombination.of(other) - self

    def __mul__(self, coeff: int) -> LinearCombination:
        return LinearCombination({self.key: coeff % R})

    __rmul__ = __mul__

    def __neg__(self) -> LinearCombination:
        return LinearCombination({self.key: R - 1})


ONE = Variable.input(0)
"""The constant-one input every circuit starts with."""


class LinearCombination:
    """Σ coeff·variable with coefficients in Fr (kept reduced mod r); repeated variables merge."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[int, int] | None = None) -> None:
        self.terms: dict[int, int] = terms if terms is not None else {}

    @classmethod
    def zero(cls) -> LinearCombination:
        return cls()

    @classmethod
    def of(cls, value: Term) -> LinearCombination:
        """Coerce a Variable, LinearCombination or constant int into a new combination."""
        if isinstance(value, LinearCombination):
            return cls(dict(value.terms))
        if isinstance(value, Variable):
            return cls({value.key: 1})
        if isinstance(value, int):
            return cls({ONE.key: value % R}) if value % R else cls()
        raise TypeError(f"cannot make a linear combination from {type(value).__name__}")

    def add_term(self, var: Variable, coeff: int = 1) -> LinearCombination:
        """Add coeff·var in place (and return self, so calls chain)."""
        key = var.key
        merged = (self.terms.get(key, 0) + coeff) % R
        if merged:
            self.terms[key] = merged
        else:
            self.terms.pop(key, None)
        return self

    def _merge(self, other: Term, sign: int) -> LinearCombination:
        out = LinearCombination(dict(self.terms))
        for key, coeff in LinearCombination.of(other).terms.items():
            merged = (out.terms.get(key, 0) + sign * coeff) % R
            if merged:
                out.terms[key] = merged
            else:
                out.terms.pop(key, None)
        return out

    def __add__(self, other: Term) -> LinearCombination:
        return self._merge(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Term) -> LinearCombination:
        return self._merge(other, -1)

    def __rsub__(self, other: Term) -> LinearCombination:
        return LinearCombination.of(other)._merge(self, -1)

    def __mul__(self, coeff: int) -> LinearCombination:
        coeff %= R
        if not coeff:
            return LinearCombination()
        return LinearCombination({k: c * coeff % R for k, c in self.terms.items()})

    __rmul__ = __mul__

    def __neg__(self) -> LinearCombination:
        return self * (R - 1)

    def __iter__(self) -> Iterator[tuple[Variable, int]]:
        for key, coeff in self.terms.items():
            yield Variable(key), coeff

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        inner = " + ".join(f"{c}·{Variable(k)!r}" for k, c in self.terms.items())
        return f"LC({inner or '0'})"


Term = Variable | LinearCombination | int
"""Anything that coerces into a linear combination."""


class LcFn(Protocol):
    """bellperson's style of an ``enforce`` side: a function from an empty combination to the
    wanted one, so witness-mode synthesis never builds it. A protocol rather than a
    ``Callable``, so that ``lambda lc, x=x: ...`` (a loop value bound as a default) fits."""

    def __call__(self, lc: LinearCombination, /) -> LinearCombination: ...


LcSpec = Term | LcFn
"""What ``enforce`` takes per side: a term, or a function building it (:class:`LcFn`)."""


def resolve(spec: LcSpec) -> LinearCombination:
    """Turn an ``enforce`` argument into a linear combination."""
    if callable(spec) and not isinstance(spec, Variable | LinearCombination):
        return spec(LinearCombination())
    return LinearCombination.of(spec)
