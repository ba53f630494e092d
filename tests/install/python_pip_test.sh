#!/usr/bin/env bash
# `pip install ./python` (issue 26, point 15), on a copy of python/ and
# proto/ so that the source tree is never written:
#  1. into a venv of Debian's python3 (docs/client.md, "Python client"):
#     the package imports from the venv, and the copy gains no file (no
#     build/, no tinybroker.egg-info);
#  2. into a venv whose Python has no `wheel` module, as one made by another
#     Python first on PATH (pyenv, /usr/local): pip fails with the package's
#     own sentence naming that interpreter and Debian's /usr/bin/python3, not
#     with setuptools' "invalid command 'bdist_wheel'".
#
#   python_pip_test.sh SOURCE_DIR PYTHON3
set -euo pipefail
src=$1
python=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "python_pip_test: $*" >&2; exit 1; }
# Python as on a user's machine: it writes byte code where it can.
unset PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX

mkdir "$work/tree"
cp -r "$src/python" "$src/proto" "$work/tree/"
find "$work/tree" \( -name build -o -name '*.egg-info' -o -name __pycache__ \) \
  -prune -exec rm -rf {} +
(cd "$work/tree" && find . | sort) >"$work/before.txt"
# check_tree WHEN: the copy holds the same files as before.
check_tree() {
  (cd "$work/tree" && find . | sort) >"$work/after.txt"
  diff "$work/before.txt" "$work/after.txt" >"$work/diff.txt" ||
    fail "pip install wrote into the source tree ($1): $(grep '^>' "$work/diff.txt" | head -5)"
}

# 1. Debian's python3, as the docs say.
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-index "$work/tree/python" >"$work/pip.log" 2>&1 ||
  fail "pip install with $python failed: $(tail -20 "$work/pip.log")"
check_tree "$python"
imported=$(cd "$work" && "$work/venv/bin/python" -c '
import tinybroker
from tinybroker._proto import tinybroker_pb2_grpc
print(tinybroker.__file__)') || fail "import tinybroker from the venv failed"
case $imported in
"$work/venv/"*) echo "debian python: installed, $imported, source tree unchanged" ;;
*) fail "tinybroker imported from $imported, not the venv" ;;
esac

# 2. A Python without wheel (a venv that does not see Debian's packages has
# only pip and setuptools).
"$python" -m venv "$work/bare"
if "$work/bare/bin/python" -c 'import wheel' 2>/dev/null; then
  fail "the bare venv has wheel; cannot check the message"
fi
if "$work/bare/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-index "$work/tree/python" >"$work/bare.log" 2>&1; then
  fail "pip install in a venv without wheel succeeded?"
fi
grep -q "tinybroker: cannot build with $work/bare/bin/python.* it has no 'wheel' module" \
  "$work/bare.log" || fail "no sentence naming the interpreter: $(tail -20 "$work/bare.log")"
grep -q '/usr/bin/python3 -m venv --system-site-packages .venv' "$work/bare.log" ||
  fail "the error does not say which Python: $(tail -20 "$work/bare.log")"
grep -q "invalid command 'bdist_wheel'" "$work/bare.log" &&
  fail "setuptools' raw error reached the user: $(tail -20 "$work/bare.log")"
check_tree "no wheel"
echo "no wheel: $(grep -o "tinybroker: cannot build with [^:]*" "$work/bare.log" | head -1)"
echo "python_pip_test: ok"
