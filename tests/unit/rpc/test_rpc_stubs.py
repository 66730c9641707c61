"""The gRPC modules are exactly what the build generates from the `.proto` files: never
edited by hand, never stale."""

import shutil
from pathlib import Path

from odradek.rpc import codegen


def test_generated_modules_match_a_fresh_generation(tmp_path: Path) -> None:
    fresh_dir = tmp_path / "odradek" / "rpc"
    fresh_dir.mkdir(parents=True)
    for name in codegen.PROTOS:
        shutil.copy(codegen.RPC_DIR / name, fresh_dir / name)
    generated = codegen.generate(tmp_path)
    assert {p.name for p in generated} >= {"raft_pb2.py", "controller_pb2_grpc.py"}
    for path in generated:
        assert (codegen.RPC_DIR / path.name).read_bytes() == path.read_bytes(), path.name
