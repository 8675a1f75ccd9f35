#!/usr/bin/env bash
# `npm test`: typecheck, build, then the unit, integration (beside them the quick start) and end-to-end suites. Every step runs even when an
# earlier one failed, so one run shows everything that is broken; the exit status is non-zero if anything failed.
# The last line is the summary `N passed, N failed`, summed over the suites (counted from each suite's TAP).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Run by `npm test`: every step below starts as from a plain shell, with nothing of npm's environment.
source test/npmFreeEnv.sh

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
broken=() # names of steps that failed

step() {
  local name="$1"
  shift
  echo "=== $name: $*"
  if ! "$@"; then broken+=("$name"); fi
}

# Runs one suite (test/run-suite.sh: spec reporter on the terminal, TAP into a file), then adds its counts.
suite() {
  local name="$1"
  echo "=== $name"
  bash test/run-suite.sh "$name" "$work/$name.tap"
  tally "$name" $?
}

# Adds the counts of suite $1, whose runner exited with $2, from its TAP file.
tally() {
  local name="$1" rc="$2"
  local tap="$work/$name.tap"
  local p f c
  p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)"
  f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)"
  c="$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$tap" 2>/dev/null | tail -n 1)"
  p="${p:-0}" f="${f:-0}" c="${c:-0}"
  f=$((f + c)) # a cancelled test (its file crashed, a hook failed) did not pass
  # A runner that failed without reporting a failing test (crash before TAP, a packaging failure) counts as one.
  if ((rc != 0 && f == 0)); then f=1; fi
  passed=$((passed + p))
  failed=$((failed + f))
  if ((rc != 0)); then broken+=("$name"); fi
}

step typecheck npx tsc --noEmit -p .
# The webview's own types (DOM, no node): tsconfig.webview.json, which esbuild only names, never checks.
step typecheck-webview npx tsc --noEmit -p tsconfig.webview.json
step build node esbuild.mjs

# The quick-start suite runs the README's `npm ci && npm run demo` in a fresh clone, installing code-server for real
# (minutes, mostly npm and compilers): it runs beside unit and integration, with which it shares nothing (its own
# temp folder and HOME, free ports), its output shown when it ends.
bash test/run-suite.sh quickstart "$work/quickstart.tap" >"$work/quickstart.log" 2>&1 &
quickstart=$!
for name in unit integration; do suite "$name"; done
wait "$quickstart"
rc=$?
echo "=== quickstart"
cat "$work/quickstart.log"
tally quickstart "$rc"
suite e2e

if ((${#broken[@]})); then echo "failed steps: ${broken[*]}"; fi
echo "$passed passed, $failed failed"
((${#broken[@]} == 0))
