"""What syntheses learn once and reuse: one object, one :meth:`SynthesisCache.clear`.

Native paths record something the first time they meet it and replay it after: SHA-256 tapes
(witness mode) and templates (shape mode) per input pattern, the Poseidon kernel's first-use
checks per arity, the bulk PoSt witness's templates per tree shape, the last SnapDeals header.
Each keeps its own memo type, made here on first use and looked up by that type, so this layer
knows none of them. A constraint system carries the cache it fills (:attr:`ConstraintSystem.cache
<cuzk.r1cs.system.ConstraintSystem.cache>`); every system a synthesis makes inside another (a
probe, a recording) is given the same one. A process's syntheses share :data:`PROCESS_CACHE`
unless they pass their own: a test that must see a first use passes a fresh cache or clears it.
The engine's synthesis processes (:mod:`cuzk.engine.synth_pool`) each make one and pass it;
the default serves whoever passes none: syntheses in the engine's own process (shapes, and
witnesses built in its threads), one-shot command-line paths and tests.
"""

from __future__ import annotations

import threading
from typing import TypeVar, cast

M = TypeVar("M")


class SynthesisCache:
    """One memo per kind (a class made with no arguments), shared by every thread."""

    def __init__(self) -> None:
        self._memos: dict[type, object] = {}
        self._lock = threading.Lock()

    def memo(self, kind: type[M]) -> M:
        """This cache's one ``kind()``, made on first use."""
        memo = self._memos.get(kind)
        if memo is None:
            with self._lock:
                memo = self._memos.setdefault(kind, kind())
        return cast(M, memo)

    def clear(self) -> None:
        """Forget everything learned: each native path records and checks anew."""
        with self._lock:
            self._memos.clear()


#: The cache of this process's syntheses, every system's unless it is given another (the
#: engine's synthesis processes give theirs).
PROCESS_CACHE = SynthesisCache()
