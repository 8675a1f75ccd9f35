#!/usr/bin/env bash
# test/run-suite.sh SUITE TAP_FILE: runs one suite (unit, integration, quickstart or e2e) exactly as `npm test` runs it, with the
# spec reporter on the terminal and TAP into TAP_FILE. Used by test/run-all.sh and test/repeat.sh. Expects the build
# (`node esbuild.mjs`) to be done; for e2e it packages the extension once unless REMOTE_RUNS_VSIX names a package.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

suite="${1:?usage: test/run-suite.sh unit|integration|quickstart|e2e TAP_FILE}"
tap="${2:?usage: test/run-suite.sh unit|integration|quickstart|e2e TAP_FILE}"

shopt -s nullglob
files=(test/"$suite"/*.test.ts)
if ((${#files[@]} == 0)); then
  echo "run-suite.sh: no test files in test/$suite" >&2
  exit 1
fi
args=()
case "$suite" in
  unit) ;;
  integration | quickstart) args=(--test-concurrency=1) ;;
  e2e)
    args=(--test-concurrency=1)
    if [[ -z "${REMOTE_RUNS_VSIX:-}" ]]; then
      # Package the extension once for every e2e file (each runs in its own process). A packaging failure fails the
      # suite loudly: the e2e tests then report the missing file themselves.
      REMOTE_RUNS_VSIX="$(dirname "$tap")/remote-runs.vsix"
      echo "=== package-vsix: $REMOTE_RUNS_VSIX"
      node --import tsx test/e2e/vsix.ts "$REMOTE_RUNS_VSIX" || exit 1
    fi
    export REMOTE_RUNS_VSIX
    ;;
  *)
    echo "run-suite.sh: unknown suite '$suite' (unit, integration, quickstart or e2e)" >&2
    exit 2
    ;;
esac

exec node --import tsx --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" "${args[@]}" "${files[@]}"
