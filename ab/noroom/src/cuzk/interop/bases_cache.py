"""Translated ``.zkey`` bases kept on disk, so a key is translated once, not at every start.

:func:`~cuzk.interop.bases.translate_bases` rewrites a key's five point sections (most of the
file) into zcash-uncompressed points; for a 2^20 key that is hundreds of MB of field
conversions. The result depends only on the key's bytes, so it is stored as
``<cache_dir>/<sha256 of the key>.bases`` and reused by any later load of the same key, under
any name.

Hashing a large key costs a read of the whole file, so a small fingerprint file remembers the
digest of a key file by (resolved path, size, mtime_ns, inode): a second start with an
unchanged file neither hashes nor translates. A file rewritten in place changes its mtime (and
usually its size), which sends it back through the hash. Files appear by atomic rename, so
engines sharing a cache directory never see a half-written translation.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from cuzk.interop.bases import ZkeyBases, bases_layout, translate_bases
from cuzk.interop.zkey import Zkey

log = logging.getLogger(__name__)

_HASH_BLOCK = 8 << 20


def zkey_digest(path: str | os.PathLike[str], cache_dir: Path | None = None) -> str:
    """SHA-256 of the key file, remembered under ``cache_dir`` by the file's stat fingerprint."""
    st = os.stat(path)
    stamp = f"{Path(path).resolve()}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    memo = None
    if cache_dir is not None:
        memo = cache_dir / f"stat-{hashlib.sha256(stamp.encode()).hexdigest()[:32]}.digest"
        try:
            digest = memo.read_text().strip()
            if len(digest) == 64:
                return digest
        except OSError:
            pass
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_HASH_BLOCK):
            h.update(block)
    digest = h.hexdigest()
    if memo is not None:
        _atomic_write(memo, digest.encode())
    return digest


def cached_bases(zkey: Zkey, cache_dir: str | os.PathLike[str]) -> tuple[ZkeyBases, bool]:
    """``zkey``'s translated bases from ``cache_dir`` (translating and storing them on a miss);
    returns them and whether they were found.

    Raises:
        BadInput: as :func:`translate_bases` (a coordinate not reduced, the key changed).
        OSError: the cache directory cannot be created or written.
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"{zkey_digest(zkey.path, cache)}.bases"
    sets = bases_layout(zkey, target)
    expected = sum(ps.count * ps.point_size for ps in sets.values())
    if target.is_file() and target.stat().st_size == expected:
        return ZkeyBases(str(target), owns_directory=False, persistent=True, **sets), True
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=cache)
    os.close(fd)
    try:
        translate_bases(zkey, tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    log.info("translated the bases of %s into %s", zkey.path, target)
    return ZkeyBases(str(target), owns_directory=False, persistent=True, **sets), False


def _atomic_write(path: Path, data: bytes) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".partial", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:  # a memo is an optimisation: hash again next time
        log.debug("could not remember the digest in %s: %s", path, e)
