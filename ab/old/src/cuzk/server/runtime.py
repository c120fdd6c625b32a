"""Where the daemon's socket lives by default, and files only its user may read.

A socket at a fixed path in a shared directory (``/tmp/cuzk.sock``) can be taken first by any
local user, who then receives the clients' tokens and payloads. The default socket is therefore
in a directory only this user can enter: ``$XDG_RUNTIME_DIR/cuzk/`` (systemd makes that per
user, mode 0700), else ``/tmp/cuzk-<uid>/``. The daemon creates it with mode 0700; both the
daemon and the client refuse one that another user owns or that others can enter or write.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import time
from pathlib import Path

from cuzk.errors import BadInput

SOCKET_NAME = "cuzk.sock"
log = logging.getLogger(__name__)


def default_socket() -> Path:
    """The default socket's path for this user (nothing is created)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_absolute():
        return Path(runtime) / "cuzk" / SOCKET_NAME
    return Path(f"/tmp/cuzk-{os.getuid()}") / SOCKET_NAME


def private_dir(path: Path, *, create: bool) -> None:
    """Check that ``path`` is a directory of this user's that no one else can enter or
    write (mode 0700 or stricter); with ``create``, make it so if it is missing."""
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as e:
            raise BadInput(f"cannot create the socket directory {path}: {e.strerror}") from e
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return  # (a client: no daemon has made it yet; connecting will say so)
    if not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path} should be this user's socket directory but is not a directory")
    if st.st_uid != os.getuid():
        raise BadInput(
            f"{path} belongs to uid {st.st_uid}, not to this user ({os.getuid()}): refusing a "
            "socket another user could read or replace"
        )
    if st.st_mode & 0o077:
        raise BadInput(
            f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o}); "
            f"make it private (chmod 700 {path})"
        )


def shared_dir(path: Path) -> bool:
    """True when others may create files in ``path`` (like /tmp): a socket there can be taken
    by another user before the daemon starts."""
    try:
        return bool(os.stat(path).st_mode & 0o002)
    except OSError:
        return False


def private_file(path: Path) -> None:
    """Create ``path`` if missing with mode 0600, and take group and other access away from it
    if it exists (the journal holds payloads and proofs)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            os.fchmod(fd, mode & 0o700)
    finally:
        os.close(fd)


def read_secret(path: Path, what: str) -> str:
    """The first line of a file that holds a secret (a token), which no one else may read."""
    try:
        st = os.stat(path)
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{what} {path}: cannot read it ({e})") from e
    if st.st_mode & 0o077:
        raise BadInput(
            f"{what} {path}: readable by other users (mode {stat.S_IMODE(st.st_mode):o}); "
            f"chmod 600 {path}"
        )
    secret = text.splitlines()[0].strip() if text.strip() else ""
    if not secret:
        raise BadInput(f"{what} {path}: the file is empty")
    return secret


def lock_journal(journal: Path, wait_s: float) -> int:
    """An exclusive lock on ``<journal>.lock`` for this daemon's life (the open descriptor;
    closing it, or the process ending in any way, releases it).

    A daemon started while the previous one is still stopping (a restart right after SIGTERM,
    with jobs finishing their grace period) would otherwise resume the journalled jobs the
    previous one still runs, and find its socket still taken: it waits up to ``wait_s``
    seconds for the previous one to finish, then refuses with BadInput."""
    path = journal.with_name(journal.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        except OSError as e:
            os.close(fd)
            raise BadInput(f"cannot lock {path}: {e.strerror}") from e
        if time.monotonic() >= deadline:
            os.close(fd)
            raise BadInput(
                f"another cuzk daemon still uses the journal {journal} (it holds {path}); "
                f"waited {wait_s:g} s for it to stop"
            )
        if not told:
            log.info("waiting for the daemon that uses %s to stop (up to %g s)", journal, wait_s)
            told = True
        time.sleep(0.1)
