#!/usr/bin/env bash
# Runs ON the lent H200 after `tar xzf .devpack/device.tgz` (issue 36): compute-sanitizer over the
# gpu test suite, tool by tool and family by family, and the device-limit tests.
#   tools/device/hardening_run.sh sanitize|limits ...   (in order)
# sanitize: each tool of $SAN_TOOLS (default memcheck racecheck synccheck initcheck) over each
#   test-name pattern of $SAN_PATTERNS (default: seven patterns that cover every gpu test but the
#   limits tests), a log per (tool, pattern) and one summary line each: tool, pattern, test cases run,
#   failed, the tool's error count, seconds. $SAN_TIMEOUT caps each (default 540 s); $SAN_JOBS
#   runs that many at once (default 1).
# limits: DeviceOutOfMemory* and OneContext* (OOM without leaks, 8 threads x 400 calls).
set -uo pipefail
set -f  # the test-name patterns hold * for doctest, not for the shell
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
B=$D/bin
summary=$OUT/sanitize-summary.txt
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    sanitize)
      # The (tool, pattern) runs are independent and mostly host-bound under the sanitizer: run
      # $SAN_JOBS at a time (default 1) so the four tools over the suite fit one device call.
      san_one() {
        local tool=$1 pat=$2 name log s0 rc cases errs
        name=$(echo "$pat" | tr -c 'A-Za-z0-9\n' '_')
        log=$OUT/san-$tool-$name.log
        s0=$(date +%s)
        timeout "${SAN_TIMEOUT:-540}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
          "$B/test_gpu" -tc="$pat" >"$log" 2>&1
        rc=$?
        cases=$(grep -Eo 'test cases: *[0-9]+ \| *[0-9]+ passed \| *[0-9]+ failed' "$log" | tail -1)
        errs=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)
        echo "$tool $pat rc=$rc [$cases] ${errs:-no summary} $(( $(date +%s) - s0 )) s" | tee -a "$summary"
      }
      for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
        for pat in ${SAN_PATTERNS:-Spmv* Spmspv* Bfs* Spmm*,Gcn*,BenchGcn* Spgemm*,Square*,Contract*,Mcl*,Triangle* Decode*,Sparse*,Compact* Brp*,Cuda*,Dbtune*,Explore*,Context*,DeviceBuffer*,Events*,Module*}; do
          while [ "$(jobs -rp | wc -l)" -ge "${SAN_JOBS:-1}" ]; do wait -n; done
          san_one "$tool" "$pat" &
        done
      done
      wait ;;
    limits)
      timeout "${SAN_TIMEOUT:-540}" "$B/test_gpu" -tc="DeviceOutOfMemory*,OneContext*" -s >"$OUT/limits.log" 2>&1
      echo "limits rc $?"; grep -E "MESSAGE|ERROR|test cases|thread error" "$OUT/limits.log" | head -30 ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
