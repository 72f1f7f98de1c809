#!/usr/bin/env bash
# Runs ON the lent GPU machine after `tar xzf .devpack/device.tgz`: the gpu test suite under
# compute-sanitizer, a process a test case, and the device-limit tests.
#   tools/device/hardening_run.sh sanitize|cases|limits ...   (in order)
# cases: one process a test case, $SAN_JOBS at a time (default 1), for each "tool:pattern" of
#   $CASES (tool plain: no sanitizer), in the order given, until $SAN_BUDGET seconds (default 500)
#   from the mode's start, each capped at $SAN_TIMEOUT (default 540). Whole test patterns under a
#   sanitizer outlast a device call (430 s each, most killed); single cases spread over
#   the host's cores. A summary line a case in cases-summary.txt (tool, case, rc, passed / failed,
#   the tool's error count, seconds); cases not started are named.
#   $SAN_DONE: earlier cases-summary files; a (tool, case) they show passed with rc 0 is not run again.
#   The word "kept" (here and in $SAN_ORDER; "committed" is accepted too) stands for every
#   $SAN_KEPT/*-cases-summary.txt (default logs/sanitize, gitignored: copy each call's
#   cases-summary.txt there under a dated name and carry "logs"), so a call needs no hand-kept list.
#   $SAN_SKIP: a regex of case names not run under a sanitizer (e.g. Past2To31: 17 GB of A).
#   $SAN_ORDER: earlier cases-summary files; cases start longest first by the seconds they show
#   (any tool's, the most; a case they do not show counts as 100 s), so the long ones do not start
#   last and outlast the budget while the cores idle. $SAN_SHORT_FIRST=1: shortest first instead,
#   for a budget too short for the long ones (the most cases done).
#   $SAN_FIRST: a regex of case names that start first, whatever $SAN_ORDER says.
#   $SAN_SHARDS: "Case=n tool:Case=m ..." (default $default_shards below): under a sanitizer, each
#   such case runs as n processes with DBSPARSE_TEST_SHARD=k/n (tests/test_support.hpp), which
#   together run each item of its loops once, named Case@k/n in the summary; "tool:Case=m" gives
#   that tool m instead (racecheck is the slow one); a whole-case pass in $SAN_DONE still counts.
#   $SAN_GPUS: GPUs to spread the processes over (default: those nvidia-smi lists, else 1); with
#   more than one, process i runs with CUDA_VISIBLE_DEVICES=i % SAN_GPUS, so a multi-GPU kind
#   (8 GPUs, 128 cores) runs SAN_JOBS=96 at once in one call where one GPU takes
#   three calls at 16 (the sanitizers are bound by the host's cores and the GPU they share).
#   $SAN_APP_ONLY: a regex of cases whose child processes run without the sanitizer
#   (--target-processes application-only; default ^Dbtune: its test runs a whole dbtune search as
#   a child, past 300 s under memcheck and racecheck; the kernels that search times are
#   the op families' own, which their cases cover under every tool).
#   Under racecheck each process runs with DBSPARSE_TEST_RACECHECK=1 (tests/test_support.hpp): the
#   deep BFS graphs and SpGEMM's one-row chunks shrink, and BFS runs past 320 levels are left out
#   there with a note on stdout; plain and the other tools run the full cases.
#   $SAN_DRY=1: print what would run (weight, tool, case) and run nothing; the case list needs no
#   device (test_gpu -ltc), so this checks a plan on any machine with a build.
# sanitize: `cases` with every tool of $SAN_TOOLS (default memcheck racecheck synccheck initcheck)
#   over every gpu case ($SAN_PATTERNS, default *) but the limits tests ($SAN_EXCLUDE, default
#   limits_cases below: run alone by `limits`). An exclusion rather than a list of
#   prefixes: a list missed a case added later (GatherKernelsPreferringL1...).
#   $SAN_PLAIN: doctest patterns (comma-separated) also run plain, sharing the same job slots.
# limits: DeviceOutOfMemory* and OneContext* (OOM without leaks, 8 threads x 400 calls), alone:
#   the OOM test fills the device.
set -uo pipefail
set -f  # the test-name patterns hold * for doctest, not for the shell
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
B=${SAN_BIN:-$D/bin}
summary=$OUT/cases-summary.txt
# Cases that outlast a device call whole under a sanitizer (killed at 300 s
# or by the budget) while taking 20-40 s plain. Item i of a case goes to shard i % n: a count prime
# to a loop's length (SpMV's 26 configs, SpMM's 12 (n, alpha / beta) a matrix, 27 or 13 plans a
# run) mixes that loop's heavy and light items into every shard. racecheck is the slow tool (16 at
# once, single processes were killed at 400-420 s): its counts aim at <= 150 s a
# piece. The SpGEMM chunk and overflow cases have 3 items (a plan each): no finer split.
# Under racecheck the cost of a BFS run grows with its levels, not its entries (16 at
# once: one run on the 2000-vertex path, 2000 levels, outlasted 500 s with block_warps = 32; the
# R-MAT runs of the same case took seconds): BfsWide* is graph-major, so its 36 racecheck pieces
# hold one path run each, beside one stencil run and one R-MAT run.
default_shards="SpmmMatchesReferenceForEveryFAndG=10 SpmmHalfMatchesReference=10 SpmmCondensedWindowsMatchReference=5
  BfsMatchesReferenceOnPathStarAndDisconnectedGraphs=4 BfsMatchesReferenceOnGeneratedGraphs=2
  BfsWideBlocksAndSoloLevelsMatchReference=9 BfsMatchesReferenceOnRealMatrices=4
  SpgemmGpuFromDeviceCsrMatchesReference=7
  DecodeLinearMatchesReferenceInEveryDtype=7 DecodeLinearRingAndDenseColumnsMatchReferenceOnOddShapes=6
  DecodeLinearMatchesReferenceOn8bShapes=4 DecodeLinearDenseMatchesReference=6
  SpmvStrategiesMatchReference=5 SpmspvResidualMatchesReference=4
  SpmmHalfPiecesExpandedOperandsAndHostConversionMatchReference=4 SpmmPiecesAndExpandedOperandsMatchReference=4
  SpgemmGpuMatchesReferenceWithGlobalTablesInChunks=3 BfsOn64BitOffsetsMatchesReference=3
  initcheck:SpmvStrategiesMatchReference=9 initcheck:SpmmHalfPiecesExpandedOperandsAndHostConversionMatchReference=8
  racecheck:SpmvStrategiesMatchReference=15 racecheck:SpmspvResidualMatchesReference=12
  racecheck:SpmmHalfPiecesExpandedOperandsAndHostConversionMatchReference=16
  racecheck:SpmmPiecesAndExpandedOperandsMatchReference=10 racecheck:SpmmMatchesReferenceForEveryFAndG=19
  racecheck:TriangleCountGpuMatchesTheCpuOnGeneratedGraphs=16 racecheck:BfsOn64BitOffsetsMatchesReference=20
  racecheck:BfsMatchesReferenceOnPathStarAndDisconnectedGraphs=20 racecheck:BfsMatchesReferenceOnGeneratedGraphs=20
  racecheck:BfsMatchesReferenceOnRealMatrices=24 racecheck:BfsWideBlocksAndSoloLevelsMatchReference=36
  racecheck:SpgemmGpuMatchesReferenceWhenARowOverflowsToTheGlobalTable=3"

# A case's pieces split a whole case's seconds evenly, which hides one heavy item a piece (the BFS
# paths under racecheck): $SAN_FIRST, a regex of case names, starts those before every other.
first_bonus() {
  if [[ -n "${SAN_FIRST:-}" && $1 =~ $SAN_FIRST ]]; then echo 1000000; else echo 0; fi
}

# The summary files named by $@, "kept" expanded (set -f: find, not a glob).
summaries() {
  local f
  for f in "$@"; do
    if [ "$f" = kept ] || [ "$f" = committed ]; then
      [ -d "${SAN_KEPT:-logs/sanitize}" ] && find "${SAN_KEPT:-logs/sanitize}" -maxdepth 1 -name '*-cases-summary.txt' | sort
    else echo "$f"
    fi
  done
}

# The shard count of tool $1 for case $2: its "tool:Case=n" entry, else its "Case=n", else 1.
shards_of() {
  local e n=1
  for e in ${SAN_SHARDS-$default_shards}; do
    case ${e%%=*} in
      "$1:$2") echo "${e#*=}"; return ;;
      "$2") n=${e#*=} ;;
    esac
  done
  echo "$n"
}

case_one() {
  local tool=$1 tc=$2 gpu=$3 log s0 rc errs left name=${2%@*} shard= on=() scope=all
  [ "$gpu" = - ] || on=(env CUDA_VISIBLE_DEVICES="$gpu")
  local own=${SAN_APP_ONLY-^Dbtune}
  [ -n "$own" ] && [[ $name =~ $own ]] && scope=application-only
  [ "$name" = "$tc" ] || shard=${tc#*@}
  left=$(( deadline - $(date +%s) ))
  [ "$left" -gt 15 ] || { echo "$tool $tc not started (budget)" >>"$summary"; return; }
  [ "$left" -lt "${SAN_TIMEOUT:-540}" ] || left=${SAN_TIMEOUT:-540}
  log=$OUT/cases/$tool-${tc//\//-}.log
  s0=$(date +%s)
  if [ "$tool" = plain ]; then
    DBSPARSE_TEST_SHARD=$shard "${on[@]}" timeout "$left" "$B/test_gpu" -tc="$name" >"$log" 2>&1
  else
    # racecheck: the few counts it pays for per level or chunk shrink (tests/test_support.hpp).
    DBSPARSE_TEST_RACECHECK=$([ "$tool" = racecheck ] && echo 1) \
    DBSPARSE_TEST_SHARD=$shard "${on[@]}" timeout "$left" compute-sanitizer --tool "$tool" --target-processes "$scope" --error-exitcode 9 "$B/test_gpu" -tc="$name" >"$log" 2>&1
  fi
  rc=$?
  errs=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
  echo "$tool $tc rc=$rc $(grep -E 'test cases' "$log" | tail -1 | grep -Eo '[0-9]+ passed \| *[0-9]+ failed') ${errs:-} $(( $(date +%s) - s0 )) s" \
    >>"$summary"
}

# Every case of each "tool:pattern" of $1, through case_one.
run_cases() {
  deadline=$(( t0 + ${SAN_BUDGET:-500} ))
  mkdir -p "$OUT/cases"
  declare -A queued=()
  for f in $(summaries ${SAN_DONE:-}); do
    while read -r tool tc rest; do
      case $rest in "rc=0 1 passed"*) queued[$tool:$tc]=1 ;; esac
    done <"$f"
  done
  declare -A took=()
  for f in $(summaries ${SAN_ORDER:-}); do
    while read -r tool tc rest; do
      local secs=${rest% s}
      secs=${secs##* }
      [[ $secs =~ ^[0-9]+$ ]] || continue
      [ "$secs" -le "${took[$tc]:-0}" ] || took[$tc]=$secs
    done <"$f"
  done
  local todo=()
  for entry in $1; do
    tool=${entry%%:*}
    while IFS= read -r tc; do
      [ -z "${queued[$tool:$tc]:-}" ] || continue
      [[ $tool != plain && -n "${SAN_SKIP:-}" && $tc =~ $SAN_SKIP ]] && continue
      queued[$tool:$tc]=1
      local n=1 k
      [ "$tool" = plain ] || n=$(shards_of "$tool" "$tc")
      if [ "$n" -le 1 ]; then
        todo+=("$(( ${took[$tc]:-100} + $(first_bonus "$tc") )) $tool $tc")
        continue
      fi
      for (( k = 0; k < n; ++k )); do
        [ -z "${queued[$tool:$tc@$k/$n]:-}" ] || continue
        todo+=("$(( (${took[$tc]:-300} + n - 1) / n + $(first_bonus "$tc") )) $tool $tc@$k/$n")
      done
    done < <("$B/test_gpu" -ltc -tc="${entry#*:}" -tce="$exclude" | grep -v -E '^(\[doctest\]|=+$)')
  done
  # Without SAN_ORDER every weight is 100 and the stable sort keeps the order given.
  local order=-rn
  [ "${SAN_SHORT_FIRST:-0}" = 1 ] && order=-n
  local gpus=${SAN_GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')} started=0
  [[ $gpus =~ ^[0-9]+$ && $gpus -ge 1 ]] || gpus=1
  if [ "${SAN_DRY:-0}" = 1 ]; then
    printf '%s\n' "${todo[@]}" | sort -s -k1,1 $order
    echo "cases: ${#todo[@]} would run, ${SAN_JOBS:-1} at a time over $gpus GPU(s)"
    return
  fi
  while read -r _ tool tc; do
    [ -n "$tc" ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "${SAN_JOBS:-1}" ]; do wait -n; done
    # One GPU: the process sees what the machine gives it, as before.
    if [ "$gpus" -gt 1 ]; then case_one "$tool" "$tc" $(( started % gpus )) &
    else case_one "$tool" "$tc" - &
    fi
    started=$(( started + 1 ))
  done < <(printf '%s\n' "${todo[@]}" | sort -s -k1,1 $order)
  wait
  echo "cases: $(grep -c ' rc=0 1 passed' "$summary") passed with rc 0, $(grep -c ' rc=' "$summary") run, $(grep -c 'not started' "$summary") not started"
  grep -v ' rc=0 1 passed' "$summary" | grep -v 'not started' | head -20
}

# The limits tests fill the device (they would starve the processes beside them) and expect
# cuMemAlloc to fail, an API error every tool counts: `limits` runs them alone, plain, and
# `sanitize` leaves them out. `cases` runs what $CASES names, nothing excluded.
limits_cases='DeviceOutOfMemory*,OneContext*'
exclude=
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    cases) exclude=; run_cases "${CASES:-}" ;;
    sanitize)
      exclude=${SAN_EXCLUDE-$limits_cases}
      patterns=${SAN_PATTERNS:-*}
      list=${SAN_PLAIN:+plain:$SAN_PLAIN}  # cases also run without a sanitizer, in the same slots
      for tool in ${SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do list="$list $tool:$patterns"; done
      run_cases "$list" ;;
    limits)
      timeout "${SAN_TIMEOUT:-540}" "$B/test_gpu" -tc="$limits_cases" -s >"$OUT/limits.log" 2>&1
      echo "limits rc $?"; grep -E "MESSAGE|ERROR|test cases|thread error" "$OUT/limits.log" | head -30 ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
