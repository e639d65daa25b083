#!/usr/bin/env bash
# Deterministic cost gate: instructions per operation of each benchmarked path, counted
# by callgrind, against the ceilings checked in at benches/icount-ceilings.toml.
#
# For every variant of the `icount` binary (benches/src/bin/icount.rs) it runs
#   valgrind --tool=callgrind --callgrind-out-file=/dev/null icount VARIANT N
# at N = N1 and N = N2, and takes (Ir(N2) - Ir(N1)) / (N2 - N1): setup cancels out.
# Exits 1 if a path exceeds its ceiling or has none, or if valgrind is missing.
#
#   .ci/icount.sh                 # build (release, mcp-benches only), count, gate
#   ICOUNT_N1=100 ICOUNT_N2=2100 .ci/icount.sh       # other N
#   ICOUNT_CEILINGS=/tmp/c.toml .ci/icount.sh        # other ceilings (e.g. to see it fail)
set -euo pipefail
cd "$(dirname "$0")/.."

ceilings=${ICOUNT_CEILINGS:-benches/icount-ceilings.toml}
n1=${ICOUNT_N1:-100}
n2=${ICOUNT_N2:-1100}

if ! command -v valgrind >/dev/null 2>&1; then
  echo "icount: valgrind is not installed; it is required for the instruction-count gate" >&2
  echo "icount: install it (Debian/Ubuntu: apt-get install valgrind) and rerun" >&2
  exit 1
fi
if [ "$n2" -le "$n1" ]; then
  echo "icount: ICOUNT_N2 ($n2) must exceed ICOUNT_N1 ($n1)" >&2
  exit 1
fi

cargo build --release --locked -p mcp-benches --bin icount
bin="${CARGO_TARGET_DIR:-target}/release/icount"

# Total instructions of one run ("I refs:" in callgrind's summary).
irefs() {
  local out
  if ! out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1); then
    echo "icount: valgrind run of '$1 $2' failed:" >&2
    echo "$out" >&2
    return 1
  fi
  local refs
  refs=$(printf '%s\n' "$out" | sed -n 's/.*I[[:space:]]*refs:[[:space:]]*\([0-9,]*\).*/\1/p' | tr -d ,)
  if [ -z "$refs" ]; then
    echo "icount: no 'I refs:' line from valgrind for '$1 $2':" >&2
    echo "$out" >&2
    return 1
  fi
  echo "$refs"
}

# The ceiling of a variant: a line `"VARIANT" = NUMBER` in the ceilings file.
ceiling() {
  awk -v key="\"$1\"" -F '=' '
    /^[[:space:]]*#/ { next }
    { k = $1; gsub(/^[[:space:]]+|[[:space:]]+$/, "", k) }
    k == key { v = $2; sub(/#.*/, "", v); gsub(/[[:space:]_]/, "", v); print v; exit }
  ' "$ceilings"
}

declare -A per_op
failed=0
printf '\n%-22s %12s %12s %8s  %s\n' "variant" "instr/op" "ceiling" "use" "verdict"
for variant in $("$bin" list); do
  a=$(irefs "$variant" "$n1")
  b=$(irefs "$variant" "$n2")
  op=$(( (b - a + (n2 - n1) / 2) / (n2 - n1) ))
  per_op[$variant]=$op
  case "$variant" in
    ref:*)
      # References (bare simd-json parses) are printed for the ratios, not gated.
      printf '%-22s %12d %12s %8s  %s\n' "$variant" "$op" "-" "-" "reference"
      continue
      ;;
  esac
  max=$(ceiling "$variant")
  if [ -z "$max" ]; then
    printf '%-22s %12d %12s %8s  %s\n' "$variant" "$op" "none" "-" "FAIL (no ceiling in $ceilings)"
    failed=1
    continue
  fi
  use=$(awk -v a="$op" -v b="$max" 'BEGIN { printf "%.0f%%", 100 * a / b }')
  if [ "$op" -gt "$max" ]; then
    verdict="FAIL (over the ceiling)"
    failed=1
  elif [ $(( op * 100 )) -lt $(( max * 80 )) ]; then
    verdict="ok (under 80% of the ceiling: tighten it)"
  else
    verdict="ok"
  fi
  printf '%-22s %12d %12d %8s  %s\n' "$variant" "$op" "$max" "$use" "$verdict"
done

printf '\n%-22s %8s\n' "path" "instr ratio to its reference"
for variant in $("$bin" list); do
  case "$variant" in ref:*) continue ;; esac
  awk -v a="${per_op[$variant]}" -v b="${per_op[ref:$variant]}" -v v="$variant" \
    'BEGIN { printf "%-22s %8.2f\n", v, a / b }'
done
printf '(N = %d and %d; instructions per op = (Ir(N2) - Ir(N1)) / (N2 - N1))\n' "$n1" "$n2"

if [ "$failed" -ne 0 ]; then
  echo "icount: FAILED: a path exceeds its instruction ceiling (or has none) in $ceilings" >&2
  echo "icount: find the regression, or raise the ceiling with the measured reason (docs/performance.md)" >&2
  exit 1
fi
echo "icount: every path is within its ceiling"
