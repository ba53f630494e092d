#!/usr/bin/env python3
"""Generates tinybroker's protobuf and gRPC modules for the Python package.

Runs Debian's protoc with grpc_python_plugin (packages protobuf-compiler and
protobuf-compiler-grpc) on proto/tinybroker.proto and makes the gRPC module
import its sibling relatively, so that both work as `tinybroker._proto`.
setup.py runs it when the package is built; CMake runs it for the build tree
(examples/CMakeLists.txt):

  python3 python/gen_proto.py OUT_DIR [PROTO_FILE]
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO = os.path.join(HERE, os.pardir, "proto", "tinybroker.proto")
MODULES = ("tinybroker_pb2.py", "tinybroker_pb2_grpc.py")


def find_tool(variable, name):
    """Returns the program named by `variable`, else `name` on PATH or in
    /usr/bin; exits with a sentence naming the Debian package if absent."""
    path = os.environ.get(variable) or shutil.which(name)
    if not path and os.path.exists(os.path.join("/usr/bin", name)):
        path = os.path.join("/usr/bin", name)
    if not path:
        package = {"protoc": "protobuf-compiler",
                   "grpc_python_plugin": "protobuf-compiler-grpc"}[name]
        sys.exit(f"gen_proto: {name} not found: install Debian's {package} "
                 f"or set {variable}")
    return path


def generate(out_dir, proto=DEFAULT_PROTO):
    """Writes tinybroker_pb2.py (with its type stub tinybroker_pb2.pyi) and
    tinybroker_pb2_grpc.py into `out_dir`."""
    proto = os.path.abspath(proto)
    if not os.path.exists(proto):
        sys.exit(f"gen_proto: {proto} not found (build from the tinybroker "
                 "source tree: the package's parent holds proto/)")
    os.makedirs(out_dir, exist_ok=True)
    protoc = find_tool("PROTOC", "protoc")
    plugin = find_tool("TINYBROKER_GRPC_PYTHON_PLUGIN", "grpc_python_plugin")
    subprocess.run([protoc, f"--proto_path={os.path.dirname(proto)}",
                    f"--python_out={out_dir}", f"--pyi_out={out_dir}",
                    f"--grpc_python_out={out_dir}",
                    f"--plugin=protoc-gen-grpc_python={plugin}", proto],
                   check=True)
    grpc_module = os.path.join(out_dir, MODULES[1])
    with open(grpc_module, encoding="utf-8") as f:
        text = f.read()
    fixed = text.replace("\nimport tinybroker_pb2 as ",
                         "\nfrom . import tinybroker_pb2 as ")
    if fixed == text:
        sys.exit(f"gen_proto: no 'import tinybroker_pb2' in {grpc_module}")
    with open(grpc_module, "w", encoding="utf-8") as f:
        f.write(fixed)
    init = os.path.join(out_dir, "__init__.py")
    if not os.path.exists(init):
        with open(init, "w", encoding="utf-8") as f:
            f.write('"""Generated from proto/tinybroker.proto."""\n')


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    generate(*sys.argv[1:])
