#!/usr/bin/env bash
# Which compiler paths the differential test's generated programs reach: builds the test with
# LLVM source coverage (-C instrument-coverage), runs PROGRAMS programs (default 300) against
# Triton's interpreter, and prints line and region coverage of each file of kwb's tile compiler
# (src/tile/), lowest first, then the functions of the code generator and checker that no program
# reached: the generator's blind spots. Needs the llvm-tools component
# (`rustup component add llvm-tools`) and what tests/tile_differential.rs needs (torch and
# triton, installed into kwb's cache on first use).
#
#   scripts/diff_coverage.sh [PROGRAMS] [SEED]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
programs=${1:-300}
seed=${2:-1}
bin=$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin
for tool in llvm-profdata llvm-cov; do
  [ -x "$bin/$tool" ] || { echo "diff_coverage: $tool missing: run 'rustup component add llvm-tools'" >&2; exit 2; }
done
export CARGO_TARGET_DIR="$root/target/coverage"
export RUSTFLAGS="-C instrument-coverage"
prof="$CARGO_TARGET_DIR/profraw"
rm -rf "$prof" && mkdir -p "$prof"
exe=$(cargo test --test tile_differential --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "tile_differential":
        print(m["executable"])')
echo "diff_coverage: running $programs programs from seed $seed under $exe" >&2
LLVM_PROFILE_FILE="$prof/%p-%m.profraw" KWB_DIFF_PROGRAMS=$programs KWB_DIFF_SEED=$seed \
  KWB_DIFF_DIR="$CARGO_TARGET_DIR/tile-diff" "$exe" --nocapture 2>&1 | grep -E '^(tile differential|coverage)' || true
"$bin/llvm-profdata" merge -sparse "$prof"/*.profraw -o "$CARGO_TARGET_DIR/diff.profdata"
report=$("$bin/llvm-cov" report "$exe" -instr-profile="$CARGO_TARGET_DIR/diff.profdata" \
  --ignore-filename-regex='(\.cargo|rustc|/tests/|/src/(ui|run|emu|batch|report|workspace|compile)/)')
echo
echo "Coverage of src/tile/ by $programs generated programs (lines, regions), lowest line coverage first:"
echo "$report" | awk '$1 ~ /src\/tile\// { sub(".*/src/tile/", "", $1); printf "%-28s lines %6s of %5s  regions %6s\n", $1, $10, $8, $4 }' | sort -k3 -n
echo "$report" | tail -1 | awk '{ printf "total (src/tile/ and what it calls): lines %s, regions %s\n", $10, $4 }'
echo
echo "Functions of src/tile/{check,cuda,ir} that no generated program reached (blind spots):"
"$bin/llvm-cov" report "$exe" -instr-profile="$CARGO_TARGET_DIR/diff.profdata" --show-functions \
  $(ls src/tile/check/*.rs src/tile/cuda/*.rs src/tile/ir/*.rs | grep -v tests.rs) 2>/dev/null |
  awk '/^[^ ].*\.rs$/ { file = $1; sub(".*/src/tile/", "", file) }
       $0 ~ /^  *[_a-zA-Z0-9:<>]+/ && $4 == "0.00%" && $2 != "Regions" { print "  " file ": " $1 }' |
  sed 's/_RNv[A-Za-z0-9_]*//' | head -${KWB_COVERAGE_LIST:-60}
