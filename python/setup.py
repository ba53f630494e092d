"""Builds the `tinybroker` Python client.

Install offline into a venv made by Debian's /usr/bin/python3, so that it
sees python3-grpcio, python3-protobuf and python3-wheel (docs/client.md,
"Python client"):

  /usr/bin/python3 -m venv --system-site-packages .venv
  .venv/bin/pip install --no-build-isolation --no-index ./python

The protobuf and gRPC modules are generated from ../proto/tinybroker.proto
while building (gen_proto.py: protoc and grpc_python_plugin).
"""

import atexit
import os
import shutil
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# No python/__pycache__ for gen_proto either: the source tree stays as it was.
sys.dont_write_bytecode = True
import gen_proto  # noqa: E402  (next to this file)


class BuildWithProto(build_py):
    """build_py that also generates tinybroker/_proto from the .proto."""

    def run(self):
        super().run()
        if not self.dry_run:
            gen_proto.generate(
                os.path.join(self.build_lib, "tinybroker", "_proto"))


def check_interpreter():
    """Stops a wheel build (pip's `dist_info` and `bdist_wheel` steps) with
    one sentence naming the interpreter when it has no `wheel` module, which
    setuptools needs for them: otherwise setuptools fails with a bare
    "invalid command 'bdist_wheel'". That happens when pip runs in a venv
    made by another Python than Debian's (one first on PATH: pyenv,
    /usr/local), which has neither wheel nor Debian's grpcio and protobuf."""
    if not {"bdist_wheel", "dist_info"} & set(sys.argv[1:]):
        return
    try:
        import wheel  # noqa: F401
    except ImportError:
        version = ".".join(map(str, sys.version_info[:3]))
        sys.exit(
            f"tinybroker: cannot build with {sys.executable} (Python "
            f"{version}, installed in {sys.base_prefix}): it has no 'wheel' "
            "module, which setuptools needs to build the package. The "
            "package is built for Debian's /usr/bin/python3, with its "
            "python3-wheel, python3-grpcio and python3-protobuf: make the "
            "venv with `/usr/bin/python3 -m venv --system-site-packages "
            ".venv` (docs/client.md, \"Python client\").")


check_interpreter()

# Where the build goes: never into the source tree (no python/build, no
# python/tinybroker.egg-info after `pip install ./python`). A temporary
# directory, removed when setup.py exits (pip has copied the wheel out by
# then), or TINYBROKER_PY_BUILD_DIR, kept (python/tests/run_in_venv.sh sets
# it, so that two build trees can install at once).
build_dir = os.environ.get("TINYBROKER_PY_BUILD_DIR")
if build_dir:
    os.makedirs(build_dir, exist_ok=True)
else:
    build_dir = tempfile.mkdtemp(prefix="tinybroker-build-")
    atexit.register(shutil.rmtree, build_dir, ignore_errors=True)
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
