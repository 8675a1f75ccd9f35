#!/usr/bin/env bash
# `npm test`: typecheck, build, then the unit suite (beside it the quick start), then the integration suite (beside it
# the end-to-end suite). Every step runs even when an earlier one failed, so one run shows everything that is broken;
# the exit status is non-zero if anything failed.
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

# Suites that share nothing (each its own temp folders, HOME, free ports and harness processes; no test looks at
# another's processes: the /proc scans match their own temp folder, parent or host names) run side by side, each
# background suite's output shown when it ends:
# - the quick-start suite runs the README's `npm ci && npm run demo` in a fresh clone, installing code-server for real
#   (minutes, mostly npm and compilers), beside the unit suite;
# - the end-to-end suite (a real VS Code in a browser) beside the integration suite (the real sshd, kubectl and test
#   API server): each mostly waits on its processes, and run one after the other they took 14 + 11 min.
background() {
  local name="$1"
  bash test/run-suite.sh "$name" "$work/$name.tap" >"$work/$name.log" 2>&1 &
  eval "pid_$name=$!"
}
collect() {
  local name="$1" pid rc
  eval "pid=\$pid_$name"
  wait "$pid"
  rc=$?
  echo "=== $name"
  cat "$work/$name.log"
  tally "$name" "$rc"
}
background quickstart
suite unit
background e2e
suite integration
collect quickstart
collect e2e

if ((${#broken[@]})); then echo "failed steps: ${broken[*]}"; fi
echo "$passed passed, $failed failed"
((${#broken[@]} == 0))
