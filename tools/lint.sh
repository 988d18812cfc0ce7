#!/usr/bin/env bash
# Makes the xtensor 0.24.3 traps impossible rather than avoided once (docs/architecture.md):
#  1. a lazy keep_dims reduction inside an expression returns garbage -> keep_dims is banned;
#     axis sums that keep dims go through sum_keepdim (autograd/reduce_kernels.hpp);
#  2. `auto` holding an xtensor expression dangles -> `auto x = ...xt::...` is banned
#     (name the container type: Array, Ids, Mask); make_shared<Array>(...) is a container.
# Comment lines are not code and are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
check() {  # extended regex, message
  local hits
  hits=$(git ls-files '*.cpp' '*.hpp' | xargs grep -nE "$1" 2>/dev/null \
         | grep -vE '^[^:]+:[0-9]+:\s*//' | grep -v 'make_shared<' || true)
  if [ -n "$hits" ]; then echo "lint: $2"; echo "$hits" | sed 's/^/  /'; bad=1; fi
}
check 'keep_dims' "keep_dims is banned: reduce with sum_keepdim (autograd/reduce_kernels.hpp)"
check '\bauto\b[^=;(\[]*=[^;]*\bxt::' "do not hold an xtensor expression in auto: name the container type (Array, Ids, Mask)"
# 3. every doctest file declares its area's suite (docs/debugging.md: run one suite with -ts=NAME)
unsuited=$(git ls-files 'tests/*.cpp' | xargs grep -l 'TEST_CASE' | xargs grep -L 'TEST_SUITE_BEGIN' || true)
if [ -n "$unsuited" ]; then
  echo "lint: test files without TEST_SUITE_BEGIN(\"area\") (ops, engine, debug, nn, tutorial_a..d, optim, io, docs, examples, distributed):"
  echo "$unsuited" | sed 's/^/  /'; bad=1
fi
# 4. the repository stands alone: no tracked file points beside it (the fixture format is
#    docs/fixtures.md). Fixture data (tests/fixtures/) is generated and skipped. The patterns
#    are bracketed so that this file does not match itself.
outside=$(git grep -nIE '[.][.]/shared|/work/[s]hared|FORMAT[.]md|TEAM[.]md' -- . ':!tests/fixtures/' || true)
if [ -n "$outside" ]; then
  echo "lint: references outside the repository (the sibling shared folder, FORMAT or TEAM notes); say it here, e.g. docs/fixtures.md:"
  echo "$outside" | sed 's/^/  /'; bad=1
fi
# 5. one include root: a library header is included as <xtgrad/folder/name.hpp>, in the tree as
#    by users of the installed library (README.md, "Layout"); quotes are for the examples', tools'
#    and tests' own helpers only.
check '#\s*include\s+"(autograd|nn|optim|report|gemm|simd|threads|io|random)/|#\s*include\s+"xtgrad[.]hpp"' \
  "include library headers as <xtgrad/...> (one include root, every installed header in docs/api.md)"
# 6. the public API is decided, not accidental: docs/api.md names every installed header once
python3 tools/public_headers.py --check-doc . docs/api.md || bad=1
# 7. CLI11 is included through examples/common/cli11.hpp alone, which compiles it without
#    optimization (the reason is there); a direct <CLI/...> include first would undo that.
cli_direct=$(git ls-files '*.cpp' '*.hpp' ':!examples/common/cli11.hpp' | xargs grep -nE '#\s*include\s+<CLI/' || true)
if [ -n "$cli_direct" ]; then
  echo "lint: include \"examples/common/cli11.hpp\", not <CLI/...>:"; echo "$cli_direct" | sed 's/^/  /'; bad=1
fi
[ "$bad" -eq 0 ] || exit 1
echo "lint: ok (no keep_dims, no auto-held xtensor expressions, every test file in a suite, nothing points outside the repository, one include root, every installed header in docs/api.md, CLI11 through cli11.hpp)"
