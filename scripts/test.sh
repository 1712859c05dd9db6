#!/usr/bin/env bash
# Install everything the test suite needs (a virtualenv with the package and test
# dependencies, Debian's Chromium for the browser tests) and run the whole suite.
# The committed frontend bundle is checked against a fresh build with npm: without npm that check
# is skipped with a loud warning, or fails when CI is set (CI=true), where it must run.
# Usage: bash scripts/test.sh [pytest args...]   (e.g. --durations=20 for the slowest tests)
# The suite runs in TB_COMPARE_TEST_WORKERS pytest processes (default 2, one per core here; each
# test file stays in one process: --dist loadfile, the longest files first: conftest's
# pytest_collection_modifyitems); TB_COMPARE_TEST_WORKERS=1 runs it in one.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${TB_COMPARE_VENV:-$ROOT/.venv}

need_sudo() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

pkgs=""
[ -x /usr/bin/chromium ] || pkgs="$pkgs chromium"                      # browser tests
command -v libreoffice >/dev/null || pkgs="$pkgs libreoffice-calc-nogui"  # workbook opens in LibreOffice
if [ -n "$pkgs" ]; then
  echo "== installing Debian packages:$pkgs"
  need_sudo apt-get update -qq
  need_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  python3 -m venv "$VENV"
fi
echo "== installing tb-compare-plugin and test dependencies"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e ".[test]"

if [ -f frontend/package.json ] && ! command -v npm >/dev/null; then
  if [ -n "${CI:-}" ] && [ "${CI}" != false ] && [ "${CI}" != 0 ]; then     # CI=true (GitHub, GitLab...)
    echo "FAIL: npm is not installed, so the committed bundle in tb_compare_plugin/static cannot be" >&2
    echo "      checked against a fresh build; CI must have Node.js and npm." >&2
    exit 1
  fi
  echo "!! ======================================================================================" >&2
  echo "!! npm not found: SKIPPING the check that tb_compare_plugin/static equals a fresh build." >&2
  echo "!! A stale bundle would go unnoticed; install Node.js + npm to run it (in CI, CI=true, this fails)." >&2
  echo "!! ======================================================================================" >&2
elif [ -f frontend/package.json ]; then
  echo "== rebuilding the frontend bundle and checking it equals the committed one"
  (cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
  if [ -n "$(git status --porcelain -- tb_compare_plugin/static 2>/dev/null)" ]; then
    echo "FAIL: the committed bundle in tb_compare_plugin/static differs from a fresh build:" >&2
    git status --porcelain -- tb_compare_plugin/static >&2
    exit 1
  fi
fi

echo "== running the test suite"
mkdir -p test-artifacts
# Byte-compile the package and the tests' helpers once: the suite starts hundreds of Python
# processes (the CLI, TensorBoard, parser fork servers) and, with PYTHONDONTWRITEBYTECODE set or a
# fresh clone, each of them would compile the package's sources again (~0.7 s of CPU for all of it).
"$VENV/bin/python" -m compileall -q tb_compare_plugin tests >/dev/null || true
WORKERS=${TB_COMPARE_TEST_WORKERS:-2}
if [ "$WORKERS" -gt 1 ] 2>/dev/null; then
  exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -n "$WORKERS" --dist loadfile --no-loadscope-reorder "$@" tests
fi
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@" tests
