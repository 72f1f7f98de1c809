#!/usr/bin/env bash
# Runs ON the lent H200 after `tar xzf .devpack/device.tgz` (issue 36): compute-sanitizer over the
# gpu test suite, tool by tool and family by family, and the device-limit tests.
#   tools/device/hardening_run.sh sanitize|cases|limits ...   (in order)
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
    cases)
      # One process a test case, $SAN_JOBS at a time, for each "tool:pattern" of $CASES (tool plain:
      # no sanitizer), in the order given, until $SAN_BUDGET seconds (default 500) from the start:
      # whole test patterns under a sanitizer outlast a device call, single cases spread over the
      # host's cores. A summary line a case in cases-summary.txt; cases not started are named.
      # $SAN_DONE: see below.
      deadline=$(( t0 + ${SAN_BUDGET:-500} ))
      mkdir -p "$OUT/cases"
      case_one() {
        local tool=$1 tc=$2 log s0 rc errs left
        left=$(( deadline - $(date +%s) ))
        [ "$left" -gt 15 ] || { echo "$tool $tc not started (budget)" >>"$OUT/cases-summary.txt"; return; }
        [ "$left" -lt "${SAN_TIMEOUT:-540}" ] || left=${SAN_TIMEOUT:-540}
        log=$OUT/cases/$tool-$tc.log
        s0=$(date +%s)
        if [ "$tool" = plain ]; then
          timeout "$left" "$B/test_gpu" -tc="$tc" >"$log" 2>&1
        else
          timeout "$left" compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/test_gpu" -tc="$tc" >"$log" 2>&1
        fi
        rc=$?
        errs=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
        echo "$tool $tc rc=$rc $(grep -E 'test cases' "$log" | tail -1 | grep -Eo '[0-9]+ passed \| *[0-9]+ failed') ${errs:-} $(( $(date +%s) - s0 )) s" \
          >>"$OUT/cases-summary.txt"
      }
      # $SAN_DONE: earlier cases-summary files (space-separated); a (tool, case) they show passed
      # with rc 0 is not run again.
      declare -A queued=()
      for f in ${SAN_DONE:-}; do
        while read -r tool tc rest; do
          case $rest in "rc=0 1 passed"*) queued[$tool:$tc]=1 ;; esac
        done <"$f"
      done
      for entry in ${CASES:-}; do
        tool=${entry%%:*}
        while IFS= read -r tc; do
          [ -z "${queued[$tool:$tc]:-}" ] || continue
          # $SAN_SKIP: a regex of case names not to run under a sanitizer (e.g. Past2To31: 17 GB)
          [[ $tool != plain && -n "${SAN_SKIP:-}" && $tc =~ $SAN_SKIP ]] && continue
          queued[$tool:$tc]=1
          while [ "$(jobs -rp | wc -l)" -ge "${SAN_JOBS:-1}" ]; do wait -n; done
          case_one "$tool" "$tc" &
        done < <("$B/test_gpu" -ltc -tc="${entry#*:}" | grep -v -E '^(\[doctest\]|=+$)')
      done
      wait
      echo "cases: $(grep -c ' rc=0 1 passed' "$OUT/cases-summary.txt") passed with rc 0, $(grep -c ' rc=' "$OUT/cases-summary.txt") run, $(grep -c 'not started' "$OUT/cases-summary.txt") not started"
      grep -v ' rc=0 1 passed' "$OUT/cases-summary.txt" | grep -v 'not started' | head -20 ;;
    limits)
      timeout "${SAN_TIMEOUT:-540}" "$B/test_gpu" -tc="DeviceOutOfMemory*,OneContext*" -s >"$OUT/limits.log" 2>&1
      echo "limits rc $?"; grep -E "MESSAGE|ERROR|test cases|thread error" "$OUT/limits.log" | head -30 ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
