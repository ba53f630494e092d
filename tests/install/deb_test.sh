#!/usr/bin/env bash
# The .debs (issue 14, issue 26 point 13): `cpack -G DEB` in the build
# directory makes three packages, tinybroker (the broker, its tools, unit
# and config), tinybroker-dev (the C++ client) and python3-tinybroker. This
#  1. runs lintian on each: an error or a warning fails; the warnings that
#     stay are overridden, each with its reason, in the package's
#     /usr/share/lintian/overrides (cmake/deb/*.lintian-overrides);
#  2. checks their files, control data (dependencies from dpkg-shlibdeps, no
#     hard systemd dependency, the client's development packages), the
#     conffile, copyright files and the static libraries' debug information;
#  3. checks the unit with `systemd-analyze verify`; the packaged programs
#     and config must run;
#  4. installs the three into a scratch root with dpkg (--root, maintainer
#     scripts run with DPKG_ROOT), imports the Python client from it with
#     Debian's python3 (which writes byte code next to it, as root's imports
#     do), enables the unit (`systemctl --root enable`), then purges them:
#     nothing of the packages may be left.
#
#   deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "deb_test: $*" >&2; exit 1; }
for tool in lintian dpkg-deb systemd-analyze systemctl objdump; do
  command -v "$tool" >/dev/null ||
    fail "$tool not found: scripts/setup.sh deps installs it"
done

(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) ||
  fail "cpack failed: $(tail -30 "$work/cpack.log")"
! grep -q 'CPackDeb: .*not available' "$work/cpack.log" ||
  fail "cpack: $(grep 'CPackDeb: .*not available' "$work/cpack.log")"
declare -A deb
for p in tinybroker tinybroker-dev python3-tinybroker; do
  deb[$p]=$(find "$work/out" -maxdepth 1 -name "${p}_*.deb" | head -1)
  [ -n "${deb[$p]}" ] || fail "no $p .deb in: $(ls "$work/out")"
  echo "package: $(basename "${deb[$p]}") ($(du -h "${deb[$p]}" | cut -f1))"
done

# 1. lintian.
if ! lintian --fail-on error,warning "${deb[@]}" >"$work/lintian.log" 2>&1; then
  fail "lintian: $(grep -v 'root privileges' "$work/lintian.log")"
fi
echo "lintian: no errors, no warnings"

# 2. Files and control data.
root=$work/root
for p in "${!deb[@]}"; do
  dpkg-deb -x "${deb[$p]}" "$root"
  dpkg-deb -e "${deb[$p]}" "$work/control-$p"
  dpkg-deb -c "${deb[$p]}" | awk '{print $NF}' >"$work/files-$p"
  for f in copyright changelog.gz; do
    [ -f "$root/usr/share/doc/$p/$f" ] || fail "$p has no /usr/share/doc/$p/$f"
  done
done
check_files() { # PACKAGE FILE...: each file is in that package
  local p=$1 f
  shift
  for f in "$@"; do
    grep -qx "\./$f" "$work/files-$p" || fail "not in $p: $f"
  done
}
check_files tinybroker usr/bin/tinybroker usr/bin/tinybroker-cli \
  usr/bin/tinybroker-bench usr/bin/tinybroker-relay \
  usr/lib/systemd/system/tinybroker.service etc/tinybroker/tinybroker.toml \
  usr/share/tinybroker/tinybroker.example.toml
check_files tinybroker-dev usr/include/tinybroker/client/async_client.hpp \
  usr/lib/cmake/tinybroker/tinybrokerConfig.cmake \
  usr/lib/pkgconfig/tinybroker.pc usr/lib/libtinybroker_client.a \
  usr/lib/libtinybroker_proto.a
check_files python3-tinybroker \
  usr/lib/python3/dist-packages/tinybroker/__init__.py \
  usr/lib/python3/dist-packages/tinybroker/_proto/tinybroker_pb2_grpc.py
# field PACKAGE FIELD: the control field's value.
field() { sed -n "s/^$2: //p" "$work/control-$1/control"; }
depends=$(field tinybroker Depends)
[[ $depends == *libgrpc++1.51* ]] || fail "tinybroker's Depends lacks gRPC: $depends"
if [[ ", $depends," =~ ,\ systemd[\ ,] ]]; then
  fail "tinybroker depends on systemd: $depends"
fi
[[ $(field tinybroker-dev Depends) == *libgrpc++-dev*libprotobuf-dev* ]] ||
  fail "tinybroker-dev's Depends: $(field tinybroker-dev Depends)"
[[ $(field python3-tinybroker Depends) == *python3-grpcio*python3-protobuf* ]] ||
  fail "python3-tinybroker's Depends: $(field python3-tinybroker Depends)"
[ "$(field python3-tinybroker Architecture)" = all ] ||
  fail "python3-tinybroker is not Architecture: all"
  grep -qx /etc/tinybroker/tinybroker.toml "$work/control-tinybroker/conffiles" ||
  fail "the config is not a conffile"
for lib in libtinybroker_client.a libtinybroker_proto.a; do
  if objdump -h "$root/usr/lib/$lib" | grep -q '\.debug_'; then
    fail "$lib carries debug information ($(du -h "$root/usr/lib/$lib" | cut -f1))"
  fi
done
site=$root/usr/lib/python3/dist-packages
if find "$site" -name '__pycache__' -o -name '*.pyc' | grep -q .; then
  fail "byte code in the package: $(find "$site" -name '*.pyc' | head -3)"
fi

# 3. The unit, checked with the packaged binary in place; the config it
# names must be valid for the broker itself.
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

# 4. Install, enable, purge, in a scratch root holding what a Debian system
# has before (dpkg's database, the directories systemd owns).
target=$work/target
mkdir -p "$target/var/lib/dpkg/info" "$target/var/lib/dpkg/updates" \
  "$target/etc/systemd/system" "$target/var/lib/systemd"
touch "$target/var/lib/dpkg/status" "$target/var/lib/dpkg/available"
(cd "$target" && find . | sort) >"$work/target-before.txt"
# The packages' dependencies live on this machine, not in the scratch root.
dpkg_target() {
  dpkg --root="$target" --log=/dev/null --force-script-chrootless \
    --force-depends --force-not-root "$@" >>"$work/dpkg.log" 2>&1 ||
    fail "dpkg $*: $(grep -v 'depends on\|however\|is not installed' "$work/dpkg.log" | tail -20)"
}
dpkg_target --install "${deb[@]}"
# The Python client, imported from the installed package (not the source or
# build tree: run from an empty directory, nothing else on PYTHONPATH) by
# Debian's python3, which writes __pycache__ next to the modules.
site=$target/usr/lib/python3/dist-packages
mkdir -p "$work/empty"
imported=$(cd "$work/empty" && env -u PYTHONDONTWRITEBYTECODE -u PYTHONPYCACHEPREFIX \
  PYTHONPATH="$site" /usr/bin/python3 -c '
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
[ -n "$(find "$site/tinybroker/_proto" -name '*.pyc')" ] ||
  fail "python3 wrote no byte code: the purge check below would prove less"
systemctl --root="$target" enable tinybroker.service >"$work/enable.log" 2>&1 ||
  fail "systemctl enable: $(cat "$work/enable.log")"
wants=$target/etc/systemd/system/multi-user.target.wants/tinybroker.service
[ -L "$wants" ] || fail "systemctl enable made no link: $(cat "$work/enable.log")"
echo "installed and enabled: $(find "$target" -type f -o -type l | grep -vc /var/lib/dpkg/) files and links"
dpkg_target --purge tinybroker tinybroker-dev python3-tinybroker
(cd "$target" && find . | sort) >"$work/target-after.txt"
diff "$work/target-before.txt" "$work/target-after.txt" >"$work/target.diff" || true
grep '^>' "$work/target.diff" | grep -v '^> \./var/lib/dpkg/' >"$work/left.txt" || true
[ ! -s "$work/left.txt" ] ||
  fail "left after dpkg --purge: $(sed 's/^> \.//' "$work/left.txt" | head -20)"
echo "purged: nothing left"
echo "deb_test: ok"
