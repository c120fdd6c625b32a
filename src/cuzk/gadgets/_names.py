"""Small helpers every gadget module shares: lazy names and "does this mode read constraints?".

Names never reach the R1CS, but CheckCS reports them and ShapeCS keeps them, so gadgets keep
bellperson's names. Hot loops build them lazily (a closure instead of an f-string) so witness
mode, which reads no names, never formats one.
"""

from __future__ import annotations

from cuzk.r1cs import ConstraintSystem, WitnessCS
from cuzk.r1cs.system import NameFn, NameSpec

Name = str | NameFn | None
"""A namespace prefix for a gadget's leaf names: a string, a function producing one, or none."""


def leaf(prefix: Name, name: str) -> NameSpec:
    """``prefix/name`` (bellperson's namespace join), built only if someone asks."""
    if prefix is None:
        return name
    if isinstance(prefix, str):
        return f"{prefix}/{name}"
    return lambda: f"{prefix()}/{name}"


def builds_constraints(cs: ConstraintSystem) -> bool:
    """Whether ``cs`` reads the linear combinations passed to ``enforce``.

    Witness mode does not, so gadgets that would otherwise build large combinations eagerly
    (Poseidon's MDS products, MultiEq's batches) skip that work there. A constraint system may
    say so itself with a ``needs_constraints`` attribute; otherwise only :class:`WitnessCS` is
    known to ignore them.
    """
    flag = getattr(cs, "needs_constraints", None)
    if flag is not None:
        return bool(flag)
    return not isinstance(cs, WitnessCS)
