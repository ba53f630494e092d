#!/usr/bin/env bash
# tinybroker's one entry point for a fresh Debian 12 machine.
#
#   scripts/setup.sh start   install what is missing, build, start the broker
#   scripts/setup.sh test    install what is missing, build, run every test
#   scripts/setup.sh asan    the same tests in an AddressSanitizer+UBSan build
#   scripts/setup.sh tsan    the same tests in a ThreadSanitizer build
#   scripts/setup.sh deps    only install what is missing
#   scripts/setup.sh build   install and build (build/ by default)
#   scripts/setup.sh fuzz    build the libFuzzer targets, run each a while
#   scripts/setup.sh soak    build, run the soak test (10 min; --quick: 1 min)
#
# Idempotent and quiet when everything is there. Installs with apt-get (as
# root, or through sudo). Builds with Ninja, two jobs (a 2-core machine).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${TINYBROKER_JOBS:-2}

packages=(
  g++ cmake ninja-build pkg-config
  libcaf-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  grpc-proto python3-grpcio python3-protobuf
  libtoml11-dev libcli11-dev libjemalloc-dev
  libcpp-httplib-dev python3-prometheus-client libssl-dev openssl
  libgtest-dev libbenchmark-dev
  # systemd readiness (sd_notify), the .deb and its checks: CPack's DEB
  # generator needs `file` and dpkg-shlibdeps (dpkg-dev, binutils' objdump),
  # tests/install/deb_test.sh runs lintian, `systemd-analyze verify`,
  # `systemctl --root` and the package's scripts (deb-systemd-helper from
  # init-system-helpers): docs/operations.md, "Running as a service".
  libsystemd-dev dpkg-dev binutils file lintian systemd init-system-helpers
  # /bin/kill, which the unit's ExecReload names (systemd-analyze verify
  # checks it); the tests' other commands (openssl, python3-*, g++,
  # pkg-config) are above, coreutils' are essential
  procps
  # the Python client (python/): venv + offline pip install, and its pytest suite
  python3-venv python3-pip python3-setuptools python3-wheel python3-pytest
  # the console's browser test (tests/console): headless chromium driven by
  # chromium-driver through python3-selenium
  chromium chromium-driver python3-selenium
  # the replica tests' network partition (tests/cluster/cluster_partition.hpp:
  # nftables rules on loopback, as root) and JetStream R3, the peer in
  # scripts/replica_figures.py; NATS's C client for tinybroker-nats-bench,
  # the nats form of scripts/cq_floor.py (its test runs it against nats-server)
  nftables nats-server libnats-dev
)

install_deps() {
  local missing=()
  for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}" >&2
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR [cmake args...]
build() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
  fi
  cmake --build "$dir" -j "$jobs"
}

# fuzz_one DIR TARGET SECONDS: runs one libFuzzer target on a fresh copy of
# its seed corpus; prints one line and returns non-zero on a finding.
fuzz_one() {
  local dir=$1 target=$2 seconds=$3 log runs cov rc=0
  rm -rf "$dir/corpus/$target" "$dir/crashes/$target"
  mkdir -p "$dir/corpus/$target" "$dir/crashes/$target"
  cp "$root/tests/fuzz/corpus/$target/"* "$dir/corpus/$target/"
  log=$dir/fuzz_$target.log
  "$dir/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=4096 \
    -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    -artifact_prefix="$dir/crashes/$target/" "$dir/corpus/$target" \
    >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz_$target: ok, ${runs:-0} runs, coverage ${cov:-?}, ${seconds} s"
    return 0
  fi
  echo "fuzz_$target: FAILED (exit $rc) after ${runs:-?} runs, coverage" \
    "${cov:-?}; input in $dir/crashes/$target/, log $log" >&2
  tail -n 40 "$log" >&2
  return 1
}

# run_fuzz: builds the libFuzzer targets (clang) in build-fuzz/ and runs them
# side by side, each for TINYBROKER_FUZZ_SECONDS (60) on a copy of its seed
# corpus in tests/fuzz/corpus/; fails if any target finds a crash
# (docs/operations.md).
run_fuzz() {
  local dir=$root/build-fuzz seconds=${TINYBROKER_FUZZ_SECONDS:-60} failed=0
  if [ ! -f "$dir/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -S "$root" -B "$dir" -G Ninja \
      -DTINYBROKER_FUZZ=ON -DTINYBROKER_BENCH=OFF -DTINYBROKER_JEMALLOC=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" >/dev/null
  fi
  cmake --build "$dir" -j "$jobs" --target fuzz_targets
  export ASAN_OPTIONS=detect_leaks=1
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/ubsan.supp"
  local target pids=()
  for target in topic config session wire; do
    fuzz_one "$dir" "$target" "$seconds" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
  return $failed
}

# run_tests DIR
# Runs the tests in build directory $1. When one fails, the lines that say
# why (each failed assertion with its context, sanitizer reports, timeouts)
# are printed again at the very end: ctest's output of a failed shard is
# long, and a CI log shown in part keeps its tail.
# Deletes the nftables tables of the partition tests
# (tests/cluster/cluster_partition.hpp) that a killed run left behind: their
# rules would drop packets of any later connection that reuses one of their
# port numbers, and every test on the machine would meet "lost" connects.
remove_partition_tables() {
  command -v nft >/dev/null 2>&1 && [ "$(id -u)" = 0 ] || return 0
  nft list tables 2>/dev/null | awk '$3 ~ /^tb_partition_/ {print $3}' |
    while read -r table; do
      echo "== deleting the partition table $table, left behind by a test"
      nft delete table inet "$table" || true
    done
}

run_tests() {
  local rc=0
  remove_partition_tables
  (cd "$1" && ctest --output-on-failure -j "$jobs" --timeout 300) || rc=$?
  remove_partition_tables
  if [ "$rc" -ne 0 ] && [ -f "$1/Testing/Temporary/LastTest.log" ]; then
    echo "== why the tests failed (from $1/Testing/Temporary/LastTest.log)"
    grep -a -B3 -A14 -E ': Failure$|ERROR: (Address|Leak|Thread)Sanitizer|runtime error:|\*\*\*Timeout|^\[  FAILED  \] [A-Za-z]' \
      "$1/Testing/Temporary/LastTest.log" | head -n 200 || true
  fi
  return "$rc"
}

cmd=${1:-}
case "$cmd" in
  deps)
    install_deps
    ;;
  build)
    install_deps
    build "$root/build"
    ;;
  start)
    install_deps
    build "$root/build"
    shift
    exec "$root/build/tinybroker" "$@"
    ;;
  soak)
    install_deps
    build "$root/build"
    shift
    exec "$root/build/tinybroker-soak" "$@"
    ;;
  test)
    install_deps
    build "$root/build"
    run_tests "$root/build"
    ;;
  asan)
    install_deps
    # -g1: line tables for the reports' stacks, and a faster build than -g.
    build "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_CXX_FLAGS_DEBUG="-g1" -DTINYBROKER_SANITIZE=ON \
      -DTINYBROKER_BENCH=OFF
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/ubsan.supp"
    export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
    run_tests "$root/build-asan"
    ;;
  tsan)
    # Debug with -O1: TSan slows the programs down several times over; -O1
    # wins some of that back and keeps the stacks readable.
    install_deps
    build "$root/build-tsan" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DTINYBROKER_SANITIZE=thread \
      -DTINYBROKER_BENCH=OFF
    # The e2e tests' broker and client processes inherit this: a report
    # stops the program with exit code 66, and the test helpers fail the
    # test on a report in a program's output (tests/e2e/broker_process.cpp).
    # atexit_sleep_ms=0: TSan otherwise sleeps a second in every exiting
    # program, which the shutdown tests would take for a slow exit.
    # ignore_noninstrumented_modules=1: accesses made inside Debian's
    # uninstrumented libraries (gRPC, Abseil, CAF) are not checked, since
    # TSan cannot see their synchronisation (tests/tsan.supp).
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:atexit_sleep_ms=0:ignore_noninstrumented_modules=1:suppressions=$root/tests/tsan.supp"
    run_tests "$root/build-tsan"
    ;;
  fuzz)
    packages+=(clang libclang-rt-14-dev)
    install_deps
    run_fuzz
    ;;
  *)
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
