#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, Debian's clang, ASan + UBSan) into build-fuzz/ and
# runs each for $1 seconds (default 30; CI's test command runs them briefly, developers for long)
# from the seed corpus in tests/fuzz/corpus/<harness>; new inputs go to build-fuzz/corpus/.
# A finding stops the run with the harness's report and a crash-* file to add as a regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (apt-get install clang)"; exit 77
fi
mkdir -p build-fuzz
# Quiet when it works, the whole log when it does not: a link error must not fail CI in silence.
if ! cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ >build-fuzz/build.log 2>&1 ||
   ! cmake --build build-fuzz -j "$(nproc 2>/dev/null || echo 2)" >>build-fuzz/build.log 2>&1; then
  echo "fuzz: building the harnesses failed:"; grep -E "error|undefined" build-fuzz/build.log | head -40; exit 1
fi
for h in matrix_market cache_entry safetensors configs kernel_keys tuning_db_rows csr_arrays; do
  mkdir -p build-fuzz/corpus/$h build-fuzz/findings
  if ! (cd build-fuzz/findings && ../fuzz_$h -max_total_time="$secs" -rss_limit_mb=2048 -max_len=4096 \
          ../corpus/$h ../../tests/fuzz/corpus/$h >../fuzz_$h.log 2>&1); then
    echo "fuzz_$h: FINDING (build-fuzz/fuzz_$h.log, build-fuzz/findings/)"; tail -30 build-fuzz/fuzz_$h.log; exit 1
  fi
  echo "fuzz_$h: $(grep -o 'Done [0-9]* runs in [0-9]* second' build-fuzz/fuzz_$h.log | tail -1)s, no finding"
done
