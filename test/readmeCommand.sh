#!/usr/bin/env bash
# test/readmeCommand.sh ENDING [README]: prints the README's quick-start command line that ends in ENDING (`npm test`,
# `npm run demo`), comment stripped, so CI and the quick-start test run exactly what the README tells a newcomer.
# The line is looked for in the first ```sh block after the `<!-- test: quick-start -->` marker; without the marker,
# the block or such a line it fails loudly (exit 1) instead of quietly running something else.
set -euo pipefail
ending="${1:?usage: test/readmeCommand.sh ENDING [README]}"
readme="${2:-$(dirname "${BASH_SOURCE[0]}")/../README.md}"
line="$(awk -v ending="$ending" '
  index($0, "<!-- test: quick-start -->") { marker = 1; next }
  marker && /^```/ { if (inblock) exit; inblock = 1; next }
  inblock {
    line = $0
    sub(/[ \t]+#.*$/, "", line)
    sub(/[ \t]+$/, "", line)
    if (length(line) >= length(ending) && substr(line, length(line) - length(ending) + 1) == ending) { print line; exit }
  }
' "$readme")"
if [[ -z "$line" ]]; then
  echo "readmeCommand.sh: no line ending in '$ending' in the block after <!-- test: quick-start --> in $readme" >&2
  exit 1
fi
printf '%s\n' "$line"
