#!/usr/bin/env bash
# Install what schedwake needs on a fresh Debian machine, idempotently:
# the Debian packages (libtracecmd & co., trace-cmd for the cross-checks) and a
# virtual environment .venv with schedwake installed in editable mode.
# A second run does nothing unless pyproject.toml, setup.py or the C sources changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="build-essential pkg-config libzstd-dev zlib1g-dev libtracecmd-dev libtraceevent-dev libtracefs-dev trace-cmd linux-perf zstd chromium"
missing=()
for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
stamp=.venv/.schedwake-stamp
want=$(cat pyproject.toml setup.py schedwake/ingest/*.[ch] 2>/dev/null | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: setting up .venv" >&2
    [ -x .venv/bin/python ] || "$PY" -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -e '.[test]'
    echo "$want" > "$stamp"
fi
