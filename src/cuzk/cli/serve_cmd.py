"""``cuzk serve``: run the proving daemon in the foreground until SIGINT or SIGTERM.

With no ``--config`` it runs on the embedded defaults (unix socket /tmp/cuzk.sock, HTTP status
on 127.0.0.1:9821, keys under ~/.cache/cuzk/params, journal under ~/.local/state/cuzk); flags
and ``--set section.key=value`` override the file.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from cuzk.errors import BadInput


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
        }
    )
    return out


def run(args: argparse.Namespace) -> int:
    from cuzk.server.config import load_config
    from cuzk.server.daemon import Daemon

    config = load_config(args.config, overrides(args))
    logging.basicConfig(
        level=config.log.level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    daemon = Daemon(config)
    daemon.serve_forever()
    return 0
