# Sourced (bash) by the setup scripts: takes out of this shell's environment what `npm run` put in it, so the npm,
# node-gyp and code-server they start behave as when started from a plain shell. An outer npm's `npm_config_*` are
# config to an inner npm (its `npm_config_user_agent` names the outer Node: code-server's postinstall read "node
# v20" from it under Node 24 and refused; its `npm_config_nodedir=/usr` builds add-ons against the wrong headers).
# The same rule as withoutNpmEnv in src/demo/launch.ts, which test/unit/npmFreeEnv.test.ts holds this to.
if [[ -n "${npm_lifecycle_event:-}" ]]; then
  unset INIT_CWD NODE COLOR
  # npm put its node_modules/.bin folders and node-gyp-bin first on PATH: drop that leading run of entries.
  while [[ "$PATH" == *:* && ( "${PATH%%:*}" == */node_modules/.bin || "${PATH%%:*}" == */node-gyp-bin ) ]]; do
    PATH="${PATH#*:}"
  done
  export PATH
fi
while IFS= read -r __npm_var; do
  case "${__npm_var,,}" in npm_*) unset "$__npm_var" ;; esac
done < <(compgen -e)
unset __npm_var
