#!/usr/bin/env bash
# Installs what the extension's end-to-end suite needs on a fresh Debian machine (run as root):
# Debian chromium / libkrb5-dev / ripgrep, then code-server 4.100.3 from npm into a cache folder, and the
# wheels of the agent's locked dependencies for the install suite's loopback package index.
# Idempotent: every step is skipped when its result is already there.
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXT_DIR="$(dirname "$HERE")"
CACHE_DIR="${SIDECAR_E2E_CACHE:-$EXT_DIR/.e2e-cache}"
CS_PREFIX="$CACHE_DIR/code-server-$CODE_SERVER_VERSION"

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
[ -x /usr/bin/rg ] || need_apt+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
# code-server's native modules (kerberos, node-pty, …) build with node-gyp
{ command -v make && command -v g++ && command -v pkg-config; } >/dev/null 2>&1 || need_apt+=(build-essential pkg-config)
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "setup-e2e: apt-get install ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ ! -x "$CS_PREFIX/node_modules/.bin/code-server" ]; then
  echo "setup-e2e: installing code-server $CODE_SERVER_VERSION into $CS_PREFIX" >&2
  mkdir -p "$CS_PREFIX"
  # @vscode/ripgrep downloads a binary at install time; seed its cache with Debian's rg so no download happens.
  tmp="${TMPDIR:-/tmp}"
  seed_dir="$tmp/vscode-ripgrep-cache-1.15.11"
  seed="$seed_dir/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
  if [ ! -f "$seed" ]; then
    # the postinstall untars into bin/ and expects bin/rg, so rg sits at the archive root
    mkdir -p "$seed_dir" "$tmp/rg-seed"
    cp /usr/bin/rg "$tmp/rg-seed/rg"
    tar -C "$tmp/rg-seed" -czf "$seed" rg
  fi
  # npm 11 runs dependency install scripts only for packages listed in allowScripts.
  cat > "$CS_PREFIX/package.json" <<JSON
{
  "name": "sidecar-e2e-code-server",
  "private": true,
  "allowScripts": {
    "code-server": true,
    "@vscode/ripgrep": true,
    "argon2": true,
    "kerberos": true,
    "@parcel/watcher": true,
    "node-pty": true,
    "@vscode/spdlog": true,
    "@vscode/windows-registry": true,
    "native-watchdog": true,
    "@vscode/deviceid": true,
    "@vscode/policy-watcher": true,
    "@vscode/sqlite3": true,
    "@vscode/native-watchdog": true,
    "@vscode/windows-process-tree": true
  }
}
JSON
  (
    cd "$CS_PREFIX"
    npm_config_unsafe_perm=true npm_config_yes=true npm_config_update_notifier=false \
      npm install --no-save --no-audit --no-fund "code-server@$CODE_SERVER_VERSION" >&2
  )
fi
# The install suite's loopback package index (e2e/install.test.mjs): the wheels of the agent's locked
# dependencies (uv export --hashes from uv.lock), for the Python the extension would pick from PATH. Downloaded
# here, through pip's own configuration, once per uv.lock; the suite itself only serves them on 127.0.0.1.
REPO_DIR="$(dirname "$EXT_DIR")"
UV="$REPO_DIR/.tools/uv/bin/uv"
[ -x "$UV" ] || UV=uv
# The Python a fresh user's editor finds: the extension's own search (python3.14 … python3.11, python3; the
# first file of each name on the PATH) over the PATH of a login shell with an empty HOME, which is what the
# extension host gets (code-server resolves its environment from a login shell: /etc/profile's PATH, no pyenv
# shims). The install suite checks that the extension found this one.
LOGIN_PATH="$(env -i HOME="$(mktemp -d)" bash -lc 'printf %s "$PATH"' 2>/dev/null || true)"
PICKED=""
for n in python3.14 python3.13 python3.12 python3.11 python3; do
  c="$(PATH="${LOGIN_PATH:-$PATH}" command -v "$n" 2>/dev/null || true)"
  # (a pyenv shim exists for versions that are not active: it must also run)
  if [ -n "$c" ] && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then PICKED="$c"; break; fi
done
if [ -n "$PICKED" ]; then
  PYVER="$("$PICKED" -c 'import sys; print(".".join(map(str, sys.version_info[:3])))')"
  LOCK_SUM="$(sha256sum "$REPO_DIR/uv.lock" | cut -c1-16)"
  WHEELHOUSE="$CACHE_DIR/wheelhouse-py$PYVER-$LOCK_SUM"
  if [ ! -f "$WHEELHOUSE/.complete" ]; then
    echo "setup-e2e: downloading the agent's locked dependencies for Python $PYVER into $WHEELHOUSE" >&2
    rm -rf "$WHEELHOUSE" && mkdir -p "$WHEELHOUSE"
    (cd "$REPO_DIR" && "$UV" export --frozen --no-dev --hashes --no-emit-project --no-header --quiet -o "$WHEELHOUSE/requirements.txt")
    # pip evaluates the requirements' markers (python_full_version < '3.11.5' …) for the Python it runs on:
    # that Python's own pip when it has one.
    DL_PYTHON=python3
    "$PICKED" -m pip --version >/dev/null 2>&1 && DL_PYTHON="$PICKED"
    "$DL_PYTHON" -m pip download --quiet --disable-pip-version-check --only-binary :all: --python-version "$PYVER" \
      --require-hashes -r "$WHEELHOUSE/requirements.txt" -d "$WHEELHOUSE" >&2
    touch "$WHEELHOUSE/.complete"
  fi
  echo "$WHEELHOUSE" > "$CACHE_DIR/wheelhouse-current"
  # the interpreter the wheels are for: the install suite checks the extension found it
  "$PICKED" -c 'import sys; print(sys.executable)' > "$WHEELHOUSE/python"
fi
echo "$CS_PREFIX/node_modules/.bin/code-server"
