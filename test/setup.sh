#!/usr/bin/env bash
# `npm run setup`: installs everything `npm test` needs beyond Node on a fresh Debian machine, as root: the system
# packages of the integration tests below, then the end-to-end toolchain (test/vscode/setup.sh: Chromium, build
# tools and a code-server test VS Code). Idempotent: with everything in place it changes nothing and returns in about
# a second. `.ci/run` runs the README's test line, which calls this.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source test/npmFreeEnv.sh

# openssh-server/-client: the real sshd and ssh/ssh-keygen of the integration tests; busybox: the non-GNU tools the
# discovery script and a pull are tested against (a user whose PATH holds only its applets); tcsh, fish, zsh: login
# shells of test users (every remote command must run whatever the login shell, shell/portable.ts); procps, util-linux (unshare), iproute2, passwd (useradd): process, namespace
# and user tools of the test harnesses; slurm-wlm, munge: the Slurm the eval tests submit to; git: the quick-start
# test clones the repository.
source test/aptInstall.sh
apt_install_missing openssh-server openssh-client busybox tcsh fish zsh procps util-linux iproute2 passwd ca-certificates git slurm-wlm munge

bash test/vscode/setup.sh
