"""Generates the gRPC stubs from odradek/rpc/*.proto as part of every build."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithStubs(build_py):
    def run(self) -> None:
        spec = importlib.util.spec_from_file_location("codegen", ROOT / "odradek/rpc/codegen.py")
        assert spec is not None and spec.loader is not None
        codegen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(codegen)
        codegen.generate(ROOT)
        super().run()


setup(cmdclass={"build_py": BuildWithStubs})
