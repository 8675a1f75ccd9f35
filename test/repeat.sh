#!/usr/bin/env bash
# test/repeat.sh SUITES N [--load]: runs test suites N times in a clean clone of the committed HEAD, with the installs
# done once, and prints how many runs each test passed. The proof that a suite does not flake.
#
#   SUITES   unit, integration, quickstart, e2e, or several joined by commas (integration,e2e); each run runs them in that order,
#            exactly as `npm test` does (test/run-suite.sh).
#   N        how many runs.
#   --load   keep every core busy with a CPU load at normal priority for the whole of each run (a loaded CI
#            machine); the load is bounded (it ends with the script, and after 3 hours whatever happens).
#
# The clone, its installs and each run's TAP and log stay in REPEAT_DIR (default: a new temp folder) for a look
# afterwards. Exit status 1 when any test failed in any run. Needs what .ci/run installs (apt packages); the npm
# packages and the test VS Code are installed into the clone.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

suites="${1:?usage: test/repeat.sh SUITES N [--load]}"
runs="${2:?usage: test/repeat.sh SUITES N [--load]}"
load=0
if [[ "${3:-}" == --load ]]; then load=1; elif [[ -n "${3:-}" ]]; then echo "repeat.sh: unknown option $3" >&2; exit 2; fi
IFS=, read -r -a names <<<"$suites"
for n in "${names[@]}"; do
  case "$n" in unit | integration | quickstart | e2e) ;; *) echo "repeat.sh: unknown suite '$n'" >&2; exit 2 ;; esac
done

dir="${REPEAT_DIR:-$(mktemp -d /tmp/rr-repeat.XXXXXX)}"
mkdir -p "$dir"
if [[ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]]; then
  echo "repeat.sh: note: uncommitted changes are not in the clone; it repeats the committed HEAD" >&2
fi
rev="$(git -C "$src" rev-parse --short HEAD)"
echo "repeat.sh: $suites × $runs$([[ $load == 1 ]] && echo ', under load') at $rev in $dir"

clone="$dir/clone"
rm -rf "$clone"
git clone -q --no-local "$src" "$clone"
git -C "$clone" checkout -q "$rev"
cd "$clone"
{
  npm ci --no-audit --no-fund
  if [[ ",$suites," == *,e2e,* ]]; then bash test/vscode/setup.sh; fi
  node esbuild.mjs
} >"$dir/install.log" 2>&1 || { tail -n 40 "$dir/install.log" >&2; echo "repeat.sh: install failed ($dir/install.log)" >&2; exit 1; }
if [[ ",$suites," == *,e2e,* ]]; then
  export REMOTE_RUNS_VSIX="$dir/remote-runs.vsix"
  node --import tsx test/e2e/vsix.ts "$REMOTE_RUNS_VSIX" >>"$dir/install.log" 2>&1
fi

loaders=()
stop_load() {
  if ((${#loaders[@]})); then kill "${loaders[@]}" 2>/dev/null || true; wait "${loaders[@]}" 2>/dev/null || true; fi
  loaders=()
}
trap stop_load EXIT

run_dirs=()
for ((i = 1; i <= runs; i++)); do
  run="$dir/run-$i"
  rm -rf "$run"
  mkdir -p "$run"
  run_dirs+=("$run")
  if ((load)); then
    for ((c = 0; c < $(nproc); c++)); do
      timeout 3h sh -c 'while :; do :; done' &
      loaders+=($!)
    done
  fi
  start=$SECONDS
  for n in "${names[@]}"; do
    bash test/run-suite.sh "$n" "$run/$n.tap" >"$run/$n.log" 2>&1 || true
    p="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$run/$n.tap" 2>/dev/null | tail -n 1)"
    f="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$run/$n.tap" 2>/dev/null | tail -n 1)"
    echo "run $i/$runs $n: ${p:-?} passed, ${f:-?} failed"
  done
  la="$(cut -d' ' -f1-3 /proc/loadavg)"
  stop_load
  echo "run $i/$runs done in $((SECONDS - start)) s (load average at the end: $la)"
done

echo
node --import tsx test/tapTally.ts "${run_dirs[@]}"
