#!/usr/bin/env bash
# The C++ client as a package (issue 14): installs the client component of
# the build into a temporary prefix, then builds a program of a user's own
# (tests/install/consumer) outside the source tree against it, once with
# CMake's find_package and once with pkg-config, and runs both against a
# real broker: each must publish a message and receive it.
#
#   install_test.sh BUILD_DIR BROKER_BINARY
set -euo pipefail
build=$1
broker=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
broker_pid=
cleanup() {
  [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "install_test: $*" >&2; exit 1; }
# check_run HOW PROGRAM: runs the user's program against the broker; it must
# print what it received.
check_run() {
  local out
  out=$("$2" "$address") || fail "the $1-built program failed: $out"
  [ "$out" = "received installed.check hello from outside" ] ||
    fail "the $1-built program printed: $out"
  echo "$1: $out"
}

prefix=$work/prefix
cmake --install "$build" --component client --prefix "$prefix" >/dev/null
for f in include/tinybroker/client/async_client.hpp \
  include/tinybroker/tinybroker.pb.h lib/libtinybroker_client.a \
  lib/libtinybroker_proto.a lib/cmake/tinybroker/tinybrokerConfig.cmake \
  lib/pkgconfig/tinybroker.pc share/tinybroker/proto/tinybroker.proto; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
[ ! -e "$prefix/include/tinybroker/client/detail" ] ||
  fail "private headers installed: include/tinybroker/client/detail"
# The Python client component (deb_test.sh imports it).
cmake --install "$build" --component python --prefix "$work/py" >/dev/null
for f in __init__.py aio.py _proto/tinybroker_pb2.py _proto/tinybroker_pb2_grpc.py; do
  [ -f "$work/py/lib/python3/dist-packages/tinybroker/$f" ] ||
    fail "not installed: lib/python3/dist-packages/tinybroker/$f"
done

# The user's project, copied away from the source tree.
cp -r "$here/consumer" "$work/src"

"$broker" --listen 127.0.0.1:0 --metrics-listen off 2>"$work/broker.log" &
broker_pid=$!
address=
for _ in $(seq 100); do
  address=$(sed -n 's/.* listening on \([^ ]*\) .*/\1/p' "$work/broker.log")
  [ -n "$address" ] && break
  kill -0 "$broker_pid" 2>/dev/null || fail "broker exited: $(cat "$work/broker.log")"
  sleep 0.1
done
[ -n "$address" ] || fail "broker did not start: $(cat "$work/broker.log")"

# 1. CMake: find_package(tinybroker) gives tinybroker::client.
cmake -S "$work/src" -B "$work/cmake-build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS=-g0 >"$work/cmake.log" 2>&1 ||
  fail "cmake configure failed: $(cat "$work/cmake.log")"
cmake --build "$work/cmake-build" >"$work/cmake-build.log" 2>&1 ||
  fail "cmake build failed: $(tail -30 "$work/cmake-build.log")"
check_run find_package "$work/cmake-build/consumer"

# 2. pkg-config: the flags alone build it.
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs \
  tinybroker) || fail "pkg-config does not know tinybroker"
# shellcheck disable=SC2086
g++ -std=c++17 -g0 "$work/src/main.cpp" -o "$work/consumer-pc" $flags \
  2>"$work/pc-build.log" ||
  fail "pkg-config build failed: $(tail -30 "$work/pc-build.log")"
check_run pkg-config "$work/consumer-pc"
