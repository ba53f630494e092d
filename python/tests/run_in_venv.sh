#!/bin/sh
# Installs the tinybroker Python package offline into a venv that sees
# Debian's python3-grpcio and python3-protobuf (--system-site-packages), then
# runs its tests against the broker named by TINYBROKER_BROKER (ctest's
# python_client test, tests/CMakeLists.txt):
#
#   TINYBROKER_BROKER=build/tinybroker python/tests/run_in_venv.sh \
#       /usr/bin/python3 build/tests/python_venv [pytest args...]
set -eu
python=$1
venv=$2
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv --system-site-packages "$venv"
fi
"$venv/bin/python" -m pip uninstall -q -y tinybroker >/dev/null 2>&1 || true
# Offline: no index, and no isolated build env that would fetch setuptools.
export TINYBROKER_PY_BUILD_DIR="$venv/build"  # not in the source tree
rm -rf "$TINYBROKER_PY_BUILD_DIR"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-index "$src"
cd "$venv"  # import the installed package, not the source folder
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests" "$@"
