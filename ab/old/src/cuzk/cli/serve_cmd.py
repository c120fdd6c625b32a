"""``cuzk serve``: run the proving daemon in the foreground until SIGINT or SIGTERM.

With no ``--config`` it runs on the embedded defaults (a unix socket in a directory only this
user can enter, $XDG_RUNTIME_DIR/cuzk/cuzk.sock or /tmp/cuzk-UID/cuzk.sock; HTTP status on
127.0.0.1:9821; keys under ~/.cache/cuzk/params; journal under ~/.local/state/cuzk); flags and
``--set section.key=value`` override the file. The bearer token is best given as
auth.token_file or in $CUZK_TOKEN: a token on the command line is visible to every local user
in ``ps``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuzk.errors import BadInput

if TYPE_CHECKING:
    from cuzk.server.config import DaemonConfig


def add_parser(sub: Any) -> None:
    s = sub.add_parser(
        "serve",
        help="run the proving daemon (gRPC cuzk.v1 + HTTP status)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--config", type=Path, help="TOML file (see cuzk.example.toml)")
    s.add_argument("--listen", help="gRPC address: unix:///path or host:port")
    s.add_argument("--http-listen", metavar="HOST:PORT", help="HTTP /status and /metrics")
    s.add_argument("--no-http", action="store_true", help="do not serve HTTP")
    s.add_argument("--param-cache", type=Path, help="directory of .params/.vk keys")
    s.add_argument("--journal", type=Path, help="SQLite journal file")
    s.add_argument("--backend", choices=["cpu", "cuda"])
    s.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve a listener reachable from other hosts without token or TLS (what Curio's "
        "client needs); only on a trusted private network: anyone reaching it may submit and "
        "cancel proofs (auth.allow_unauthenticated)",
    )
    s.add_argument(
        "--device-memory-limit",
        metavar="SIZE",
        help='keep each device\'s use under SIZE ("24GiB"); keys that do not fit stream from '
        "host memory (engine.device_memory_limit)",
    )
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override any config key (repeatable), e.g. engine.devices=2",
    )


def overrides(args: argparse.Namespace) -> dict[str, object]:
    """Flags as dotted config keys (None: not given, the file or default stands)."""
    out: dict[str, object] = {}
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise BadInput(f"--set {item!r}: expected SECTION.KEY=VALUE")
        out[key.strip()] = value.strip()
    out.update(
        {
            "server.listen": args.listen,
            "http.listen": args.http_listen,
            "http.enabled": False if args.no_http else None,
            "engine.param_dir": None if args.param_cache is None else str(args.param_cache),
            "journal.path": None if args.journal is None else str(args.journal),
            "engine.backend": args.backend,
            "engine.device_memory_limit": args.device_memory_limit,
            "auth.allow_unauthenticated": True if args.allow_unauthenticated else None,
        }
    )
    return out


def config_from(args: argparse.Namespace, environ: Mapping[str, str]) -> DaemonConfig:
    """The daemon's config: the file, the flags, and $CUZK_TOKEN when no token is set."""
    from cuzk.server.config import load_config

    flags = overrides(args)
    if flags.get("auth.token"):
        print(
            "cuzk serve: warning: a token given with --set is visible to every local user in "
            "`ps`; use auth.token_file or $CUZK_TOKEN",
            file=sys.stderr,
        )
    from cuzk.server.auth import TOKEN_ENV

    env = environ.get(TOKEN_ENV)
    if not env or flags.get("auth.token") or flags.get("auth.token_file"):
        return load_config(args.config, flags)
    try:  # the file may name its own token
        config = load_config(args.config, flags)
    except BadInput:  # (e.g. a remote listener that needs the token from the environment)
        config = None
    if config is not None and config.auth.token is not None:
        return config
    return load_config(args.config, {**flags, "auth.token": env})


def run(args: argparse.Namespace) -> int:
    from cuzk.server.daemon import Daemon

    config = config_from(args, os.environ)
    logging.basicConfig(
        level=config.log.level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    daemon = Daemon(config)
    daemon.serve_forever()
    return 0
