# Sourced by test/setup.sh and test/vscode/setup.sh: `apt_install_missing PKG...` installs the Debian packages of
# that list that are not installed yet, as root, and says which; without root it names them and fails. A fresh
# machine may have empty package lists: `apt-get update` runs only when the first attempt fails.
apt_install_missing() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then missing+=("$p"); fi
  done
  ((${#missing[@]})) || return 0
  if [[ "$(id -u)" != 0 ]]; then
    echo "setup.sh: missing Debian packages (${missing[*]}); run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    return 1
  fi
  echo "setup.sh: apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" ||
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; }
}
