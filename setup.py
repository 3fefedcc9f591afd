"""Build the compiled readers; everything else is declared in pyproject.toml.

The trace.dat binding links libtracecmd + libtraceevent; pkg-config (Debian
packages libtracecmd-dev, libtraceevent-dev, libtracefs-dev) gives the flags.
"""
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*packages):
    try:
        out = subprocess.run(["pkg-config", "--cflags", "--libs", *packages],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit("schedwake needs libtracecmd-dev, libtraceevent-dev and libtracefs-dev "
                         f"(pkg-config failed: {exc})")
    flags = shlex.split(out)
    return {
        "include_dirs": [f[2:] for f in flags if f.startswith("-I")],
        "library_dirs": [f[2:] for f in flags if f.startswith("-L")],
        "libraries": [f[2:] for f in flags if f.startswith("-l")],
    }


COPTS = ["-O2", "-std=gnu11", "-Wall", "-Wno-unused-parameter"]

setup(ext_modules=[
    Extension("schedwake.ingest._tracedat", ["schedwake/ingest/_tracedat.c"],
              extra_compile_args=COPTS, **pkg_config("libtracecmd", "libtraceevent")),
    Extension("schedwake.ingest._textscan", ["schedwake/ingest/_textscan.c"], extra_compile_args=COPTS),
])
