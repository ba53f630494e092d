#!/usr/bin/env bash
# The .deb (issue 14): `cpack -G DEB` in the build directory makes one
# package; this unpacks it with dpkg-deb -x and checks its files, its
# control data (dependencies from dpkg-shlibdeps, the config as a conffile)
# and its systemd unit with `systemd-analyze verify`; the packaged broker
# must run, and Debian's python3 must import the packaged Python client.
#
#   deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "deb_test: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) ||
  fail "cpack failed: $(tail -30 "$work/cpack.log")"
deb=$(find "$work/out" -maxdepth 1 -name 'tinybroker_*.deb' | head -1)
[ -n "$deb" ] || fail "no .deb in $(ls "$work/out")"
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"

root=$work/root
dpkg-deb -x "$deb" "$root"
for f in usr/bin/tinybroker usr/bin/tinybroker-cli usr/bin/tinybroker-bench \
  usr/bin/tinybroker-relay \
  usr/lib/systemd/system/tinybroker.service etc/tinybroker/tinybroker.toml \
  usr/share/tinybroker/tinybroker.example.toml \
  usr/include/tinybroker/client/async_client.hpp \
  usr/lib/cmake/tinybroker/tinybrokerConfig.cmake \
  usr/lib/pkgconfig/tinybroker.pc usr/lib/libtinybroker_client.a \
  usr/lib/python3/dist-packages/tinybroker/__init__.py \
  usr/lib/python3/dist-packages/tinybroker/_proto/tinybroker_pb2_grpc.py; do
  [ -e "$root/$f" ] || fail "not in the package: $f"
done

control=$work/control
dpkg-deb -e "$deb" "$control"
grep -q '^Depends:.*libgrpc++1.51' "$control/control" ||
  fail "Depends lacks gRPC: $(grep '^Depends' "$control/control")"
grep -q '^Depends:.*systemd' "$control/control" ||
  fail "Depends lacks systemd: $(grep '^Depends' "$control/control")"
grep -q '^Recommends:.*python3-grpcio, python3-protobuf' "$control/control" ||
  fail "Recommends lacks the Python client's: $(grep '^Recommends' "$control/control")"
grep -qx /etc/tinybroker/tinybroker.toml "$control/conffiles" ||
  fail "the config is not a conffile"

# The unit, checked with the packaged binary in place; the config it names
# must be valid for the broker itself.
unit=$root/usr/lib/systemd/system/tinybroker.service
grep -q '^Type=notify$' "$unit" || fail "the unit is not Type=notify"
grep -q '^ExecStart=/usr/bin/tinybroker --config /etc/tinybroker/tinybroker.toml$' \
  "$unit" || fail "unexpected ExecStart: $(grep ExecStart "$unit")"
# systemd-analyze checks that ExecStart's program exists: point the copy it
# verifies at the unpacked one (the line itself was checked just above).
mkdir -p "$work/units"
sed "s#/usr/bin/tinybroker#$root/usr/bin/tinybroker#; s# /etc/# $root/etc/#" \
  "$unit" >"$work/units/tinybroker.service"
if ! systemd-analyze verify "$work/units/tinybroker.service" \
  >"$work/verify.log" 2>&1; then
  fail "systemd-analyze verify: $(cat "$work/verify.log")"
fi
[ ! -s "$work/verify.log" ] || fail "systemd-analyze verify: $(cat "$work/verify.log")"
"$root/usr/bin/tinybroker" --check-config "$root/etc/tinybroker/tinybroker.toml" \
  >"$work/check.log" 2>&1 || fail "the packaged config: $(cat "$work/check.log")"
for program in tinybroker tinybroker-cli tinybroker-bench tinybroker-relay; do
  "$root/usr/bin/$program" --version | grep -qx "$program [0-9.]*" ||
    fail "$program --version: $("$root/usr/bin/$program" --version 2>&1)"
done
# The Python client, imported from the package (not the source or build
# tree: run from an empty directory, nothing else on PYTHONPATH) with its
# generated gRPC modules, by the python3 the package recommends modules for.
site=$root/usr/lib/python3/dist-packages
if find "$site" -name '__pycache__' -o -name '*.pyc' | grep -q .; then
  fail "byte code in the package: $(find "$site" -name '*.pyc' | head -3)"
fi
mkdir -p "$work/empty"
imported=$(cd "$work/empty" && PYTHONPATH=$site PYTHONDONTWRITEBYTECODE=1 \
  /usr/bin/python3 -c '
import tinybroker, tinybroker.aio
from tinybroker._proto import tinybroker_pb2, tinybroker_pb2_grpc
assert tinybroker_pb2_grpc.BrokerStub
print(tinybroker.__file__, tinybroker_pb2_grpc.__file__, tinybroker.__version__)
' 2>&1) || fail "import tinybroker from the package: $imported"
case $imported in
"$site/tinybroker/__init__.py $site/tinybroker/_proto/tinybroker_pb2_grpc.py "*)
  echo "python: tinybroker ${imported##* } from the package" ;;
*) fail "tinybroker was not imported from the package: $imported" ;;
esac
echo "deb_test: ok"
