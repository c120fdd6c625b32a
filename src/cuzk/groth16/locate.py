"""Where a proving key is found: the directory cuzk was given first, then, for official
Filecoin file names (``v28-…``), the places Filecoin's own tools keep parameters.

A storage provider already has the official files where ``paramfetch`` put them:
``$FIL_PROOFS_PARAMETER_CACHE`` when set, else ``/var/tmp/filecoin-proof-parameters``. Keys
in cuzk's own directory win, so a test key made with ``cuzk setup`` is used where one exists.
"""

from __future__ import annotations

import os
from pathlib import Path

FIL_CACHE_ENV = "FIL_PROOFS_PARAMETER_CACHE"
FIL_DEFAULT_CACHE = Path("/var/tmp/filecoin-proof-parameters")
OFFICIAL_PREFIX = "v28-"  # the parameter generation of every official file name


def filecoin_param_dirs() -> list[Path]:
    """The directories Filecoin's tools read parameters from, in the order they do."""
    env = os.environ.get(FIL_CACHE_ENV)
    dirs = [Path(env)] if env else []
    return dirs if FIL_DEFAULT_CACHE in dirs else [*dirs, FIL_DEFAULT_CACHE]


def locate_params(directory: Path, stem: str) -> Path:
    """``directory/stem.params`` when it exists or ``stem`` is not an official name; else the
    first Filecoin parameter directory holding the file; else ``directory/stem.params`` (where
    ``cuzk setup`` would write it, which is what a "missing key" error should name)."""
    own = directory / f"{stem}.params"
    if own.exists() or not stem.startswith(OFFICIAL_PREFIX):
        return own
    for d in filecoin_param_dirs():
        candidate = d / f"{stem}.params"
        if candidate.is_file():
            return candidate
    return own
