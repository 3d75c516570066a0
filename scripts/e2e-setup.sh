#!/usr/bin/env bash
# Sets up the end-to-end tests (idempotent): code-server 4.100.3 in .e2e/ (not in the main
# package.json), its native modules rebuilt against this Node, Debian's ripgrep in place of the
# binary its postinstall would download, and the extension packaged as a .vsix with @vscode/vsce.
# Needs (Debian): libkrb5-dev (kerberos module), ripgrep, chromium, python3, make, g++.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CS_VERSION=4.100.3
E2E=$ROOT/.e2e
CS=$E2E/node_modules/code-server

need=()
for bin in rg chromium; do command -v "$bin" >/dev/null || need+=("$bin"); done
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
if [ ${#need[@]} -gt 0 ]; then
  pkgs=(libkrb5-dev ripgrep chromium)
  if [ "$(id -u)" = 0 ]; then
    echo "== e2e: apt-get install ${pkgs[*]}"
    flock /tmp/apt.lock apt-get install -y --no-install-recommends "${pkgs[@]}"
  else
    echo "e2e setup needs: ${pkgs[*]} (sudo apt-get install ${pkgs[*]})" >&2
    exit 1
  fi
fi
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" = 20 ] || { echo "code-server $CS_VERSION runs on Node 20; this is $(node --version)" >&2; exit 1; }

# Several installs may share this machine's npm cache: serialise them where flock exists.
npmq() { if command -v flock >/dev/null; then flock /tmp/npm.lock npm "$@"; else npm "$@"; fi; }

mkdir -p "$E2E"
[ -f "$E2E/package.json" ] || echo '{"name":"rft-studio-e2e","private":true}' > "$E2E/package.json"
if [ "$(node -p "try{require('$CS/package.json').version}catch{''}")" != "$CS_VERSION" ]; then
  echo "== e2e: npm install code-server@$CS_VERSION (scripts off)"
  (cd "$E2E" && npmq install --ignore-scripts --no-audit --no-fund "code-server@$CS_VERSION")
fi

export npm_config_nodedir=/usr  # Node's headers from /usr/include/node (no download)
# argon2 (code-server's password hashing) would download a prebuilt binary from GitHub: build it.
if ! ls "$E2E"/node_modules/argon2/lib/binding/*/argon2.node >/dev/null 2>&1; then
  echo "== e2e: build argon2"
  (cd "$E2E" && npmq rebuild argon2 --build-from-source)
fi
# What code-server's postinstall does, minus the ripgrep download.
if [ ! -f "$CS/lib/vscode/.rft-ready" ]; then
  echo "== e2e: VS Code dependencies and native modules"
  (cd "$CS/lib/vscode" && npmq install --omit=dev --ignore-scripts --no-audit --no-fund)
  (cd "$CS/lib/vscode" && npmq rebuild --foreground-scripts @parcel/watcher @vscode/deviceid @vscode/spdlog kerberos native-watchdog)
  # node-pty's own postinstall also runs `npx node-gyp` for a dev-only compile_commands.json: build it
  # with npm's node-gyp directly instead.
  gyp="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")/node_modules/node-gyp/bin/node-gyp.js"
  (cd "$CS/lib/vscode/node_modules/node-pty" && node "$gyp" rebuild >/dev/null)
  [ -f "$CS/lib/vscode/node_modules/node-pty/build/Release/pty.node" ] || { echo "node-pty did not build" >&2; exit 1; }
  mkdir -p "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin"
  ln -sf "$(command -v rg)" "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
  (cd "$CS/lib/vscode" && rm -rf node_modules.asar && ln -s node_modules node_modules.asar)
  (cd "$CS/lib/vscode/bin/remote-cli" && ln -sf code-linux.sh code-server)
  (cd "$CS/lib/vscode/bin/helpers" && ln -sf browser-linux.sh browser.sh)
  (cd "$CS/lib/vscode/extensions" && npmq install --omit=dev --ignore-scripts --no-audit --no-fund)
  touch "$CS/lib/vscode/.rft-ready"
fi

# The extension as users get it: a .vsix packaged by vsce from a fresh build.
echo "== e2e: build + package the extension"
node scripts/build.mjs
npx vsce package --allow-missing-repository --skip-license -o dist/rft-studio.vsix >/dev/null
echo "e2e ready: $CS/out/node/entry.js, dist/rft-studio.vsix"
