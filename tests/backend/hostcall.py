"""Call a backend's handle-based methods with host vectors: the tests' one adapter."""

from __future__ import annotations

from typing import Any

import numpy as np


def on_host(backend: Any, method: str, *args: Any) -> Any:
    """``backend.method(*args)`` with every (n, 4) uint64 host array uploaded first and every
    array result downloaded (tuples element by element)."""

    def up(a: Any) -> Any:
        is_vec = isinstance(a, np.ndarray) and a.ndim == 2 and a.shape[1] == 4
        return backend.upload(a) if is_vec and a.dtype == np.uint64 else a

    out = getattr(backend, method)(*(up(a) for a in args))
    if isinstance(out, tuple):
        return tuple(backend.download(o) for o in out)
    return backend.download(out)
