"""Lazy names, which every gadget module shares.

Names never reach the R1CS, but CheckCS reports them and ShapeCS keeps them, so gadgets keep
bellperson's names. Hot loops build them lazily (a closure instead of an f-string) so witness
mode, which reads no names, never formats one.
"""

from __future__ import annotations

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
