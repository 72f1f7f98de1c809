#!/usr/bin/env bash
# Runs ON the lent GPU machine after `tar xzf .devpack/device.tgz`: decoding gpu tests,
# the SpMM tensor-core tests, decode-bench per model, and an Nsight Compute pass over one layer.
#   tools/device/decode_run.sh tests|bench8b|benchsmall|bench7b|ncu|sanitize ...   (several modes in order)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
B=$D/bin
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    tests)
      nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/tests.log" 2>&1
      "$B/test_gpu" -tc='Decode*,SparseLinear*,Spmm*,Brp*,Tc*,Gcn*' >>"$OUT/tests.log" 2>&1; echo "tests rc $?"
      tail -3 "$OUT/tests.log" ;;
    rest)
      "$B/test_gpu" -tce='Decode*,SparseLinear*,Spmm*,Brp*,Tc*,Gcn*,Dbtune*,Explore*' >"$OUT/rest.log" 2>&1; echo "rest rc $?"
      tail -3 "$OUT/rest.log" ;;
    bench8b)  "$B/dbsparse" decode-bench --model llama-3.1-8b --json "$OUT/llama8b.json" >"$OUT/llama8b.txt" 2>&1; tail -5 "$OUT/llama8b.txt" ;;
    bench7b)  "$B/dbsparse" decode-bench --model qwen2.5-7b --json "$OUT/qwen7b.json" >"$OUT/qwen7b.txt" 2>&1; tail -5 "$OUT/qwen7b.txt" ;;
    benchbf16) "$B/dbsparse" decode-bench --model llama-3.1-8b --dtype bf16 --no-fuse --act-density 1,0.5 >"$OUT/llama8b-bf16.txt" 2>&1; tail -3 "$OUT/llama8b-bf16.txt" ;;
    benchsmall)
      for m in qwen3-0.6b llama-3.2-1b qwen2.5-1.5b; do
        "$B/dbsparse" decode-bench --model $m --json "$OUT/$m.json" >"$OUT/$m.txt" 2>&1; tail -4 "$OUT/$m.txt"
      done ;;
    ncu)
      ncu --clock-control none -k regex:decode_dense_cols -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section Occupancy --section LaunchStats --section WarpStateStats \
        "$B/dbsparse" decode-bench --model llama-3.1-8b --only gate --act-density 0.5 >"$OUT/ncu-dbcols-gate.txt" 2>&1
      ncu --clock-control none -k regex:decode_lanes_ring -c 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section InstructionStats \
        "$B/dbsparse" decode-bench --model llama-3.1-8b --only gate --act-density 0.5 >"$OUT/ncu-ring-gate.txt" 2>&1
      grep -E "Duration|DRAM Throughput|Memory Throughput|Registers|Achieved Occupancy|Issue Slots|Executed Ipc" "$OUT"/ncu-*.txt | head -40 ;;
    sanitize)
      for tool in memcheck racecheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 "$B/test_gpu" -tc='DecodeLinearRingAndDenseColumnsMatchReferenceOnOddShapes,DecodeLinearDenseMatchesReference' >"$OUT/$tool.log" 2>&1
        echo "$tool rc $? $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
      done ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
