"""``cuzk params check [DIR]``: are Filecoin's official parameters in place and intact?

For each Filecoin circuit (all of them, or those named with ``--circuit``) it finds the
``.params`` the daemon would load — in DIR first when given, then in
``$FIL_PROOFS_PARAMETER_CACHE`` when it is set, else in ``/var/tmp/filecoin-proof-parameters``
(as Filecoin's tools, never both) — and the ``.vk`` beside it, checks both against
``parameters.json``'s digests (the embedded copy, or ``--manifest FILE``) and prints one line
per circuit: ready, missing, corrupt or unlisted. Exit 0 when every requested circuit is ready
(without ``--circuit``: when no file found is corrupt), 1 otherwise, 2 for unusable input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from cuzk.errors import BadInput, shown

EXIT_NOT_READY = 1
PROGRESS_MIN_BYTES = 1 << 30  # files at least this large show progress while hashed
PROGRESS_EVERY_S = 2.0


def add_parser(sub: Any) -> None:
    """Register the ``params`` command group on the top-level subparsers."""
    group = sub.add_parser("params", help="check Filecoin's official parameter files")
    cmds = group.add_subparsers(dest="params_command", required=True, metavar="COMMAND")
    c = cmds.add_parser(
        "check",
        help="check official .params/.vk files against parameters.json's digests and say which "
        "circuits are ready (exit 0 ready, 1 not ready, 2 bad input)",
    )
    c.add_argument(
        "dir",
        nargs="?",
        type=Path,
        metavar="DIR",
        help="look here first (the daemon's --param-cache), then in $FIL_PROOFS_PARAMETER_CACHE "
        "when set, else in /var/tmp/filecoin-proof-parameters",
    )
    c.add_argument(
        "--circuit",
        action="append",
        metavar="ID",
        help="a circuit that must be ready (repeatable; e.g. wpost-32g); default: report all",
    )
    c.add_argument("--manifest", type=Path, metavar="FILE", help="a parameters.json to check "
                   "against instead of the embedded one (rust-fil-proofs')")  # fmt: skip
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")


class _Progress:
    """Hashing progress of big files on stderr, at most one line every few seconds."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started: dict[str, float] = {}
        self.last = 0.0

    def __call__(self, name: str, done: int, total: int) -> None:
        if total < PROGRESS_MIN_BYTES:
            return
        now = time.monotonic()
        if name not in self.started:  # the first chunk: the clock starts
            self.started[name] = self.last = now
            if done < total:
                return
        elif done < total and now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        elapsed = now - self.started[name]
        rate = f", {done / elapsed / 1e6:.0f} MB/s" if elapsed > 0.1 else ""
        line = f"hashing {name}: {done / 1e9:.1f} / {total / 1e9:.1f} GB"
        print(f"{line} ({100 * done / total:.0f}%{rate})", file=self.out, flush=True)


def run(args: argparse.Namespace) -> int:
    """Dispatch ``cuzk params …``; errors propagate to ``cuzk.cli.main``."""
    from cuzk.circuits import canonical_id, key_file_stem, official_circuits
    from cuzk.groth16.official import check_circuits, read_manifest

    manifest = read_manifest(args.manifest)
    requested = [canonical_id(c) for c in args.circuit] if args.circuit else None
    official = official_circuits()
    for cid in requested or ():
        if cid not in official:
            raise BadInput(f"{shown(cid)} has no official parameters; Filecoin circuits are "
                           f"{', '.join(official)}")  # fmt: skip
    keys = [(cid, key_file_stem(cid)) for cid in requested or official]
    statuses = check_circuits(keys, args.dir, manifest, progress=_Progress(sys.stderr))
    if args.json:
        print(json.dumps({"circuits": [s.as_dict() for s in statuses]}, indent=1))
    else:
        _print_table(statuses)
    if requested is not None:
        ok = all(s.state == "ready" for s in statuses)
    else:
        ok = all(s.state != "corrupt" for s in statuses)
    return 0 if ok else EXIT_NOT_READY


def _print_table(statuses: list[Any]) -> None:
    """One line per circuit, the directories searched first and a count last."""
    if statuses:
        print("looked in: " + ", ".join(str(d) for d in statuses[0].searched))
    for s in statuses:
        if s.state == "ready":
            detail = str(s.params.path) + " (+ .vk)"
        else:
            bad = [f for f in (s.params, s.vk) if f.state != "ok"]
            detail = "; ".join(f"{Path(f.name).suffix} {f.state}: {f.detail}" for f in bad)
        print(f"{s.circuit_id:<13} {s.state:<8} {detail}")
    counts = Counter(s.state for s in statuses)
    if counts["corrupt"]:
        print("corrupt: damaged, or not the official file (a test key from cuzk setup?)")
    print(", ".join(f"{counts[k]} {k}" for k in ("ready", "missing", "corrupt", "unlisted")
                    if counts[k]) + " (full file names: --json)")  # fmt: skip
