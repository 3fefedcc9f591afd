#!/usr/bin/env bash
# Install what schedwake needs on a fresh Debian machine, idempotently:
# the Debian packages (libtracecmd & co., trace-cmd for the cross-checks, clang with
# libFuzzer and the sanitizer runtimes for fuzz/) and a virtual environment .venv with
# schedwake installed in editable mode (its test extras include atheris, for fuzz/).
# A second run does nothing unless pyproject.toml, setup.py or the C sources changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES="build-essential pkg-config libzstd-dev zlib1g-dev libtracecmd-dev libtraceevent-dev libtracefs-dev trace-cmd linux-perf zstd chromium clang"
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
# libFuzzer and clang's sanitizer runtimes: a package clang only recommends
# (libclang-rt-N-dev, N = clang's major version), missing where recommends are off
if ! [ -f "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] && [ "$(uname -m)" = x86_64 ]; then
    rt="libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
    echo "bootstrap: installing Debian package $rt (libFuzzer for fuzz/)" >&2
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$rt" >/dev/null
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
# atheris (the Python fuzz harnesses) is a test extra, a wheel on x86-64 Linux; a .venv
# whose stamp predates it, or where it failed to install, gets it here (or a clear word)
if [ "$(uname -m)" = x86_64 ] && ! .venv/bin/python -c 'import atheris' 2>/dev/null; then
    echo "bootstrap: atheris did not install with the test extras: installing it" >&2
    CC=clang CXX=clang++ .venv/bin/python -m pip install -q 'atheris>=2.3' || \
        echo "bootstrap: WARNING: no atheris: the fuzz harnesses fuzz_load_*.py cannot run" >&2
fi
# the package's bytecode, compiled once: where PYTHONDONTWRITEBYTECODE is set, every
# interpreter would compile it again from source (the tests start hundreds of them)
.venv/bin/python -m compileall -q schedwake >/dev/null
