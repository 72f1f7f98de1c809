#!/usr/bin/env bash
# Hostile-input sweep: plays a hostile user of dbsparse / dbtune on a machine without a GPU.
#
#   tools/hostile/sweep.sh [BUILD_DIR]        (default: build)
#
# Every input is made under a temp dir this script creates (and removes). Each case runs with
# `timeout 60` under `ulimit -v 8000000` and is classified:
#   CRASH    killed by a signal (exit >= 128, not a timeout) or Aborted/Segmentation/terminate called
#   HANG     timeout fired
#   INTERNAL "internal error" or "bad_alloc" in the output
#   SILENT   bad input accepted: exit 0 (or exit 3, "no CUDA device", i.e. it got past every check
#            up to the device), or a damage check after the command failed
#   UNCLEAR  bad input refused, but the error does not name the file / spec / option (and line)
#   REFUSED  a valid (or tolerable) input refused, or a status command failing where it should report
#   OK       the expected outcome
# Expectations per case: fail (must be refused, naming NAME_RE), pass (exit 0), nogpu (exit 0 or 3:
# parsed, then stopped by the missing device), warn:RE (exit 0 and stderr matches RE), either
# (exit 0, or refused naming NAME_RE), usage (non-zero exit or a usage text).
# Output: one line per case `CLASS family case exit 'first stderr line'`, a summary per family, then
# the command of every case. SWEEP_VERBOSE=1 also writes each case's output to stderr.
# SWEEP_FAMILIES=db,cache runs only the cases of those families (the inputs of all are still made).
set -u
BUILD=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "sweep: no build dir '${1:-build}'" >&2; exit 2; }
DBS=$BUILD/dbsparse
DBT=$BUILD/dbtune
for b in "$DBS" "$DBT"; do [[ -x $b ]] || { echo "sweep: $b is not an executable" >&2; exit 2; }; done
T=$(mktemp -d "${TMPDIR:-/tmp}/dbsparse-hostile.XXXXXX")
chmod 755 "$T"
IMMUTABLE=()
cleanup() {
  for f in "${IMMUTABLE[@]}"; do chattr -i "$f" 2>/dev/null; done
  chmod -R u+rwX "$T" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
# Keep everything away from the user's own cache, DB and shared matrices.
export HOME=$T/home XDG_CACHE_HOME=$T/xdg-cache XDG_DATA_HOME=$T/xdg-data
export DBSPARSE_DB=$T/default.db DBSPARSE_CACHE_DIR=$T/cache-warm DBSPARSE_MATRICES=$T/no-shared
export DBS DBT T
mkdir -p "$HOME" "$T/mtx" "$T/gz" "$T/st" "$T/db" "$T/cache" "$T/cli" "$T/out"
MEMCAP_KB=8000000
TIMEOUT=60
SWEEP_START=$SECONDS
IS_ROOT=0
[[ $(id -u) == 0 ]] && IS_ROOT=1
# As root, chmod does not bite: permission cases run as nobody through setpriv when it works.
AS_NOBODY=""
if [[ $IS_ROOT == 1 ]] && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
export AS_NOBODY

declare -a R_FAM R_CLASS R_NAME R_CMD
declare -A FAMS_SEEN
FAM_ORDER=()

# case_ FAMILY NAME EXPECT NAME_RE 'COMMAND (bash, run by bash -c)'
case_() {
  local fam=$1 name=$2 expect=$3 name_re=$4 cmd=$5
  [[ -n ${SWEEP_FAMILIES:-} && ",$SWEEP_FAMILIES," != *",$fam,"* ]] && return 0
  local out=$T/run.out err=$T/run.err
  local t0=$SECONDS
  (ulimit -v $MEMCAP_KB; exec timeout -k 5 $TIMEOUT bash -c "$cmd") >"$out" 2>"$err" </dev/null
  local rc=$? dt=$((SECONDS - t0))
  tr '\r' '\n' <"$err" >"$err.n"
  local first
  # The first stderr line; past dbtune's progress lines ("kernels for ...") when there are any.
  first=$(grep -a -v '^[[:space:]]*$' "$err.n" | grep -a -v -E '^kernels for |^\[[0-9]+/[0-9]+\] ' | head -1 | tr -d '\000' | cut -c1-220)
  local all
  all=$(cat "$out" "$err.n")
  local class=OK note=""
  if [[ ($rc == 124 || $rc == 137) && $dt -ge $TIMEOUT ]]; then
    class=HANG
  elif [[ $rc -ge 128 ]] || grep -aqE 'Aborted|Segmentation|terminate called|core dumped|AddressSanitizer|stack smashing|double free|free\(\): ' <<<"$all"; then
    class=CRASH
  elif grep -aqE 'internal error|bad_alloc' <<<"$all"; then
    class=INTERNAL
  elif grep -aq 'HOSTILE-CHECK-FAILED' "$err.n"; then
    class=SILENT
    first=$(grep -a -m1 'HOSTILE-CHECK-FAILED' "$err.n" | cut -c1-220)
  else
    local named=1
    [[ $name_re != - ]] && ! grep -aqE -- "$name_re" "$err.n" && named=0
    case $expect in
      fail)
        if [[ $rc == 0 ]]; then class=SILENT
        elif [[ $rc == 3 ]] && grep -aq 'no CUDA device' "$err.n"; then class=SILENT; note=" (accepted up to the no-GPU check)"
        elif [[ $named == 0 ]]; then class=UNCLEAR; fi ;;
      pass) [[ $rc == 0 ]] || class=REFUSED ;;
      nogpu) [[ $rc == 0 || $rc == 3 ]] || class=REFUSED ;;
      warn:*)
        if [[ $rc != 0 ]]; then class=REFUSED
        elif ! grep -aqE -- "${expect#warn:}" "$err.n"; then class=SILENT; fi ;;
      report:*)
        if [[ $rc != 0 ]]; then class=REFUSED
        elif ! grep -aqE -- "${expect#report:}" <<<"$all"; then class=SILENT; fi ;;
      either)
        [[ $rc == 0 || $named == 1 ]] || { [[ $rc == 3 ]] && grep -aq 'no CUDA device' "$err.n"; } || class=UNCLEAR ;;
      usage) [[ $rc != 0 ]] || grep -aq 'Usage' <<<"$all" || class=SILENT ;;
      *) echo "sweep: bad expectation '$expect' in $fam/$name" >&2; exit 2 ;;
    esac
  fi
  if [[ -z ${FAMS_SEEN[$fam]:-} ]]; then FAMS_SEEN[$fam]=1; FAM_ORDER+=("$fam"); fi
  R_FAM+=("$fam"); R_CLASS+=("$class"); R_NAME+=("$name"); R_CMD+=("$cmd")
  printf "%-8s %-8s %-34s %3d '%s'%s\n" "$class" "$fam" "$name" "$rc" "$first" "$note"
  if [[ -n ${SWEEP_VERBOSE:-} ]]; then   # SWEEP_VERBOSE=1: each case's output, for checking the expectations
    { echo "    \$ $cmd"; tr '\r' '\n' <"$out" | head -c 3000 | sed 's/^/    out| /'; head -c 3000 "$err.n" | sed 's/^/    err| /'; } >&2
  fi
}

MM_HEAD='%%MatrixMarket matrix coordinate real general'
mk() { printf '%b' "$2" >"$T/mtx/$1"; }   # mk NAME 'CONTENT with \n'
VALID="$MM_HEAD\n3 3 3\n1 1 1.0\n2 2 2.0\n3 3 3.0\n"
echo "# dbsparse hostile-input sweep: $(date -u +%Y-%m-%dT%H:%M:%SZ), build $BUILD, $(uname -m), uid $(id -u)"
echo "# $("$DBS" --version 2>&1)  |  memory cap ulimit -v $MEMCAP_KB KB, timeout ${TIMEOUT}s per case"
if [[ $IS_ROOT == 1 ]]; then
  echo "# running as root: chmod alone does not stop root, so permission cases run as uid 65534 via setpriv"
  [[ -n $AS_NOBODY ]] || echo "#   (setpriv unavailable: those cases are not meaningful as root)"
fi
echo

############################################################################ 1. Matrix Market
F=mtx
mk valid.mtx "$VALID"
mk crlf.mtx "${VALID//\\n/\\r\\n}"
mk tabs.mtx "$MM_HEAD\n3\t3\t2\n1\t1\t+1.5\n3\t2\t-2e-3\n"
mk comments.mtx "$MM_HEAD\n%% c\n\n3 3 2\n%% mid\n1 1 1\n\n2 2 2\n"
mk bad_banner.mtx "%%MatrixMarkit matrix coordinate real general\n3 3 1\n1 1 1\n"
mk no_banner.mtx "3 3 1\n1 1 1\n"
mk array.mtx "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n"
mk field_reel.mtx "%%MatrixMarket matrix coordinate reel general\n3 3 1\n1 1 1\n"
mk field_complex.mtx "%%MatrixMarket matrix coordinate complex general\n3 3 1\n1 1 1 0\n"
mk sym_word.mtx "%%MatrixMarket matrix coordinate real symmetrical\n3 3 1\n1 1 1\n"
mk hermitian.mtx "%%MatrixMarket matrix coordinate real hermitian\n3 3 1\n1 1 1\n"
mk pattern_skew.mtx "%%MatrixMarket matrix coordinate pattern skew-symmetric\n3 3 1\n2 1\n"
mk banner_extra.mtx "$MM_HEAD extra\n3 3 1\n1 1 1\n"
mk bom.mtx "\xef\xbb\xbf$VALID"
mk crlf_first.mtx "\r\n$VALID"
mk sym_upper.mtx "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 2 1.0\n2 3 2.0\n"
mk size_neg.mtx "$MM_HEAD\n-3 3 1\n1 1 1\n"
mk size_2p31.mtx "$MM_HEAD\n2147483648 3 1\n1 1 1\n"
mk size_2p63.mtx "$MM_HEAD\n9223372036854775808 9223372036854775808 1\n1 1 1\n"
mk size_1e30.mtx "$MM_HEAD\n1e30 3 1\n1 1 1\n"
mk nnz_2p31.mtx "$MM_HEAD\n3 3 2147483648\n1 1 1\n"
mk nnz_2p63.mtx "$MM_HEAD\n3 3 9223372036854775807\n1 1 1\n"
mk huge_shape_3.mtx "$MM_HEAD\n2147483647 2147483647 3\n1 1 1\n2147483647 2147483647 2\n5 7 3\n"
mk shape_1e9_3.mtx "$MM_HEAD\n1000000000 1000000000 3\n1 1 1\n1000000000 1000000000 2\n5 7 3\n"
mk size_two.mtx "$MM_HEAD\n3 3\n1 1 1\n"
mk size_text.mtx "$MM_HEAD\n3 3 x\n1 1 1\n"
mk fewer.mtx "$MM_HEAD\n3 3 5\n1 1 1\n2 2 2\n"
mk fewer_1e9.mtx "$MM_HEAD\n3 3 1000000000\n1 1 1\n"
mk more.mtx "$MM_HEAD\n3 3 1\n1 1 1\n2 2 2\n"
mk idx0.mtx "$MM_HEAD\n3 3 2\n1 1 1\n0 2 1\n"
mk idx_oob.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 4 1\n"
mk idx_neg.mtx "$MM_HEAD\n3 3 2\n1 1 1\n-1 2 1\n"
mk idx_huge.mtx "$MM_HEAD\n3 3 2\n1 1 1\n99999999999999999999 2 1\n"
mk idx_float.mtx "$MM_HEAD\n3 3 2\n1 1 1\n1.0 2 1\n"
mk val_nan.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2 nan\n"
mk val_inf.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2 -inf\n"
mk val_1e309.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2 1e309\n"
mk val_1e39.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2 1e39\n"
mk val_1e-400.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2 1e-400\n"
mk val_hex.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2 0x1p3\n"
mk val_missing.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2\n"
mk val_extra.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2 2 2\n"
mk int_frac.mtx "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n"
mk int_huge.mtx "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 99999999999999999999\n"
mk pattern_val.mtx "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 7\n"
mk sym_mirror.mtx "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n1 2 5\n3 3 1\n"
mk sym_both_tri.mtx "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n1 3 5\n3 3 1\n"
mk sym_nonsquare.mtx "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n"
mk skew_diag.mtx "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n"
mk nul_byte.mtx "$MM_HEAD\n3 3 2\n1 1 1\n2 2\x002\n"
mk banner_only.mtx "$MM_HEAD\n"
mk nonsquare.mtx "$MM_HEAD\n3 4 1\n1 4 1\n"
: >"$T/mtx/empty.mtx"
python3 -c "import random,sys; r=random.Random(7); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(65536)))" >"$T/mtx/garbage.mtx"
mkdir -p "$T/mtx/adir.mtx"
ln -s "$T/mtx/gone.mtx" "$T/mtx/dangling.mtx"
cp "$T/mtx/valid.mtx" "$T/mtx/noread.mtx"; chmod 000 "$T/mtx/noread.mtx"
(cd "$T/mtx" && cp valid.mtx 'uniform:n=5')
# A file of 3M entries for the truncated-while-reading race.
python3 - "$T/mtx/big.mtx" <<'EOF'
import sys
n = 3000000
with open(sys.argv[1], "w") as f:
    f.write("%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (n, n, n))
    f.write("".join("%d %d 1.5\n" % (i, i) for i in range(1, n + 1)))
EOF

M=$T/mtx
case_ $F valid pass - '$DBS convert $T/mtx/valid.mtx'
case_ $F valid_reorder pass - '$DBS reorder $T/mtx/valid.mtx'
case_ $F valid_process_subst pass - '$DBS convert <(cat $T/mtx/valid.mtx)'
case_ $F valid_stdin_devfd pass - '$DBS convert /dev/stdin < $T/mtx/valid.mtx'
case_ $F crlf pass - '$DBS convert $T/mtx/crlf.mtx'
case_ $F tabs_plus_sign pass - '$DBS convert $T/mtx/tabs.mtx'
case_ $F comments_blank_lines pass - '$DBS convert $T/mtx/comments.mtx'
case_ $F file_named_like_spec pass - 'cd $T/mtx && $DBS convert uniform:n=5'
case_ $F bad_banner fail 'bad_banner.mtx:1' '$DBS convert $T/mtx/bad_banner.mtx'
case_ $F no_banner fail 'no_banner.mtx:1' '$DBS convert $T/mtx/no_banner.mtx'
case_ $F array_format fail 'array.mtx:1' '$DBS convert $T/mtx/array.mtx'
case_ $F field_reel fail 'field_reel.mtx:1' '$DBS convert $T/mtx/field_reel.mtx'
case_ $F field_complex fail 'field_complex.mtx:1' '$DBS convert $T/mtx/field_complex.mtx'
case_ $F symmetry_word fail 'sym_word.mtx:1' '$DBS convert $T/mtx/sym_word.mtx'
case_ $F hermitian fail 'hermitian.mtx:1' '$DBS convert $T/mtx/hermitian.mtx'
case_ $F pattern_skew fail 'pattern_skew.mtx:1' '$DBS convert $T/mtx/pattern_skew.mtx'
case_ $F banner_extra_word fail 'banner_extra.mtx:1' '$DBS convert $T/mtx/banner_extra.mtx'
case_ $F utf8_bom pass - '$DBS convert $T/mtx/bom.mtx'
case_ $F empty_line_before_banner fail 'crlf_first.mtx:1.*empty line' '$DBS convert $T/mtx/crlf_first.mtx'
case_ $F symmetric_upper_triangle warn:'sym_upper.mtx.*above the diagonal' - '$DBS convert $T/mtx/sym_upper.mtx'
case_ $F size_negative fail 'size_neg.mtx:2' '$DBS convert $T/mtx/size_neg.mtx'
case_ $F size_rows_2p31 fail 'size_2p31.mtx:2' '$DBS convert $T/mtx/size_2p31.mtx'
case_ $F size_2p63 fail 'size_2p63.mtx:2' '$DBS convert $T/mtx/size_2p63.mtx'
case_ $F size_1e30 fail 'size_1e30.mtx:2' '$DBS convert $T/mtx/size_1e30.mtx'
case_ $F nnz_2p31 fail 'nnz_2p31.mtx:2' '$DBS convert $T/mtx/nnz_2p31.mtx'
case_ $F nnz_int64_max fail 'nnz_2p63.mtx:2' '$DBS convert $T/mtx/nnz_2p63.mtx'
case_ $F shape_2p31m1_sq_3_entries fail 'huge_shape_3.mtx:2' '$DBS convert $T/mtx/huge_shape_3.mtx'
case_ $F shape_2p31m1_sq_reorder fail 'huge_shape_3.mtx:2' '$DBS reorder $T/mtx/huge_shape_3.mtx'
case_ $F shape_1e9_sq_3_entries either 'shape_1e9_3.mtx' '$DBS convert $T/mtx/shape_1e9_3.mtx'
case_ $F shape_1e9_host_memory_1G fail 'shape_1e9_3.mtx:2' 'DBSPARSE_HOST_MEMORY=1G $DBS convert $T/mtx/shape_1e9_3.mtx'
case_ $F host_memory_env_garbage either 'DBSPARSE_HOST_MEMORY' 'DBSPARSE_HOST_MEMORY=lots $DBS convert $T/mtx/valid.mtx'
case_ $F size_two_numbers fail 'size_two.mtx:2' '$DBS convert $T/mtx/size_two.mtx'
case_ $F size_text fail 'size_text.mtx:2' '$DBS convert $T/mtx/size_text.mtx'
case_ $F fewer_entries fail 'fewer.mtx:[0-9]' '$DBS convert $T/mtx/fewer.mtx'
case_ $F fewer_entries_1e9_declared fail 'fewer_1e9.mtx:[0-9]' '$DBS convert $T/mtx/fewer_1e9.mtx'
case_ $F more_entries fail 'more.mtx:4' '$DBS convert $T/mtx/more.mtx'
case_ $F index_zero fail 'idx0.mtx:4' '$DBS convert $T/mtx/idx0.mtx'
case_ $F index_out_of_range fail 'idx_oob.mtx:4' '$DBS convert $T/mtx/idx_oob.mtx'
case_ $F index_negative fail 'idx_neg.mtx:4' '$DBS convert $T/mtx/idx_neg.mtx'
case_ $F index_2p66 fail 'idx_huge.mtx:4' '$DBS convert $T/mtx/idx_huge.mtx'
case_ $F index_float fail 'idx_float.mtx:4' '$DBS convert $T/mtx/idx_float.mtx'
case_ $F value_nan fail 'val_nan.mtx:4' '$DBS convert $T/mtx/val_nan.mtx'
case_ $F value_minus_inf fail 'val_inf.mtx:4' '$DBS convert $T/mtx/val_inf.mtx'
case_ $F value_1e309_f64_overflow fail 'val_1e309.mtx:4' '$DBS convert $T/mtx/val_1e309.mtx'
case_ $F value_1e39_f32_overflow warn:'val_1e39.*(float32|f32)' - '$DBS convert $T/mtx/val_1e39.mtx'
case_ $F value_1e39_f64_run warn:'val_1e39' - '$DBS convert $T/mtx/val_1e39.mtx --precision f64'
case_ $F value_1e-400_underflow pass - '$DBS convert $T/mtx/val_1e-400.mtx'
case_ $F value_hex either 'val_hex.mtx:4' '$DBS convert $T/mtx/val_hex.mtx'
case_ $F value_missing fail 'val_missing.mtx:4' '$DBS convert $T/mtx/val_missing.mtx'
case_ $F value_extra_token fail 'val_extra.mtx:4' '$DBS convert $T/mtx/val_extra.mtx'
case_ $F integer_field_fraction fail 'int_frac.mtx:3' '$DBS convert $T/mtx/int_frac.mtx'
case_ $F integer_field_2p66 fail 'int_huge.mtx:3' '$DBS convert $T/mtx/int_huge.mtx'
case_ $F pattern_with_value fail 'pattern_val.mtx:3' '$DBS convert $T/mtx/pattern_val.mtx'
case_ $F symmetric_mirrored_pair fail 'sym_mirror.mtx' '$DBS convert $T/mtx/sym_mirror.mtx'
case_ $F symmetric_both_triangles either 'sym_both_tri.mtx' '$DBS convert $T/mtx/sym_both_tri.mtx'
case_ $F symmetric_nonsquare fail 'sym_nonsquare.mtx:2' '$DBS convert $T/mtx/sym_nonsquare.mtx'
case_ $F skew_diagonal fail 'skew_diag.mtx:3' '$DBS convert $T/mtx/skew_diag.mtx'
case_ $F nul_byte_in_line fail 'nul_byte.mtx:4' '$DBS convert $T/mtx/nul_byte.mtx'
case_ $F reorder_nonsquare fail 'nonsquare' '$DBS reorder $T/mtx/nonsquare.mtx'
case_ $F empty_file fail 'empty.mtx' '$DBS convert $T/mtx/empty.mtx'
case_ $F banner_only fail 'banner_only.mtx:2' '$DBS convert $T/mtx/banner_only.mtx'
case_ $F binary_garbage fail 'garbage.mtx:1' '$DBS convert $T/mtx/garbage.mtx'
case_ $F directory fail 'adir.mtx' '$DBS convert $T/mtx/adir.mtx'
case_ $F dev_zero fail '/dev/zero:1' '$DBS convert /dev/zero'
case_ $F dev_null fail '/dev/null' '$DBS convert /dev/null'
case_ $F dev_urandom fail '/dev/urandom:1' '$DBS convert /dev/urandom'
case_ $F proc_self_mem fail '/proc/self/mem' '$DBS convert /proc/self/mem'
case_ $F line_80MiB_via_pipe fail '/dev/fd/[0-9]+:2' '$DBS convert <(printf "%s\n%%" "%%MatrixMarket matrix coordinate real general"; head -c 80M /dev/zero | tr "\0" x)'
case_ $F fifo_valid_writer pass - 'mkfifo $T/mtx/fifo1 && (cat $T/mtx/valid.mtx > $T/mtx/fifo1 &) && $DBS convert $T/mtx/fifo1'
case_ $F fifo_writer_dies_midway fail 'fifo2:[0-9]' 'mkfifo $T/mtx/fifo2 && (head -c 20000000 $T/mtx/big.mtx > $T/mtx/fifo2 &) && $DBS convert $T/mtx/fifo2'
case_ $F nonexistent fail 'nope.mtx' '$DBS convert $T/mtx/nope.mtx'
case_ $F vanished_dangling_symlink fail 'dangling.mtx' '$DBS convert $T/mtx/dangling.mtx'
case_ $F truncated_while_reading either 'trunc.mtx' 'cp $T/mtx/big.mtx $T/mtx/trunc.mtx && ($DBS convert $T/mtx/trunc.mtx & p=$!; sleep 0.2; truncate -s 1000000 $T/mtx/trunc.mtx; wait $p)'
case_ $F deleted_while_reading either 'del.mtx' 'cp $T/mtx/big.mtx $T/mtx/del.mtx && ($DBS convert $T/mtx/del.mtx & p=$!; sleep 0.2; rm -f $T/mtx/del.mtx; wait $p)'
if [[ -n $AS_NOBODY ]]; then
  case_ $F unreadable_chmod000_as_nobody fail 'noread.mtx' '$AS_NOBODY $DBS convert $T/mtx/noread.mtx'
else
  case_ $F unreadable_chmod000 "$([[ $IS_ROOT == 1 ]] && echo either || echo fail)" 'noread.mtx' '$DBS convert $T/mtx/noread.mtx'
fi

############################################################################ 2. gzip
F=gz
G=$T/gz
printf '%b' "$VALID" | gzip -c >"$G/valid.mtx.gz"
printf '%b' "$VALID" >"$G/plain_named.mtx.gz"
head -c 30 "$G/valid.mtx.gz" >"$G/truncated.mtx.gz"
head -c 10 "$G/valid.mtx.gz" >"$G/header_only.mtx.gz"
: >"$G/empty.mtx.gz"
{ cat "$G/valid.mtx.gz"; printf 'TRAILING GARBAGE\n'; } >"$G/trailing.mtx.gz"
{ cat "$G/valid.mtx.gz"; head -c 512 /dev/zero; } >"$G/trailing_zeros.mtx.gz"
{ printf '%b' "$MM_HEAD\n3 3 3\n1 1 1.0\n" | gzip -c; printf '2 2 2.0\n3 3 3.0\n' | gzip -c; } >"$G/concat.mtx.gz"
gzip -c "$G/valid.mtx.gz" >"$G/double.mtx.gz"
printf '%b' "$MM_HEAD\n3 3 2\n1 1 1\n2 2 nan\n" | gzip -c >"$G/nan.mtx.gz"
cp "$G/valid.mtx.gz" "$G/badcrc.mtx.gz"
python3 - "$G/badcrc.mtx.gz" <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-8] ^= 0xFF; open(p, "wb").write(bytes(b))
EOF
python3 -c "import random,sys; r=random.Random(9); sys.stdout.buffer.write(b'\x1f\x8b' + bytes(r.getrandbits(8) for _ in range(4096)))" >"$G/magic_garbage.mtx.gz"
# Bombs: 1 GiB inflated from ~1 MB on disk. Deflate blocks after a full flush repeat exactly, so
# the stream is built from one compressed chunk repeated (fast, no 1 GiB pass through gzip).
python3 - "$G" <<'EOF'
import struct, sys, zlib
out = sys.argv[1]
def bomb(path, head, chunk, repeats):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    c2 = zlib.compressobj(9, zlib.DEFLATED, -15)
    rep = c2.compress(chunk) + c2.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(repeats):
        crc = zlib.crc32(chunk, crc)
    size = len(head) + len(chunk) * repeats
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        f.write(body)
        for _ in range(repeats):
            f.write(rep)
        f.write(b"\x03\x00")  # final empty fixed block
        f.write(struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))
line = b"1 1 1\n"
chunk = line * (1048576 // len(line))
head = b"%%MatrixMarket matrix coordinate real general\n"
bomb(out + "/bomb_zeros.mtx.gz", b"", b"\0" * 1048576, 1024)
bomb(out + "/bomb_lines_decl100.mtx.gz", head + b"1 1 100\n", chunk, 1024)
bomb(out + "/bomb_lines_declmax.mtx.gz", head + b"1 1 2147483647\n", chunk, 1024)
bomb(out + "/bomb_comment_line.mtx.gz", head + b"%", b"x" * 1048576, 1024)
EOF
case_ $F valid pass - '$DBS convert $T/gz/valid.mtx.gz'
case_ $F valid_via_pipe pass - '$DBS convert <(cat $T/gz/valid.mtx.gz)'
case_ $F valid_via_stdin pass - '$DBS reorder /dev/stdin < $T/gz/valid.mtx.gz'
case_ $F concatenated_members pass - '$DBS convert $T/gz/concat.mtx.gz'
case_ $F plain_text_named_gz pass - '$DBS convert $T/gz/plain_named.mtx.gz'
case_ $F truncated fail 'truncated.mtx.gz' '$DBS convert $T/gz/truncated.mtx.gz'
case_ $F truncated_via_pipe fail '/dev/fd/' '$DBS convert <(cat $T/gz/truncated.mtx.gz)'
case_ $F header_only fail 'header_only.mtx.gz' '$DBS convert $T/gz/header_only.mtx.gz'
case_ $F empty_file fail 'empty.mtx.gz' '$DBS convert $T/gz/empty.mtx.gz'
case_ $F trailing_garbage fail 'trailing.mtx.gz' '$DBS convert $T/gz/trailing.mtx.gz'
case_ $F trailing_zeros either 'trailing_zeros.mtx.gz' '$DBS convert $T/gz/trailing_zeros.mtx.gz'
case_ $F bad_crc fail 'badcrc.mtx.gz' '$DBS convert $T/gz/badcrc.mtx.gz'
case_ $F magic_then_garbage fail 'magic_garbage.mtx.gz' '$DBS convert $T/gz/magic_garbage.mtx.gz'
case_ $F double_gzipped fail 'double.mtx.gz:1' '$DBS convert $T/gz/double.mtx.gz'
case_ $F nan_inside_gz fail 'nan.mtx.gz:4' '$DBS convert $T/gz/nan.mtx.gz'
case_ $F bomb_1GiB_zeros fail 'bomb_zeros.mtx.gz:1' '$DBS convert $T/gz/bomb_zeros.mtx.gz'
case_ $F bomb_1GiB_zeros_via_pipe fail '/dev/fd/[0-9]+:1' '$DBS convert <(cat $T/gz/bomb_zeros.mtx.gz)'
case_ $F bomb_1GiB_comment_line fail 'bomb_comment_line.mtx.gz:2' '$DBS convert $T/gz/bomb_comment_line.mtx.gz'
case_ $F bomb_1GiB_lines_decl_100 fail 'bomb_lines_decl100.mtx.gz:103' '$DBS convert $T/gz/bomb_lines_decl100.mtx.gz'
case_ $F bomb_1GiB_lines_decl_2p31m1 fail 'bomb_lines_declmax.mtx.gz:[0-9]' '$DBS convert $T/gz/bomb_lines_declmax.mtx.gz'

############################################################################ 3. generator specs
F=gen
g() { case_ $F "$1" "$2" "$3" "$4"; }
g valid_rmat pass - '$DBS convert rmat:scale=8,ef=4'
g valid_all_defaults_banded pass - '$DBS convert banded:'
g valid_spaces either 'uniform' '$DBS convert "uniform: n = 100 , d = 4"'
g uniform_n_2e9 fail 'uniform:n=2000000000' '$DBS convert uniform:n=2000000000,d=1'
g uniform_n_2e9_reorder fail 'uniform:n=2000000000' '$DBS reorder uniform:n=2000000000,d=1'
g uniform_n_1e9_d1 either 'uniform' '$DBS convert uniform:n=1000000000,d=1'
g rmat_scale_40 fail 'rmat.*scale' '$DBS convert rmat:scale=40'
g rmat_scale_31 fail 'rmat.*scale' '$DBS convert rmat:scale=31'
g rmat_scale_30_ef_1e6 fail 'rmat' '$DBS convert rmat:scale=30,ef=1000000'
g rmat_scale_negative fail 'rmat.*scale' '$DBS convert rmat:scale=-1'
g uniform_n_negative fail 'uniform.*n' '$DBS convert uniform:n=-5,d=1'
g uniform_n_2p64 fail 'uniform.*n' '$DBS convert uniform:n=18446744073709551616,d=1'
g uniform_n_hex fail 'uniform.*n' '$DBS convert uniform:n=0x10,d=1'
g uniform_n_1e3 either 'uniform.*n' '$DBS convert uniform:n=1e3,d=1'
g uniform_n_fraction fail 'uniform.*n' '$DBS convert uniform:n=100.5,d=1'
g uniform_d_gt_n fail 'uniform.*d' '$DBS convert uniform:n=100,d=101'
g missing_value fail 'uniform.*n' '$DBS convert uniform:n=,d=3'
g missing_equals fail 'uniform' '$DBS convert uniform:n=100,d'
g empty_item fail 'uniform' '$DBS convert uniform:n=100,,d=4'
g unknown_key fail 'bogus' '$DBS convert uniform:n=100,d=4,bogus=1'
g repeated_key fail 'uniform.*n' '$DBS convert uniform:n=100,n=200'
g unknown_kind fail 'blah' '$DBS convert blah:n=5'
g kind_uppercase either 'STENCIL2D' '$DBS convert STENCIL2D:n=5'
g stencil2d_n_1e9 fail 'stencil2d.*n' '$DBS convert stencil2d:n=1e9'
g stencil2d_n_46341 fail 'stencil2d.*n' '$DBS convert stencil2d:n=46341'
g stencil2d_n_0 fail 'stencil2d.*n' '$DBS convert stencil2d:n=0'
g stencil3d_points_9 fail 'stencil3d.*points' '$DBS convert stencil3d:n=5,points=9'
g powerlaw_avg_nan fail 'powerlaw.*avg' '$DBS convert powerlaw:n=1000,avg=nan,alpha=2'
g powerlaw_avg_inf fail 'powerlaw.*avg' '$DBS convert powerlaw:n=1000,avg=inf,alpha=2'
g powerlaw_alpha_negative fail 'powerlaw.*alpha' '$DBS convert powerlaw:n=1000,avg=4,alpha=-1'
g powerlaw_max_0 fail 'powerlaw.*max' '$DBS convert powerlaw:n=1000,avg=4,alpha=2,max=0'
g pruned_density_1.5 fail 'pruned.*density' '$DBS convert pruned:rows=64,cols=64,density=1.5'
g community_p_in_2 fail 'community.*p_in' '$DBS convert community:n=1000,k=10,p_in=2'
g community_k_0 fail 'community.*k' '$DBS convert community:n=1000,k=0'
g seed_negative fail 'seed' '$DBS convert rmat:scale=8,seed=-1'
g seed_2p64 fail 'seed' '$DBS convert rmat:scale=8,seed=18446744073709551616'
g banded_max fail 'banded' '$DBS convert banded:n=2147483647,bw=2147483646'
g fem_huge either 'fem' '$DBS convert fem:nodes=2147483647,k=1,blocks=1'
g roadnet_2p28 either 'roadnet' '$DBS convert roadnet:n=268435456'
g community_huge_p_out either 'community' '$DBS convert community:n=2000000000,k=2,p_in=0,p_out=1'
g community_2e8_sized_first fail 'community:n=200000000.*host memory' 'bash -c "ulimit -v 4000000; $DBS convert community:n=200000000,k=100,p_in=1e-8,p_out=0"'
g reorder_rmat_40 fail 'rmat.*scale' '$DBS reorder rmat:scale=40'
g dbtune_matrices_bad_spec fail 'rmat.*scale' '$DBT --quick --no-shared --ops spmv --db $T/out/gen.db --matrices rmat:scale=40'
g dbtune_matrices_missing_file fail 'nope.mtx' '$DBT --quick --no-shared --ops spmv --db $T/out/gen2.db --matrices $T/mtx/nope.mtx'

############################################################################ 4. op configs
F=config
c() { case_ $F "$1" "$2" "$3" "$4"; }
B='$DBS bench spmspv stencil2d:n=10'
c valid_spmspv nogpu - "$B --config '{\"th0\":16}'"
c valid_bfs nogpu - "\$DBS bench bfs stencil2d:n=10 --config '{\"alpha\":8}'"
c valid_bfs_cmd nogpu - "\$DBS bfs stencil2d:n=10 --config '{\"alpha\":8}'"
c valid_spmm nogpu - "\$DBS bench spmm stencil2d:n=10 --config '{\"path\":\"csr\"}'"
c valid_spgemm nogpu - "\$DBS bench spgemm stencil2d:n=10 --config '{\"b0\":16}'"
c valid_sddmm nogpu - "\$DBS bench sddmm stencil2d:n=10 --config '{\"tile\":16}'"
c sddmm_tile_0 fail 'tile' "\$DBS bench sddmm stencil2d:n=10 --config '{\"tile\":0}'"
c sddmm_tile_string fail 'tile' "\$DBS bench sddmm stencil2d:n=10 --config '{\"tile\":\"16\"}'"
c sddmm_warps_1000 fail 'warps' "\$DBS bench sddmm stencil2d:n=10 --config '{\"warps\":1000}'"
c sddmm_unknown_key fail 'th0' "\$DBS bench sddmm stencil2d:n=10 --config '{\"th0\":16}'"
c key_value_form fail 'th0' "$B --config 'th0=16'"
c wrong_type_string fail 'th0' "$B --config '{\"th0\":\"16\"}'"
c wrong_type_bool fail 'th0' "$B --config '{\"th0\":true}'"
c wrong_type_float_for_int fail 'th0' "$B --config '{\"th0\":16.5}'"
c float_integral_for_int either 'th0' "$B --config '{\"th0\":16.0}'"
c wrong_type_array fail 'th0' "$B --config '{\"th0\":[16]}'"
c nan_bare fail 'config' "$B --config '{\"th2\":NaN}'"
c nan_string fail 'th2' "$B --config '{\"th2\":\"NaN\"}'"
c out_of_range_negative fail 'th0' "$B --config '{\"th0\":-1}'"
c out_of_range_big fail 'th0' "$B --config '{\"th0\":100000}'"
c int_2p53p1 fail 'th0' "$B --config '{\"th0\":9007199254740993}'"
c int_2p64 fail 'th0' "$B --config '{\"th0\":18446744073709551616}'"
c number_1e999 fail 'th2' "$B --config '{\"th2\":1e999}'"
c number_-1e999 fail 'th2' "$B --config '{\"th2\":-1e999}'"
c number_1e308_bfs fail 'alpha' "\$DBS bench bfs stencil2d:n=10 --config '{\"alpha\":1e308}'"
c subnormal_th3 either 'th3' "$B --config '{\"th3\":1e-320}'"
c unknown_key fail 'bogus' "$B --config '{\"bogus\":1}'"
c unknown_key_case fail 'TH0' "$B --config '{\"TH0\":16}'"
c choice_case fail 'path' "\$DBS bench spmm stencil2d:n=10 --config '{\"path\":\"BRP\"}'"
c choice_unknown fail 'pull_coo' "$B --config '{\"pull_coo\":\"sideways\"}'"
c cross_field_rule_spgemm fail 'b[01]' "\$DBS bench spgemm stencil2d:n=10 --config '{\"b0\":600,\"b1\":32}'"
c th0_above_th1_spmspv either 'th[01]' "$B --config '{\"th0\":200,\"th1\":100}'"
c duplicate_key either 'th0' "$B --config '{\"th0\":16,\"th0\":20}'"
c not_object_array fail 'config' "$B --config '[]'"
c not_object_string fail 'config' "$B --config '\"th0\"'"
c null_config either 'config' "$B --config 'null'"
c empty_string either 'config' "$B --config ''"
c trailing_text fail 'config' "$B --config '{\"th0\":16} x'"
c truncated_json fail 'config' "$B --config '{\"th0\":'"
c deep_nesting_array fail 'config' "$B --config \"\$(python3 -c 'print(\"[\"*60000 + \"]\"*60000)')\""
c deep_nesting_value fail '--config.*nested' "$B --config \"\$(python3 -c 'print(\"{\\\"th0\\\":\" + \"[\"*60000 + \"]\"*60000 + \"}\")')\""
c deep_unclosed fail 'config' "$B --config \"\$(python3 -c 'print(\"{\\\"a\\\":\"*20000)')\""
c huge_string_value fail 'pull_coo' "$B --config \"\$(python3 -c 'print(\"{\\\"pull_coo\\\":\\\"\" + \"x\"*120000 + \"\\\"}\")')\""
c huge_key fail 'config' "$B --config \"\$(python3 -c 'print(\"{\\\"\" + \"k\"*120000 + \"\\\":1}\")')\""
c invalid_utf8_key fail 'config' "$B --config \$'{\"th0\\xff\":1}'"
c nul_escape_in_key fail 'th0' "$B --config '{\"th0\\u0000\":1}'"
c lone_surrogate fail 'config' "$B --config '{\"pull_coo\":\"\\ud800\"}'"
c config_on_spmv_bench fail 'config' "\$DBS bench spmv stencil2d:n=10 --config '{\"th0\":16}'"
c bfs_cmd_bad fail 'alpha' "\$DBS bfs stencil2d:n=10 --config '{\"alpha\":-3}'"

############################################################################ 5. tuning DB
F=db
D=$T/db
TUNE='$DBT --quick --no-shared --ops spmv --matrices stencil2d:n=20'
# A warm kernel cache for sm_90 spmv, so dbtune's no-GPU part (features + precompile) is quick.
"$DBS" precompile --arch sm_90 --op spmv >/dev/null 2>&1
python3 -c "import random,sys; r=random.Random(3); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(8192)))" >"$D/garbage.db"
cp "$D/garbage.db" "$D/garbage.orig"
head -c 100 /dev/zero >"$D/zeros100.db"
: >"$D/zero.db"
# Real DBs made by dbtune itself, then edited.
mkdb() { DBSPARSE_DB="$D/$1" "$DBT" --quick --no-shared --ops spmv --matrices stencil2d:n=20 >/dev/null 2>&1; }
mkdb good.db
for n in future neg readonly roimm wal_garbage notable badrows sigkill; do cp "$D/good.db" "$D/$n.db"; done
sqlite3 "$D/future.db" 'PRAGMA user_version=99'
cp "$D/future.db" "$D/future.orig"
sqlite3 "$D/neg.db" 'PRAGMA user_version=-1'
cp "$D/neg.db" "$D/neg.orig"
sqlite3 "$D/notable.db" 'DROP TABLE configs'
sqlite3 "$D/badrows.db" "UPDATE matrices SET features_json='{not json', rows=-5, nnz=9223372036854775807"
python3 -c "import random,sys; r=random.Random(4); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(40000)))" >"$D/wal_garbage.db-wal"
mkdir -p "$D/rodir"; cp "$D/good.db" "$D/rodir/tuning.db"; chmod 555 "$D/rodir"; chmod 444 "$D/rodir/tuning.db"
mkdir -p "$D/adir.db"
touch "$D/afile"
if chattr +i "$D/roimm.db" 2>/dev/null; then IMMUTABLE+=("$D/roimm.db"); IMM=1; else IMM=0; fi
# Not ours: another program's SQLite files (no application_id; dbsparse's user_version but other
# tables; another application_id; WAL mode), a FIFO, a symlink loop; each must be left byte for
# byte, with no -journal/-wal/-shm beside it. And a DB from before the application_id (adopted).
sqlite3 "$D/other.db" 'CREATE TABLE notes (x); INSERT INTO notes VALUES (1)'
sqlite3 "$D/other_uv1.db" 'CREATE TABLE notes (x); PRAGMA user_version=1'
sqlite3 "$D/other_appid.db" 'CREATE TABLE notes (x); PRAGMA application_id=252006674'
sqlite3 "$D/other_wal.db" 'PRAGMA journal_mode=WAL; CREATE TABLE notes (x)' >/dev/null
for n in other other_uv1 other_appid other_wal; do mkdir -p "$D/$n.dir"; mv "$D/$n.db" "$D/$n.dir/"; cp "$D/$n.dir/$n.db" "$D/$n.orig"; done
mkfifo "$D/fifo.db"
ln -s "$D/loop_b.db" "$D/loop_a.db"; ln -s "$D/loop_a.db" "$D/loop_b.db"
cp "$D/good.db" "$D/legacy.db"; sqlite3 "$D/legacy.db" 'PRAGMA application_id=0'
ln -s "$D/good.db" "$D/link_to_good.db"
# UNTOUCHED n: the DB other.dir/n.db must equal its copy and be alone in its folder.
untouched() { echo "; rc=\$?; cmp -s \$T/db/$1.dir/$1.db \$T/db/$1.orig || echo 'HOSTILE-CHECK-FAILED: $1.db was modified' >&2; [[ \$(ls \$T/db/$1.dir | wc -l) == 1 ]] || echo \"HOSTILE-CHECK-FAILED: side files left: \$(ls \$T/db/$1.dir)\" >&2; exit \$rc"; }
[[ -e /dev/null-journal ]] && DEVNULL_J=1 || DEVNULL_J=0
d() { case_ $F "$1" "$2" "$3" "$4"; }
d valid_info report:'schema v[0-9]' - 'DBSPARSE_DB=$T/db/good.db $DBS info'
d valid_dbtune_rerun pass - "DBSPARSE_DB=\$T/db/good.db $TUNE"
d garbage_info report:'unusable|not a usable' - 'DBSPARSE_DB=$T/db/garbage.db $DBS info'
d garbage_dbtune fail 'garbage.db' "DBSPARSE_DB=\$T/db/garbage.db $TUNE; rc=\$?; cmp -s \$T/db/garbage.db \$T/db/garbage.orig || echo 'HOSTILE-CHECK-FAILED: dbtune modified the garbage DB' >&2; exit \$rc"
d garbage_explain either 'garbage.db' 'DBSPARSE_DB=$T/db/garbage.db $DBS explain stencil2d:n=10'
d zero_length_info report:'zero.db' 'zero.db' 'DBSPARSE_DB=$T/db/zero.db $DBS info'
d zero_length_dbtune either 'zero.db' "DBSPARSE_DB=\$T/db/zero.db $TUNE"
d zeros_100_bytes_info report:'unusable|not a usable' - 'DBSPARSE_DB=$T/db/zeros100.db $DBS info'
d zeros_100_bytes_dbtune fail 'zeros100.db' "DBSPARSE_DB=\$T/db/zeros100.db $TUNE"
d directory_as_db_info report:'adir.db' - 'DBSPARSE_DB=$T/db/adir.db $DBS info'
d directory_as_db_dbtune fail 'adir.db' "DBSPARSE_DB=\$T/db/adir.db $TUNE"
d future_schema_info report:'newer|v99' - 'DBSPARSE_DB=$T/db/future.db $DBS info'
d future_schema_dbtune fail 'future.db' "DBSPARSE_DB=\$T/db/future.db $TUNE; rc=\$?; cmp -s \$T/db/future.db \$T/db/future.orig || echo 'HOSTILE-CHECK-FAILED: dbtune modified the newer-schema DB' >&2; exit \$rc"
d negative_schema_info report:'neg.db.*(v-1|schema|unusable)' - 'DBSPARSE_DB=$T/db/neg.db $DBS info'
d negative_schema_dbtune fail 'neg.db' "DBSPARSE_DB=\$T/db/neg.db $TUNE; rc=\$?; cmp -s \$T/db/neg.db \$T/db/neg.orig || echo 'HOSTILE-CHECK-FAILED: dbtune rewrote the schema v-1 DB' >&2; exit \$rc"
d missing_table_info report:'notable.db' - 'DBSPARSE_DB=$T/db/notable.db $DBS info'
d missing_table_dbtune fail 'notable.db' "DBSPARSE_DB=\$T/db/notable.db $TUNE"
d bad_feature_rows_info report:'badrows.db' - 'DBSPARSE_DB=$T/db/badrows.db $DBS info'
d bad_feature_rows_dbtune either 'badrows.db|features' "DBSPARSE_DB=\$T/db/badrows.db $TUNE"
d garbage_wal_file either 'wal_garbage.db' 'DBSPARSE_DB=$T/db/wal_garbage.db $DBS info'
for n in other other_uv1 other_appid other_wal; do
  d foreign_${n#other_}_dbtune fail "$n.db.*(another program|without dbsparse)" "DBSPARSE_DB=\$T/db/$n.dir/$n.db $TUNE$(untouched $n)"
  d foreign_${n#other_}_info report:"$n.db.*(another program|without dbsparse)" - "DBSPARSE_DB=\$T/db/$n.dir/$n.db \$DBS info$(untouched $n)"
done
d fifo_as_db_dbtune fail 'fifo.db.*FIFO' "DBSPARSE_DB=\$T/db/fifo.db $TUNE; rc=\$?; [[ -p \$T/db/fifo.db ]] || echo 'HOSTILE-CHECK-FAILED: the FIFO was replaced' >&2; exit \$rc"
d fifo_as_db_info report:'fifo.db.*FIFO' - 'DBSPARSE_DB=$T/db/fifo.db $DBS info'
d fifo_as_db_explain either 'fifo.db' 'DBSPARSE_DB=$T/db/fifo.db $DBS explain stencil2d:n=10'
d devnull_as_db_dbtune fail '/dev/null.*character device' "DBSPARSE_DB=/dev/null $TUNE; rc=\$?; [[ $DEVNULL_J == 1 || ! -e /dev/null-journal ]] || echo 'HOSTILE-CHECK-FAILED: /dev/null-journal left behind' >&2; exit \$rc"
d devnull_as_db_info report:'/dev/null.*character device' - 'DBSPARSE_DB=/dev/null $DBS info'
d symlink_loop_dbtune fail 'loop_a.db.*loop' "DBSPARSE_DB=\$T/db/loop_a.db $TUNE"
d symlink_loop_info report:'loop_a.db.*loop' - 'DBSPARSE_DB=$T/db/loop_a.db $DBS info'
d symlink_to_our_db pass - "DBSPARSE_DB=\$T/db/link_to_good.db $TUNE; rc=\$?; [[ -L \$T/db/link_to_good.db ]] || echo 'HOSTILE-CHECK-FAILED: the symlink was replaced' >&2; exit \$rc"
d legacy_db_adopted pass - "DBSPARSE_DB=\$T/db/legacy.db $TUNE; rc=\$?; [[ \$(sqlite3 \$T/db/legacy.db 'PRAGMA application_id') == 1684165456 ]] || echo 'HOSTILE-CHECK-FAILED: the earlier DB was not marked' >&2; exit \$rc"
if [[ -n $AS_NOBODY ]]; then
  d readonly_dir_info_as_nobody report:'schema v[0-9]' - 'DBSPARSE_DB=$T/db/rodir/tuning.db $AS_NOBODY $DBS info'
  d readonly_dir_explain_as_nobody pass - 'DBSPARSE_DB=$T/db/rodir/tuning.db $AS_NOBODY $DBS explain stencil2d:n=10'
  d readonly_dir_dbtune_as_nobody fail 'rodir/tuning.db' "DBSPARSE_DB=\$T/db/rodir/tuning.db DBSPARSE_CACHE_DIR=off \$AS_NOBODY $TUNE"
else
  d readonly_dir_info report:'schema v[0-9]' - 'DBSPARSE_DB=$T/db/rodir/tuning.db $DBS info'
fi
if [[ $IMM == 1 ]]; then
  d immutable_file_info_root report:'schema v[0-9]' - 'DBSPARSE_DB=$T/db/roimm.db $DBS info'
  d immutable_file_dbtune_root fail 'roimm.db' "DBSPARSE_DB=\$T/db/roimm.db $TUNE"
fi
d unwritable_dir_proc fail '/proc/dbsparse' "DBSPARSE_DB=/proc/dbsparse/tuning.db $TUNE"
d parent_is_a_file fail 'afile/tuning.db' "DBSPARSE_DB=\$T/db/afile/tuning.db $TUNE"
d db_option_unwritable fail '/proc' "$TUNE --db /proc/tuning.db"
d unwritable_dir_info report:'not created' - 'DBSPARSE_DB=/proc/dbsparse/tuning.db $DBS info'
d empty_env_default_path pass - "DBSPARSE_DB= $TUNE && test -f \$XDG_DATA_HOME/dbsparse/tuning.db"
# Two dbtune runs at once on one fresh DB: both must finish, the DB must hold both matrices.
d two_dbtune_at_once report:'2 matrices' - 'X=$T/db/two.db; $DBT --quick --no-shared --ops spmv --db $X --matrices rmat:scale=14 & p=$!; $DBT --quick --no-shared --ops spmv --db $X --matrices uniform:n=20000,d=8; r2=$?; wait $p; r1=$?; echo "rc $r1 $r2" >&2; [[ $r1 == 0 && $r2 == 0 ]] || exit 1; DBSPARSE_DB=$X $DBS info'
d two_dbtune_same_matrix report:'1 matrices' - 'X=$T/db/two_same.db; $DBT --quick --no-shared --ops spmv --db $X --matrices rmat:scale=14 & p=$!; $DBT --quick --no-shared --ops spmv --db $X --matrices rmat:scale=14; r2=$?; wait $p; r1=$?; [[ $r1 == 0 && $r2 == 0 ]] || exit 1; DBSPARSE_DB=$X $DBS info'
# SIGKILL mid-run (many matrices so it is busy): the DB must still open, info must show it.
d sigkill_mid_run report:'schema v[0-9]' - 'X=$T/db/killed.db; $DBT --quick --no-shared --ops spmv --db $X --matrices rmat:scale=20,seed=1 rmat:scale=20,seed=2 rmat:scale=20,seed=3 rmat:scale=20,seed=4 rmat:scale=20,seed=5 rmat:scale=20,seed=6 rmat:scale=20,seed=7 rmat:scale=20,seed=8 >$T/db/killed.log 2>&1 & p=$!; sleep 2.5; kill -9 $p && echo "SIGKILL delivered mid-run" >&2 || echo "dbtune finished before the SIGKILL" >&2; wait $p 2>/dev/null; sqlite3 $X "PRAGMA integrity_check" | grep -qx ok || echo "HOSTILE-CHECK-FAILED: integrity_check after SIGKILL" >&2; DBSPARSE_DB=$X $DBS info'
d sigkill_then_rerun pass - "X=\$T/db/killed.db; \$DBT --quick --no-shared --ops spmv --db \$X --matrices stencil2d:n=20"
d sigkill_existing_db report:'schema v[0-9]' - 'X=$T/db/sigkill.db; $DBT --quick --no-shared --ops spmv --db $X --matrices rmat:scale=20,seed=11 rmat:scale=20,seed=12 rmat:scale=20,seed=13 rmat:scale=20,seed=14 rmat:scale=20,seed=15 rmat:scale=20,seed=16 >$T/db/killed2.log 2>&1 & p=$!; sleep 1.7; kill -9 $p && echo "SIGKILL delivered mid-run" >&2 || echo "dbtune finished before the SIGKILL" >&2; wait $p 2>/dev/null; DBSPARSE_DB=$X $DBS info'

############################################################################ 6. kernel cache
F=cache
C=$T/cache
PRE='$DBS precompile --arch sm_90 --op spmv'
mkc() { rm -rf "$C/$1"; cp -r "$T/cache-warm" "$C/$1"; }
victim() { ls "$C/$1" | grep -m1 '\.cubin$'; }
mkc good
mkc garbage; v=$(victim garbage); python3 -c "import random,sys; r=random.Random(5); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(20000)))" >"$C/garbage/$v"
mkc trunc; v=$(victim trunc); s=$(stat -c %s "$C/trunc/$v"); truncate -s $((s / 2)) "$C/trunc/$v"
mkc zero; v=$(victim zero); : >"$C/zero/$v"
mkc header_only; v=$(victim header_only); truncate -s 16 "$C/header_only/$v"
mkc flip; v=$(victim flip); python3 - "$C/flip/$v" <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0x55; open(p, "wb").write(bytes(b))
EOF
mkc lenfield; v=$(victim lenfield); python3 - "$C/lenfield/$v" <<'EOF'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read())
for i in range(8, 40): b[i] = 0xFF   # the length fields after the magic
open(p, "wb").write(bytes(b))
EOF
mkc dir; v=$(victim dir); rm -f "$C/dir/$v"; mkdir "$C/dir/$v"; DIRV=$v
mkc big; v=$(victim big); truncate -s 300M "$C/big/$v"
mkc fifo; v=$(victim fifo); rm -f "$C/fifo/$v"; mkfifo "$C/fifo/$v"
# An entry that is a symlink to a zero device: a private node, so no writer can touch /dev/zero.
mkc devzero; v=$(victim devzero); rm -f "$C/devzero/$v"
if mknod "$C/zero-node" c 1 5 2>/dev/null; then ln -s "$C/zero-node" "$C/devzero/$v"; DEVZERO=1; else DEVZERO=0; fi
mkc dangling; v=$(victim dangling); rm -f "$C/dangling/$v"; ln -s "$C/nowhere" "$C/dangling/$v"
mkc tune; v=$(victim tune); head -c 3000 /dev/zero | tr '\0' 'Z' >"$C/tune/$v"
mkc stray; printf 'not a kernel' >"$C/stray/zzz.cubin"; printf 'x' >"$C/stray/README"
mkc ro; rm -f "$C/ro/$(victim ro)"; chmod -R a+rX "$C/ro"; chmod 555 "$C/ro"   # one entry missing: must compile, cannot write
touch "$C/afile"
mkfifo "$C/afifo"
k() { case_ $F "$1" "$2" "$3" "$4"; }
k valid_warm pass - "DBSPARSE_CACHE_DIR=\$T/cache/good $PRE"
NWARM=$(ls "$T/cache-warm" | grep -c '\.cubin$')
k valid_info report:"\\($NWARM entries" - 'DBSPARSE_CACHE_DIR=$T/cache/good $DBS info'
k garbage_entry warn:'dropping corrupt.*cache/garbage/' - "DBSPARSE_CACHE_DIR=\$T/cache/garbage $PRE"
k truncated_entry warn:'dropping corrupt.*cache/trunc/' - "DBSPARSE_CACHE_DIR=\$T/cache/trunc $PRE"
k zero_length_entry warn:'dropping corrupt.*cache/zero/' - "DBSPARSE_CACHE_DIR=\$T/cache/zero $PRE"
k header_only_entry warn:'dropping corrupt.*cache/header_only/' - "DBSPARSE_CACHE_DIR=\$T/cache/header_only $PRE"
k flipped_byte_entry warn:'dropping corrupt.*cache/flip/' - "DBSPARSE_CACHE_DIR=\$T/cache/flip $PRE"
k length_fields_0xff warn:'dropping corrupt.*cache/lenfield/' - "DBSPARSE_CACHE_DIR=\$T/cache/lenfield $PRE"
k entry_300MB warn:'dropping corrupt.*cache/big/' - "DBSPARSE_CACHE_DIR=\$T/cache/big $PRE"
k entry_is_directory warn:"$DIRV|cannot write" - "DBSPARSE_CACHE_DIR=\$T/cache/dir $PRE"
k entry_is_directory_info report:"entries" - 'DBSPARSE_CACHE_DIR=$T/cache/dir $DBS info'
k entry_is_fifo pass - "DBSPARSE_CACHE_DIR=\$T/cache/fifo $PRE"
[[ $DEVZERO == 1 ]] && k entry_symlink_to_zero_device pass - "DBSPARSE_CACHE_DIR=\$T/cache/devzero $PRE; rc=\$?; [[ -c \$T/cache/zero-node ]] || echo 'HOSTILE-CHECK-FAILED: the zero device node was replaced' >&2; exit \$rc"
k entry_dangling_symlink pass - "DBSPARSE_CACHE_DIR=\$T/cache/dangling $PRE"
k stray_files pass - "DBSPARSE_CACHE_DIR=\$T/cache/stray $PRE"
k stray_files_info report:'entries' - 'DBSPARSE_CACHE_DIR=$T/cache/stray $DBS info'
k dir_unwritable_proc warn:'cannot write kernel cache' - "DBSPARSE_CACHE_DIR=/proc/dbsparse-cache $PRE"
k dir_is_a_file warn:'cannot write kernel cache' - "DBSPARSE_CACHE_DIR=\$T/cache/afile $PRE"
k dir_is_a_file_info report:'afile.*(not a directory|unusable|not writable)' - 'DBSPARSE_CACHE_DIR=$T/cache/afile $DBS info'
k dir_is_a_fifo warn:'cannot write kernel cache.*afifo.*FIFO' - "DBSPARSE_CACHE_DIR=\$T/cache/afifo $PRE; rc=\$?; [[ -p \$T/cache/afifo ]] || echo 'HOSTILE-CHECK-FAILED: the FIFO was replaced' >&2; exit \$rc"
k dir_is_a_fifo_info report:'afifo.*(not a directory|unusable)' - 'DBSPARSE_CACHE_DIR=$T/cache/afifo $DBS info'
k dir_off pass - "DBSPARSE_CACHE_DIR=off $PRE"
k dir_new_nested pass - "DBSPARSE_CACHE_DIR=\$T/cache/new/a/b/c $PRE && test -d \$T/cache/new/a/b/c"
if [[ -n $AS_NOBODY ]]; then
  k dir_readonly_as_nobody warn:'cannot write kernel cache' - "DBSPARSE_CACHE_DIR=\$T/cache/ro \$AS_NOBODY $PRE"
fi
k dbtune_garbage_entry warn:'dropping corrupt.*cache/tune/' - "DBSPARSE_CACHE_DIR=\$T/cache/tune \$DBT --quick --no-shared --ops spmv --db \$T/out/cache.db --matrices stencil2d:n=20"

############################################################################ 7. safetensors
F=st
S=$T/st
# mkst DIR/NAME.safetensors: header (JSON text or python object), data; optional header length
python3 - "$S" <<'EOF'
import json, os, struct, sys
S = sys.argv[1]
def st(name, header, data=b"", hlen=None, raw_header=None):
    d = os.path.join(S, name.split("/")[0]); os.makedirs(d, exist_ok=True)
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(os.path.join(S, name), "wb") as f:
        f.write(struct.pack("<Q", len(h) if hlen is None else hlen)); f.write(h); f.write(data)
W = "model.layers.0.self_attn.q_proj.weight"
def f16(n): return struct.pack("<%de" % n, *[((i * 37) % 11 - 5) / 7 for i in range(n)])
def f32(n, v=None): return struct.pack("<%df" % n, *[(v if v is not None else ((i * 13) % 7 - 3) / 3) for i in range(n)])
ok = {W: {"dtype": "F16", "shape": [16, 16], "data_offsets": [0, 512]}}
st("valid/m.safetensors", ok, f16(256))
st("valid_meta/m.safetensors", {"__metadata__": {"format": "pt"}, **ok}, f16(256))
st("hlen_past_file/m.safetensors", ok, f16(256), hlen=10**6)
st("hlen_2p64m1/m.safetensors", ok, f16(256), hlen=2**64 - 1)
os.makedirs(os.path.join(S, "short"), exist_ok=True); open(os.path.join(S, "short/m.safetensors"), "wb").write(b"\x05\x00\x00")
st("not_json/m.safetensors", None, b"", raw_header=b"this is not json at all!")
st("json_array/m.safetensors", None, b"", raw_header=b"[1,2,3]")
st("dup_names/m.safetensors", None, f16(256), raw_header=('{"%s":{"dtype":"F16","shape":[16,16],"data_offsets":[0,512]},"%s":{"dtype":"F16","shape":[16,16],"data_offsets":[0,512]}}' % (W, W)).encode())
st("offsets_oob/m.safetensors", {W: {"dtype": "F16", "shape": [16, 16], "data_offsets": [0, 5120]}}, f16(256))
st("offsets_reversed/m.safetensors", {W: {"dtype": "F16", "shape": [16, 16], "data_offsets": [512, 0]}}, f16(256))
st("offsets_negative/m.safetensors", {W: {"dtype": "F16", "shape": [16, 16], "data_offsets": [-512, 0]}}, f16(256))
st("offsets_2p63/m.safetensors", {W: {"dtype": "F16", "shape": [16, 16], "data_offsets": [2**63, 2**63 + 512]}}, f16(256))
st("dtype_unknown/m.safetensors", {W: {"dtype": "F64", "shape": [16, 16], "data_offsets": [0, 512]}}, f16(256))
st("dtype_number/m.safetensors", {W: {"dtype": 7, "shape": [16, 16], "data_offsets": [0, 512]}}, f16(256))
st("shape_overflow/m.safetensors", {W: {"dtype": "F16", "shape": [2**40, 2**40], "data_offsets": [0, 512]}}, f16(256))
st("shape_overflow_bytes/m.safetensors", {W: {"dtype": "F32", "shape": [2**61, 2], "data_offsets": [0, 512]}}, f16(256))
st("shape_negative/m.safetensors", {W: {"dtype": "F16", "shape": [-16, -16], "data_offsets": [0, 512]}}, f16(256))
st("shape_mismatch/m.safetensors", {W: {"dtype": "F16", "shape": [16, 17], "data_offsets": [0, 512]}}, f16(256))
st("shape_1d/m.safetensors", {W: {"dtype": "F16", "shape": [256], "data_offsets": [0, 512]}}, f16(256))
st("shape_zero_rows/m.safetensors", {W: {"dtype": "F16", "shape": [0, 16], "data_offsets": [0, 0]}}, b"")
st("shape_2p31_rows_0_cols/m.safetensors", {W: {"dtype": "F16", "shape": [2**31, 0], "data_offsets": [0, 0]}}, b"")
st("shape_0_rows_2p32_cols/m.safetensors", {W: {"dtype": "F16", "shape": [0, 2**32 + 16], "data_offsets": [0, 0]}}, b"")
st("overlap/m.safetensors", {W: {"dtype": "F16", "shape": [16, 16], "data_offsets": [0, 512]}, "model.layers.0.mlp.up_proj.weight": {"dtype": "F16", "shape": [16, 16], "data_offsets": [256, 768]}}, f16(384))
st("num_1e999/m.safetensors", None, f16(256), raw_header=('{"%s":{"dtype":"F16","shape":[16,16],"data_offsets":[0,512]},"x":1e999}' % W).encode())
st("deep_nesting/m.safetensors", None, b"", raw_header=b"[" * 100000 + b"]" * 100000)
st("metadata_not_strings/m.safetensors", {"__metadata__": {"a": 1}, **ok}, f16(256))
st("int_weights/m.safetensors", {W: {"dtype": "I32", "shape": [16, 16], "data_offsets": [0, 1024]}}, b"\0" * 1024)
st("nan_weights/m.safetensors", {W: {"dtype": "F32", "shape": [16, 16], "data_offsets": [0, 1024]}}, f32(256, float("nan")))
st("no_layers/m.safetensors", {"lm_head.weight": {"dtype": "F16", "shape": [16, 16], "data_offsets": [0, 512]}}, f16(256))
os.makedirs(os.path.join(S, "empty_dir"), exist_ok=True)
# two shards both holding the same weight
st("dup_shards/a.safetensors", ok, f16(256)); st("dup_shards/b.safetensors", ok, f16(256))
# calibration activations
A = W + ".input"
st("acts/a.safetensors", {A: {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]}}, f32(64))
st("acts_nan/a.safetensors", {A: {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]}}, f32(64, float("nan")))
st("acts_inf/a.safetensors", {A: {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]}}, f32(64, float("inf")))
st("acts_zero_tokens/a.safetensors", {A: {"dtype": "F32", "shape": [0, 16], "data_offsets": [0, 0]}}, b"")
st("acts_3d/a.safetensors", {A: {"dtype": "F32", "shape": [2, 2, 16], "data_offsets": [0, 256]}}, f32(64))
st("acts_i32/a.safetensors", {A: {"dtype": "I32", "shape": [4, 16], "data_offsets": [0, 256]}}, b"\0" * 256)
st("acts_width_mismatch/a.safetensors", {A: {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]}}, f32(64))
st("acts_width_mismatch/b.safetensors", {A: {"dtype": "F32", "shape": [2, 32], "data_offsets": [0, 256]}}, f32(64))
st("acts_none/a.safetensors", {"other": {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]}}, f32(64))
# wanda norms of the wrong length
st("norms_short/n.safetensors", {W + ".input_norm": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}, f32(8))
st("norms_nan/n.safetensors", {W + ".input_norm": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]}}, f32(16, float("nan")))
st("norms_inf/n.safetensors", {W + ".input_norm": {"dtype": "F32", "shape": [16], "data_offsets": [0, 64]}}, f32(16, float("inf")))
st("deep_shape/m.safetensors", None, b"", raw_header=('{"%s":{"dtype":"F16","shape":' % W).encode() + b"[" * 100000 + b"]" * 100000 + b',"data_offsets":[0,0]}}')
st("inf_weights/m.safetensors", {W: {"dtype": "F32", "shape": [16, 16], "data_offsets": [0, 1024]}}, f32(256, float("inf")))
st("big_weights/m.safetensors", {W: {"dtype": "F32", "shape": [16, 16], "data_offsets": [0, 1024]}}, f32(256, 1e6))
st("acts_huge/a.safetensors", {A: {"dtype": "F32", "shape": [4, 16], "data_offsets": [0, 256]}}, f32(64, 3e38))
# a good file beside a damaged sibling: pruning the good one reads only it
st("sibling/good.safetensors", ok, f16(256))
open(os.path.join(S, "sibling/bad.safetensors"), "wb").write(b"damaged")
os.mkfifo(os.path.join(S, "norms.fifo"))
EOF
s() { case_ $F "$1" "$2" "$3" "$4"; }
PR='$DBS prune'
O='-o $T/out/o.safetensors'
s valid_prune pass - "$PR \$T/st/valid/m.safetensors $O"
s valid_prune_dir_check pass - "$PR \$T/st/valid $O --check"
s valid_prune_metadata pass - "$PR \$T/st/valid_meta/m.safetensors $O"
s valid_calibrate pass - "\$DBS calibrate \$T/st/acts/a.safetensors $O"
s valid_calibrate_2_files pass - "\$DBS calibrate \$T/st/acts/a.safetensors \$T/st/acts/a.safetensors $O"
s header_len_past_file fail 'hlen_past_file/m.safetensors' "$PR \$T/st/hlen_past_file/m.safetensors $O"
s header_len_2p64m1 fail 'hlen_2p64m1/m.safetensors' "$PR \$T/st/hlen_2p64m1/m.safetensors $O"
s file_3_bytes fail 'short/m.safetensors' "$PR \$T/st/short/m.safetensors $O"
s header_not_json fail 'not_json/m.safetensors' "$PR \$T/st/not_json/m.safetensors $O"
s header_json_array fail 'json_array/m.safetensors' "$PR \$T/st/json_array/m.safetensors $O"
s duplicate_tensor_names fail 'dup_names/m.safetensors' "$PR \$T/st/dup_names/m.safetensors $O"
s offsets_out_of_range fail 'offsets_oob/m.safetensors' "$PR \$T/st/offsets_oob/m.safetensors $O"
s offsets_reversed fail 'offsets_reversed/m.safetensors' "$PR \$T/st/offsets_reversed/m.safetensors $O"
s offsets_negative fail 'offsets_negative/m.safetensors' "$PR \$T/st/offsets_negative/m.safetensors $O"
s offsets_2p63 fail 'offsets_2p63/m.safetensors' "$PR \$T/st/offsets_2p63/m.safetensors $O"
s dtype_unknown_F64 fail 'dtype_unknown/m.safetensors' "$PR \$T/st/dtype_unknown/m.safetensors $O"
s dtype_number fail 'dtype_number/m.safetensors' "$PR \$T/st/dtype_number/m.safetensors $O"
s shape_overflow_elements fail 'shape_overflow/m.safetensors' "$PR \$T/st/shape_overflow/m.safetensors $O"
s shape_overflow_bytes fail 'shape_overflow_bytes/m.safetensors' "$PR \$T/st/shape_overflow_bytes/m.safetensors $O"
s shape_negative fail 'shape_negative/m.safetensors' "$PR \$T/st/shape_negative/m.safetensors $O"
s shape_dtype_size_mismatch fail 'shape_mismatch/m.safetensors' "$PR \$T/st/shape_mismatch/m.safetensors $O"
s weight_1d fail 'shape_1d/m.safetensors' "$PR \$T/st/shape_1d/m.safetensors $O"
s weight_0_rows either 'shape_zero_rows/m.safetensors' "$PR \$T/st/shape_zero_rows/m.safetensors $O"
s weight_2p31_rows_0_cols fail 'shape_2p31_rows_0_cols/m.safetensors' "$PR \$T/st/shape_2p31_rows_0_cols/m.safetensors $O"
s weight_0_rows_2p32_cols fail 'shape_0_rows_2p32_cols/m.safetensors' "$PR \$T/st/shape_0_rows_2p32_cols/m.safetensors $O"
s tensors_overlap fail 'overlap/m.safetensors' "$PR \$T/st/overlap/m.safetensors $O"
s header_number_1e999 fail 'num_1e999/m.safetensors' "$PR \$T/st/num_1e999/m.safetensors $O"
s header_nesting_100k fail 'deep_nesting/m.safetensors' "$PR \$T/st/deep_nesting/m.safetensors $O"
s metadata_not_strings fail 'metadata_not_strings/m.safetensors' "$PR \$T/st/metadata_not_strings/m.safetensors $O"
s weight_dtype_i32 fail 'int_weights' "$PR \$T/st/int_weights/m.safetensors $O"
s weight_nan either 'nan_weights' "$PR \$T/st/nan_weights/m.safetensors $O"
s no_linear_layers fail 'no_layers' "$PR \$T/st/no_layers/m.safetensors $O"
s empty_directory fail 'empty_dir' "$PR \$T/st/empty_dir $O"
s weight_in_two_shards fail 'dup_shards' "$PR \$T/st/dup_shards $O"
s layers_not_present fail 'layers|valid' "$PR \$T/st/valid/m.safetensors $O --layers 99"
s wanda_norms_short fail 'norms_short|input_norm' "$PR \$T/st/valid/m.safetensors $O --method wanda --norms \$T/st/norms_short/n.safetensors"
s wanda_norms_nan fail 'norms_nan' "$PR \$T/st/valid/m.safetensors $O --method wanda --norms \$T/st/norms_nan/n.safetensors"
s wanda_norms_garbage fail 'garbage.mtx' "$PR \$T/st/valid/m.safetensors $O --method wanda --norms \$T/mtx/garbage.mtx"
s out_unwritable fail '/proc/x.safetensors' "$PR \$T/st/valid/m.safetensors -o /proc/x.safetensors"
s out_missing_dir fail 'missing/dir' "$PR \$T/st/valid/m.safetensors -o \$T/missing/dir/o.safetensors"
s model_is_dev_zero fail '/dev/zero' "$PR /dev/zero $O"
s header_shape_nesting_100k fail 'deep_shape/m.safetensors.*nested' "$PR \$T/st/deep_shape/m.safetensors $O"
s weight_inf fail 'inf_weights.*|infinite' "$PR \$T/st/inf_weights/m.safetensors $O"
s weight_past_f16 fail 'f16' "$PR \$T/st/big_weights/m.safetensors $O"
s weight_past_f16_as_bf16 pass - "$PR \$T/st/big_weights/m.safetensors $O --dtype bf16"
s wanda_norms_inf fail 'norms_inf|finite' "$PR \$T/st/valid/m.safetensors $O --method wanda --norms \$T/st/norms_inf/n.safetensors"
s wanda_norms_fifo fail 'norms.fifo.*FIFO' "$PR \$T/st/valid/m.safetensors $O --method wanda --norms \$T/st/norms.fifo"
s calibrate_input_fifo fail 'norms.fifo.*FIFO' "\$DBS calibrate \$T/st/norms.fifo $O"
s prune_out_is_input fail 'names the input' "$PR \$T/st/valid/m.safetensors -o \$T/st/valid/m.safetensors"
s calibrate_out_is_input fail 'names the input' "\$DBS calibrate \$T/st/acts/a.safetensors -o \$T/st/acts/a.safetensors"
s calibrate_norms_overflow fail 'acts_huge.*overflow' "\$DBS calibrate \$T/st/acts_huge/a.safetensors $O"
s prune_file_beside_damaged_sibling pass - "$PR \$T/st/sibling/good.safetensors $O"
s model_nonexistent fail 'nope.safetensors' "$PR \$T/st/nope.safetensors $O"
s calib_header_garbage fail 'garbage.mtx' "\$DBS calibrate \$T/mtx/garbage.mtx $O"
s calib_nan_acts fail 'acts_nan' "\$DBS calibrate \$T/st/acts_nan/a.safetensors $O"
s calib_inf_acts fail 'acts_inf' "\$DBS calibrate \$T/st/acts_inf/a.safetensors $O"
s calib_zero_tokens fail 'acts_zero_tokens' "\$DBS calibrate \$T/st/acts_zero_tokens/a.safetensors $O"
s calib_3d_acts fail 'acts_3d' "\$DBS calibrate \$T/st/acts_3d/a.safetensors $O"
s calib_i32_acts fail 'acts_i32' "\$DBS calibrate \$T/st/acts_i32/a.safetensors $O"
s calib_width_mismatch fail 'acts_width_mismatch' "\$DBS calibrate \$T/st/acts_width_mismatch/a.safetensors \$T/st/acts_width_mismatch/b.safetensors $O"
s calib_no_activations fail 'acts_none|input' "\$DBS calibrate \$T/st/acts_none/a.safetensors $O"
s calib_density_0 fail 'density' "\$DBS calibrate \$T/st/acts/a.safetensors $O --density 0"
s calib_density_nan fail 'density' "\$DBS calibrate \$T/st/acts/a.safetensors $O --density nan"
s calib_density_1.5 fail 'density' "\$DBS calibrate \$T/st/acts/a.safetensors $O --density 1.5"
s calib_out_unwritable fail '/proc/x.safetensors' "\$DBS calibrate \$T/st/acts/a.safetensors -o /proc/x.safetensors"

############################################################################ 8. CLI usage
F=cli
u() { case_ $F "$1" "$2" "$3" "$4"; }
u no_args usage - '$DBS'
u dbtune_unknown_flag fail 'bogus' '$DBT --bogus'
u unknown_subcommand fail 'frobnicate' '$DBS frobnicate'
u convert_no_matrix fail 'matrix' '$DBS convert'
u prune_no_out fail 'out' '$DBS prune $T/st/valid'
u convert_th0_above_th1 warn:'th0 200 is above --th1 10' - '$DBS convert stencil2d:n=16 --th0 200 --th1 10'
u dbtune_named_matrix_skipped fail 'missing.mtx' 'CUDA_VISIBLE_DEVICES= $DBT --ops spmv --db $T/cli/partial.db --matrices $T/cli/missing.mtx --matrices stencil2d:n=16'
u reorder_1e8_empty_rows_sized_first fail 'reorder.*host memory' 'printf "%%%%MatrixMarket matrix coordinate real general\n100000000 100000000 1\n1 1 1\n" > $T/cli/rows.mtx; bash -c "ulimit -v 4000000; $DBS reorder $T/cli/rows.mtx"'
u version pass - '$DBS --version'
u n_abc fail '\-\-n' '$DBS bench spmm stencil2d:n=10 --n abc'
u n_minus_1 fail '\-\-n' '$DBS bench spmm stencil2d:n=10 --n -1'
u spmv_window_unknown fail 'window-7' '$DBS bench spmv stencil2d:n=10 --strategy window-7'
u spmv_window_valid nogpu - '$DBS bench spmv stencil2d:n=10 --strategy classified,window-64'
u n_1e99 fail '\-\-n' '$DBS bench spmm stencil2d:n=10 --n 1e99'
u n_0 fail '\-\-n' '$DBS bench spmm stencil2d:n=10 --n 0'
u n_2p64 fail '\-\-n' '$DBS bench spmm stencil2d:n=10 --n 18446744073709551616'
u n_trailing_comma either '\-\-n' '$DBS bench spmm stencil2d:n=10 --n 32,'
u n_on_spmv fail '\-\-n' '$DBS bench spmv stencil2d:n=10 --n 32'
u reduce_unknown fail 'reduce' '$DBS bench spmm stencil2d:n=10 --reduce median'
u reduce_on_spmv fail 'reduce' '$DBS bench spmv stencil2d:n=10 --reduce max'
u reduce_on_brp_config fail 'path|reduce' "\$DBS bench spmm stencil2d:n=10 --reduce max --config '{\"path\":\"brp\"}'"
u reduce_valid nogpu - '$DBS bench spmm stencil2d:n=10 --reduce mean,max,min'
u sddmm_k_0 fail '\-\-n' '$DBS bench sddmm stencil2d:n=10 --n 0'
u decode_batch_0 fail '\-\-batch' '$DBS decode-bench --model qwen3-0.6b --batch 0'
u decode_batch_65 fail '\-\-batch' '$DBS decode-bench --model qwen3-0.6b --batch 65'
u decode_batch_abc fail '\-\-batch' '$DBS decode-bench --model qwen3-0.6b --batch abc'
u sddmm_k_513 fail '513|512' '$DBS bench sddmm stencil2d:n=10 --n 513'
u sddmm_precision_f64 fail 'f64|precision' '$DBS bench sddmm stencil2d:n=10 --precision f64'
u reps_nan fail '\-\-reps' '$DBS bench spmv stencil2d:n=10 --reps nan'
u density_nan fail '\-\-density' '$DBS bench spmspv stencil2d:n=10 --density nan'
u density_2 fail '\-\-density' '$DBS bench spmspv stencil2d:n=10 --density 2'
u th0_negative fail '\-\-th0' '$DBS convert stencil2d:n=10 --th0 -1'
u th2_nan fail '\-\-th2' '$DBS convert stencil2d:n=10 --th2 nan'
u th2_inf either '\-\-th2' '$DBS convert stencil2d:n=10 --th2 inf'
u residual_below_258 fail '\-\-residual-below' '$DBS convert stencil2d:n=10 --residual-below 258'
u precision_f16 fail '\-\-precision' '$DBS convert stencil2d:n=10 --precision f16'
u brp_f_3 fail '\-\-f|f ' '$DBS convert stencil2d:n=10 --format brp --f 3'
u condensed_g_0 fail '\-\-g|g ' '$DBS convert stencil2d:n=10 --format condensed --g 0'
u condensed_g_2p31 fail '\-\-g' '$DBS convert stencil2d:n=10 --format condensed --g 2147483648'
u reorder_methods_bogus fail 'methods|bogus' '$DBS reorder stencil2d:n=10 --methods bogus'
u explain_op_bogus fail '\-\-op|bogus' '$DBS explain stencil2d:n=10 --op bogus'
u bench_reorder_bogus fail '\-\-reorder|rabbit' '$DBS bench spmm stencil2d:n=10 --reorder degree-gpu,rabbit'
u bench_reorder_degree_gpu nogpu - '$DBS bench spmm stencil2d:n=10 --reorder degree-gpu'
u precompile_resources_bad_arch fail 'sm_12|arch' '$DBS precompile --arch sm_12 --op bfs --resources'
u stage_reuse_negative fail 'csr_stage_reuse' "\$DBS bench spmm stencil2d:n=10 --config '{\"csr_stage_reuse\":-1}'"
u stage_reuse_nan fail 'csr_stage_reuse|NaN|nan' "\$DBS bench spmm stencil2d:n=10 --config '{\"csr_stage_reuse\":\"nan\"}'"
u sparsity_nan fail 'sparsity' '$DBS prune $T/st/valid/m.safetensors -o $T/out/s.safetensors --sparsity nan'
u sparsity_1 fail '\-\-sparsity' '$DBS prune $T/st/valid/m.safetensors -o $T/out/s.safetensors --sparsity 1'
u layers_negative either 'layers' '$DBS prune $T/st/valid/m.safetensors -o $T/out/s.safetensors --layers -1'
u dbtune_budget_nan fail '\-\-budget' '$DBT --quick --no-shared --ops spmv --db $T/out/c.db --matrices stencil2d:n=10 --budget nan'
u dbtune_total_negative fail '\-\-total' '$DBT --quick --no-shared --ops spmv --db $T/out/c.db --matrices stencil2d:n=10 --total -5'
u recheck_rounds_negative fail '\-\-recheck-rounds' '$DBS bench spmv stencil2d:n=10 --check-auto --recheck-rounds -1'
u recheck_rounds_huge fail '\-\-recheck-rounds' '$DBS bench spmspv stencil2d:n=10 --check-auto --recheck-rounds 1000000'
u recheck_rounds_word fail '\-\-recheck-rounds' '$DBS bench spmv stencil2d:n=10 --check-auto --recheck-rounds many'
u dbtune_ops_bogus fail '\-\-ops|bogus' '$DBT --quick --no-shared --ops bogus --db $T/out/c.db'
u dbtune_arch_bogus fail 'sm_1|arch' '$DBT --quick --no-shared --ops spmv --db $T/out/c.db --matrices stencil2d:n=10 --arch sm_1'
u dbtune_arch_injection fail 'arch|sm_90;' '$DBT --quick --no-shared --ops spmv --db $T/out/c.db --matrices stencil2d:n=10 --arch "sm_90; rm -rf /"'
u precompile_arch_sm_999 fail 'sm_999|arch' '$DBS precompile --arch sm_999 --op spmv'
u precompile_arch_empty fail 'arch' '$DBS precompile --arch "" --op spmv'
u contract_random_labels_0 fail 'random-labels' '$DBS contract stencil2d:n=10 --random-labels 0'
u contract_labels_missing fail 'nope.txt|labels' '$DBS contract stencil2d:n=10 --labels $T/nope.txt'
u mcl_inflation_nan fail 'inflation' '$DBS mcl stencil2d:n=10 --inflation nan'
u gcn_fuse_relu_value fail 'fuse-relu|no-fuse-relu' '$DBS gcn stencil2d:n=10 --no-fuse-relu=maybe'
u gcn_no_fuse_relu_nogpu nogpu - '$DBS gcn stencil2d:n=10 --no-fuse-relu'
u bench_epilogue_bogus fail '\-\-epilogue|gelu' '$DBS bench spmm stencil2d:n=10 --epilogue gelu'
u bench_epilogue_on_spmv fail '\-\-epilogue' '$DBS bench spmv stencil2d:n=10 --epilogue relu'
u gcn_not_square fail 'square' '$DBS gcn pruned:rows=20,cols=30,density=0.3,block=1'
u long_matrix_arg fail 'expected' '$DBS convert "$(head -c 100000 /dev/zero | tr "\0" a).mtx"'
u json_proc_convert fail '/proc/x.json' '$DBS convert stencil2d:n=10 --json /proc/x.json'
u json_missing_dir_convert fail 'missing/dir' '$DBS convert stencil2d:n=10 --json $T/missing/dir/x.json'
u json_is_directory_convert fail 'json|/out' '$DBS convert stencil2d:n=10 --json $T/out'
u json_proc_info fail '/proc/x.json' '$DBS info --json /proc/x.json'
u json_missing_dir_info fail 'missing/dir' '$DBS info --json $T/missing/dir/x.json'
u json_proc_reorder fail '/proc/x.json' '$DBS reorder stencil2d:n=10 --json /proc/x.json'
u json_missing_dir_reorder fail 'missing/dir' '$DBS reorder stencil2d:n=10 --json $T/missing/dir/x.json'
u permutation_proc_reorder fail '/proc/x.perm' '$DBS reorder stencil2d:n=10 --permutation /proc/x.perm'
u json_proc_bfs_convert fail '/proc/x.json' '$DBS convert stencil2d:n=10 --bfs --json /proc/x.json'
u json_proc_condensed fail '/proc/x.json' '$DBS convert stencil2d:n=10 --format condensed --json /proc/x.json'
u json_proc_brp_host fail '/proc/x.json' '$DBS convert stencil2d:n=10 --format brp --host --json /proc/x.json'
# Device nodes as outputs. Never the real /dev/full or /dev/null: as root a writer that renames a
# temp file over its target replaces the node with a regular file (this sweep did that to /dev/full
# once). Private nodes under $T instead (mknod, root only); after each case the node must still be one.
if mknod "$T/cli/full" c 1 7 2>/dev/null && mknod "$T/cli/null" c 1 3 2>/dev/null; then
  NODE_CHECK='; rc=$?; for n in $T/cli/full $T/cli/null; do [[ -c $n ]] || { echo "HOSTILE-CHECK-FAILED: $n (a device node) was replaced by a regular file"; rm -f $n; mknod $n c 1 $([[ $n == *full ]] && echo 7 || echo 3); } >&2; done; exit $rc'
  u json_devfull_convert fail 'full' "\$DBS convert stencil2d:n=10 --json \$T/cli/full$NODE_CHECK"
  u json_devfull_info fail 'full' "\$DBS info --json \$T/cli/full$NODE_CHECK"
  u json_devfull_reorder fail 'full' "\$DBS reorder stencil2d:n=10 --json \$T/cli/full$NODE_CHECK"
  u stdout_devfull fail 'write|stdout|space' "\$DBS convert stencil2d:n=10 > \$T/cli/full$NODE_CHECK"
  u json_devnull_convert pass - "\$DBS convert stencil2d:n=10 --json \$T/cli/null$NODE_CHECK"
  u json_devnull_info pass - "\$DBS info --json \$T/cli/null$NODE_CHECK"
  u permutation_devnull_reorder pass - "\$DBS reorder stencil2d:n=10 --permutation \$T/cli/null$NODE_CHECK"
  u prune_out_devnull pass - "\$DBS prune \$T/st/valid/m.safetensors -o \$T/cli/null$NODE_CHECK"
  u calibrate_out_devnull pass - "\$DBS calibrate \$T/st/acts/a.safetensors -o \$T/cli/null$NODE_CHECK"
else
  echo "# (mknod not permitted: the device-node output cases are left out)"
fi
u json_empty_path either 'json' '$DBS convert stencil2d:n=10 --json ""'

############################################################################ summary
echo
echo "Summary (sweep time $((SECONDS - SWEEP_START)) s)"
CLASSES=(OK CRASH HANG INTERNAL SILENT UNCLEAR REFUSED)
printf "%-8s %6s" family cases
for cl in "${CLASSES[@]}"; do printf " %8s" "$cl"; done
echo
tot=0
declare -A TOTC
for fam in "${FAM_ORDER[@]}"; do
  n=0
  declare -A CNT=()
  for i in "${!R_FAM[@]}"; do
    [[ ${R_FAM[$i]} == "$fam" ]] || continue
    n=$((n + 1)); CNT[${R_CLASS[$i]}]=$((${CNT[${R_CLASS[$i]}]:-0} + 1))
  done
  printf "%-8s %6d" "$fam" "$n"
  for cl in "${CLASSES[@]}"; do
    printf " %8d" "${CNT[$cl]:-0}"; TOTC[$cl]=$((${TOTC[$cl]:-0} + ${CNT[$cl]:-0}))
  done
  echo
  tot=$((tot + n))
  unset CNT
done
printf "%-8s %6d" total "$tot"
for cl in "${CLASSES[@]}"; do printf " %8d" "${TOTC[$cl]:-0}"; done
echo
echo
echo "Commands (\$DBS=$DBS, \$DBT=$DBT, \$T=the temp dir, \$AS_NOBODY=${AS_NOBODY:-none})"
for i in "${!R_FAM[@]}"; do
  printf "%-8s %-8s %-34s %s\n" "${R_CLASS[$i]}" "${R_FAM[$i]}" "${R_NAME[$i]}" "${R_CMD[$i]}"
done
