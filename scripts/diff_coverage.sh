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
files=$(find src/tile -name '*.rs' ! -name tests.rs | sort)
profile="$CARGO_TARGET_DIR/diff.profdata"
echo
echo "Coverage of src/tile/ by $programs generated programs, lowest line coverage first:"
# shellcheck disable=SC2086
"$bin/llvm-cov" report "$exe" -instr-profile="$profile" $files |
  awk '$1 ~ /\.rs$/ { printf "  %-26s lines %7s of %5s   regions %7s\n", $1, $10, $8, $4 }
       $1 == "TOTAL" { printf "~ %-26s lines %7s of %5s   regions %7s\n", "all of src/tile/", $10, $8, $4 }' |
  sort -k3 -n | sed 's/^~/ /' 
echo
echo "Functions of the checker and the CUDA writer that no generated program reached (blind spots):"
# shellcheck disable=SC2086
"$bin/llvm-cov" report "$exe" -instr-profile="$profile" --show-functions \
  $(ls src/tile/check/*.rs src/tile/cuda/*.rs | grep -v tests.rs) |
  python3 -c '
import re, sys
file, out = None, []
for line in sys.stdin:
    m = re.match(r"File .(.*).:", line)
    if m:
        file = m.group(1).split("/src/tile/")[-1]
        continue
    cols = line.split()
    # Never entered: every region missed. Closures (_RNC) are left out.
    if len(cols) > 4 and cols[0].startswith("_RNv") and cols[3] == "0.00%":
        sym = name = cols[0]
        # v0 mangling: the function is the identifier `<length><name>` that ends the symbol.
        for n in re.finditer(r"\d+", sym):
            end = n.end() + int(n.group())
            if end == len(sym) and re.fullmatch(r"[A-Za-z_]\w*", sym[n.end():end]):
                name = sym[n.end():end]
        out.append("  %s: %s (%s lines)" % (file, name, cols[4]))
print("\n".join(out))
print("  %d functions" % len(out))'
