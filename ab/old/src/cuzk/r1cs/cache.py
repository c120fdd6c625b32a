"""On-disk cache of pre-compiled constraint systems, one directory per circuit id.

Shape synthesis runs every constraint through Python once (seconds to minutes for big circuits);
after that every proof of the same circuit type reuses the saved matrices.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

from cuzk.r1cs.shape import SHAPE_FORMAT_VERSION, R1CSShape, shape_format
from cuzk.r1cs.system import Circuit, synthesize_shape

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cuzk" / "shapes"


class ShapeCache:
    """``get(circuit_id, circuit)`` loads the saved shape or synthesizes and saves it."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def path_for(self, circuit_id: str) -> Path:
        return self.directory / re.sub(r"[^A-Za-z0-9_.-]", "_", circuit_id)

    def get(self, circuit_id: str, circuit: Circuit) -> R1CSShape:
        """The saved shape (memory-mapped), else synthesize, save and return it mapped from
        the saved files too: file-backed pages the kernel may share between processes and
        drop under pressure, where the freshly built arrays would be private memory.

        An entry of another format (1: before the compact layout) is replaced."""
        path = self.path_for(circuit_id)
        fmt = shape_format(path)
        if fmt == SHAPE_FORMAT_VERSION:
            return R1CSShape.load(path)
        if fmt is not None:
            log.info("shape cache: %s has format %s, rebuilding as %s", path, fmt,
                     SHAPE_FORMAT_VERSION)  # fmt: skip
            self._discard(path)
        shape = synthesize_shape(circuit, circuit_id)
        self.directory.mkdir(parents=True, exist_ok=True)
        # Write beside, then rename: a concurrent reader never sees half a shape.
        tmp = Path(tempfile.mkdtemp(dir=self.directory, prefix=".partial-"))
        try:
            shape.save(tmp)
            try:
                tmp.rename(path)
            except OSError:  # another process won the race; its copy is as good as ours
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        del shape
        return R1CSShape.load(path)

    def _discard(self, path: Path) -> None:
        """Remove an entry: renamed away first, so no reader sees it half deleted."""
        stale = Path(tempfile.mkdtemp(dir=self.directory, prefix=".stale-"))
        try:
            path.rename(stale / "entry")
        except OSError:  # gone already (another process replaced it)
            pass
        shutil.rmtree(stale, ignore_errors=True)
