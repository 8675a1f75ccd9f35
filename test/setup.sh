#!/usr/bin/env bash
# `npm run setup`: installs everything `npm test` needs beyond Node on a fresh Debian machine, as root: the system
# packages of the integration tests below, then the end-to-end toolchain (test/vscode/setup.sh: Chromium, build
# tools and a code-server test VS Code). Idempotent: with everything in place it changes nothing and returns in about
# a second. `.ci/run` runs the README's test line, which calls this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source test/npmFreeEnv.sh

# openssh-server/-client: the real sshd and ssh/ssh-keygen of the integration tests; busybox: the non-GNU find the
# discovery script is tested against; procps, util-linux (unshare), iproute2, passwd (useradd): process, namespace
# and user tools of the test harnesses; slurm-wlm, munge: the Slurm the eval tests submit to; git: the quick-start
# test clones the repository.
apt_packages=(openssh-server openssh-client busybox procps util-linux iproute2 passwd ca-certificates git slurm-wlm munge)
missing=()
for p in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then missing+=("$p"); fi
done
if ((${#missing[@]})); then
  if [[ "$(id -u)" != 0 ]]; then
    echo "setup.sh: missing Debian packages (${missing[*]}); run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "setup.sh: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine may have empty package lists; update only when the first attempt fails.
  apt-get install -y --no-install-recommends "${missing[@]}" ||
    { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; }
fi

bash test/vscode/setup.sh
