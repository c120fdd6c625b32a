"""Where a proving key is found: the directory cuzk was given first, then, for official
Filecoin file names (``v28-…``), the places Filecoin's own tools keep parameters.

A storage provider already has the official files where ``paramfetch`` put them:
``$FIL_PROOFS_PARAMETER_CACHE`` when set, else ``/var/tmp/filecoin-proof-parameters``. As in
Filecoin's tools, the variable *replaces* the default directory: a stale file left there is
never picked up while the variable points elsewhere. Keys in cuzk's own directory win, so a
test key made with ``cuzk setup`` is used where one exists.
A ``.vk`` is always the one beside the ``.params`` in use (results name it to clients).
"""

from __future__ import annotations

import os
from pathlib import Path

FIL_CACHE_ENV = "FIL_PROOFS_PARAMETER_CACHE"
FIL_DEFAULT_CACHE = Path("/var/tmp/filecoin-proof-parameters")
OFFICIAL_PREFIX = "v28-"  # the parameter generation of every official file name


def filecoin_param_dirs() -> list[Path]:
    """The directory Filecoin's tools read parameters from: ``$FIL_PROOFS_PARAMETER_CACHE``
    when set (and only it), else the default."""
    env = os.environ.get(FIL_CACHE_ENV)
    return [Path(env)] if env else [FIL_DEFAULT_CACHE]


def search_dirs(directory: Path | None, stem: str) -> list[Path]:
    """Where keys named ``stem`` are looked for, in order: ``directory`` (cuzk's own, when
    given), then Filecoin's directories if ``stem`` is an official name."""
    own = [directory] if directory is not None else []
    return own + (filecoin_param_dirs() if stem.startswith(OFFICIAL_PREFIX) else [])


def find_key(directory: Path | None, stem: str, suffix: str = ".params") -> Path | None:
    """The first ``stem + suffix`` that is a file in :func:`search_dirs`, or None."""
    for d in search_dirs(directory, stem):
        candidate = d / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def locate_params(directory: Path, stem: str) -> Path:
    """The ``.params`` file :func:`find_key` finds; else ``directory/stem.params`` (where
    ``cuzk setup`` would write it, which is what a "missing key" error should name)."""
    return find_key(directory, stem) or directory / f"{stem}.params"
