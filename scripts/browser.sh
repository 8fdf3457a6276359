#!/usr/bin/env bash
# The browser tests (pytest -m browser) drive Debian's Chromium through Playwright; install it when missing.
# Never `playwright install`: the browser comes from Debian's packages only.
set -u
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
  echo "Chromium for the browser tests: $CHROMIUM"
  exit 0
fi
echo "$CHROMIUM is missing: installing Debian's chromium for the browser tests"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo -n"
if $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null; then
  [ -x "$CHROMIUM" ] && { echo "installed $($CHROMIUM --version 2>/dev/null | head -n1)"; exit 0; }
fi
echo "Could not install Debian's chromium (apt-get install chromium failed or needs root)."
echo "The browser tests need it at $CHROMIUM; install it, or run the rest with: .venv/bin/pytest -m 'not browser'"
exit 1
