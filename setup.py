"""Build the compiled readers; everything else is declared in pyproject.toml.

schedwake's trace.dat and perf.data reader (_tdread) needs libzstd and zlib (Debian libzstd-dev,
zlib1g-dev). The reference binding of libtracecmd + libtraceevent, run in a child
process only, gets its flags from pkg-config (libtracecmd-dev, libtraceevent-dev,
libtracefs-dev).
"""

import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*packages):
    try:
        out = subprocess.run(
            ["pkg-config", "--cflags", "--libs", *packages],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            "schedwake needs libtracecmd-dev, libtraceevent-dev and libtracefs-dev "
            f"(pkg-config failed: {exc})"
        ) from None
    flags = shlex.split(out)
    return {
        "include_dirs": [f[2:] for f in flags if f.startswith("-I")],
        "library_dirs": [f[2:] for f in flags if f.startswith("-L")],
        "libraries": [f[2:] for f in flags if f.startswith("-l")],
    }


COPTS = ["-O2", "-std=gnu11", "-Wall", "-Wno-unused-parameter", "-fvisibility=hidden"]

# schedwake's own decoder of trace.dat and perf.data, one job a file
# (schedwake/ingest/_td_internal.h lists them)
TDCORE_SOURCES = [
    "schedwake/ingest/_td_common.c",
    "schedwake/ingest/_td_format.c",
    "schedwake/ingest/_td_symbols.c",
    "schedwake/ingest/_td_tracing.c",
    "schedwake/ingest/_td_tracedat.c",
    "schedwake/ingest/_td_perfdata.c",
    "schedwake/ingest/_td_dispatch.c",
    "schedwake/ingest/_td_container.c",
    "schedwake/ingest/_td_records.c",
    "schedwake/ingest/_td_pool.c",
    "schedwake/ingest/_td_merge.c",
]

# the model's compiled passes, one job a file (schedwake/model/_passes_list.h names them)
PASS_SOURCES = [
    "schedwake/model/_pass_order.c",
    "schedwake/model/_pass_lives.c",
    "schedwake/model/_pass_asof.c",
    "schedwake/model/_pass_groups.c",
    "schedwake/model/_pass_task_states.c",
    "schedwake/model/_pass_waits.c",
    "schedwake/model/_pass_completeness.c",
    "schedwake/model/_pass_wakeups.c",
    "schedwake/model/_pass_detect.c",
]

setup(
    ext_modules=[
        # libtracecmd binding: the conformance oracle and opt-in reader, run only in a
        # child process (schedwake/ingest/libtracecmd.py)
        Extension(
            "schedwake.ingest._libtracecmd",
            ["schedwake/ingest/_libtracecmd.c"],
            depends=[
                "schedwake/ingest/_columns.h",
                "schedwake/ingest/_pybuf.h",
                "schedwake/ingest/_utf8.h",
            ],
            extra_compile_args=COPTS,
            **pkg_config("libtracecmd", "libtraceevent"),
        ),
        # schedwake's own trace.dat reader: plain C over libzstd and zlib (Debian
        # libzstd-dev, zlib1g-dev); threads decode CPUs in parallel
        Extension(
            "schedwake.ingest._tdread",
            ["schedwake/ingest/_tdread.c", *TDCORE_SOURCES],
            depends=[
                "schedwake/ingest/_tdcore.h",
                "schedwake/ingest/_td_internal.h",
                "schedwake/ingest/_columns.h",
                "schedwake/ingest/_pybuf.h",
                "schedwake/ingest/_utf8.h",
            ],
            extra_compile_args=COPTS,
            libraries=["zstd", "z", "pthread"],
        ),
        Extension(
            "schedwake.ingest._textscan",
            ["schedwake/ingest/_textscan.c"],
            depends=["schedwake/ingest/_utf8.h"],
            extra_compile_args=COPTS,
        ),
        # the model's per-event passes (schedwake/model/_passes.h): arrays in, arrays out
        Extension(
            "schedwake.model._passes",
            ["schedwake/model/_passes.c", *PASS_SOURCES],
            depends=["schedwake/model/_passes.h", "schedwake/model/_passes_list.h"],
            extra_compile_args=COPTS,
        ),
    ]
)
