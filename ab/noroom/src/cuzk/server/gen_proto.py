"""Regenerate the committed gRPC stubs from ``proto/cuzk/v1/proving.proto``.

Run ``python -m cuzk.server.gen_proto`` from the repository root after editing the .proto
(it needs grpcio-tools, the ``dev`` extra). protoc writes ``from cuzk.v1 import proving_pb2``
because the file lives under ``cuzk/v1/``; the stubs live in ``cuzk.server.proto`` instead, so
that import is rewritten, and each file is marked as generated for ruff. A test regenerates into
a temporary directory and compares, so the committed stubs cannot drift from the .proto.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PROTO_ROOT = REPO / "proto"
PROTO_FILE = "cuzk/v1/proving.proto"
OUT_DIR = Path(__file__).resolve().parent / "proto"
GENERATED = ("proving_pb2.py", "proving_pb2.pyi", "proving_pb2_grpc.py")
_HEADER = "# ruff: noqa\n# Generated from proto/cuzk/v1/proving.proto by cuzk.server.gen_proto.\n"


def generate(out_dir: Path, proto_root: Path = PROTO_ROOT) -> list[Path]:
    """Write the three stub files into ``out_dir``; returns their paths."""
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "grpc_tools.protoc",
            f"-I{proto_root}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            PROTO_FILE,
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {proto_root / PROTO_FILE}")
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for name in GENERATED:
            text = (Path(tmp) / "cuzk" / "v1" / name).read_text()
            text = text.replace(
                "from cuzk.v1 import proving_pb2", "from cuzk.server.proto import proving_pb2"
            )
            path = out_dir / name
            path.write_text(_HEADER + text)
            written.append(path)
    return written


def main() -> int:
    for path in generate(OUT_DIR):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
