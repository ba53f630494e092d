"""Builds the `tinybroker` Python client.

Install offline into a venv that sees Debian's python3-grpcio and
python3-protobuf (docs/client.md, "Python client"):

  python3 -m venv --system-site-packages .venv
  .venv/bin/pip install --no-build-isolation --no-index ./python

The protobuf and gRPC modules are generated from ../proto/tinybroker.proto
while building (gen_proto.py: protoc and grpc_python_plugin).
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_proto  # noqa: E402  (next to this file)


class BuildWithProto(build_py):
    """build_py that also generates tinybroker/_proto from the .proto."""

    def run(self):
        super().run()
        if not self.dry_run:
            gen_proto.generate(
                os.path.join(self.build_lib, "tinybroker", "_proto"))


# Where the build goes: python/build by default; TINYBROKER_PY_BUILD_DIR
# keeps the source tree clean (python/tests/run_in_venv.sh sets it, so that
# two build trees can install at once).
build_dir = os.environ.get("TINYBROKER_PY_BUILD_DIR")
options = {}
if build_dir:
    os.makedirs(build_dir, exist_ok=True)
    options = {"build": {"build_base": build_dir},
               "egg_info": {"egg_base": build_dir}}

setup(
    name="tinybroker",
    version="0.1.0",
    description="Python client for tinybroker, the in-memory message broker "
                "with consumer groups, over gRPC",
    packages=["tinybroker", "tinybroker._proto"],
    package_data={"tinybroker": ["py.typed"]},
    python_requires=">=3.9",
    install_requires=["grpcio", "protobuf"],
    cmdclass={"build_py": BuildWithProto},
    options=options,
)
