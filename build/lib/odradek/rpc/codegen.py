"""Generates the protobuf and gRPC Python modules next to the `.proto` files.

The build runs this (setup.py's build_py, so `pip install` and `pip install -e` both do);
the generated `*_pb2*.py` files are never edited by hand nor committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

RPC_DIR = Path(__file__).resolve().parent
PROTOS = ("raft.proto", "controller.proto")


def generate(source_root: Path = RPC_DIR.parent.parent) -> list[Path]:
    """Compile every proto under `source_root/odradek/rpc`; returns the generated files."""
    from grpc_tools import protoc  # a build dependency only

    rpc_dir = source_root / "odradek" / "rpc"
    proto_include = Path(protoc.__file__).parent / "_proto"
    for name in PROTOS:
        arguments = [
            "grpc_tools.protoc",
            f"-I{source_root}",
            f"-I{proto_include}",
            f"--python_out={source_root}",
            f"--pyi_out={source_root}",
            f"--grpc_python_out={source_root}",
            str(rpc_dir / name),
        ]
        if protoc.main(arguments) != 0:
            raise RuntimeError(f"protoc failed on {rpc_dir / name}")
    return sorted(rpc_dir.glob("*_pb2*.py*"))


if __name__ == "__main__":
    for path in generate():
        print(path, file=sys.stderr)
