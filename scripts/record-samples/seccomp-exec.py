#!/usr/bin/env python3
"""Run a command behind a seccomp filter: the known cause of the profile samples.

    seccomp-exec.py RULES -- COMMAND [ARGS...]

The filter is what container runtimes and systemd's SystemCallFilter= install: a
deny list on an argument, here RULES comparisons of every system call's first argument
against values no program passes (0xdead0000 and up), then "allow".  Because it reads
an argument, the kernel cannot cache its verdict per system call number (it does for
filters that only look at the number, since Linux 5.11), so every system call of
COMMAND and its children runs the filter first (``__secure_computing``,
``__seccomp_filter`` and the filter's JIT-compiled program in the kernel), and nothing
else changes: the functions of that path must be the ones a profile comparison stars.
"""

import ctypes
import os
import struct
import sys

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
ARG0_OFFSET = 16  # offsetof(struct seccomp_data, args[0]), its low half on x86-64


def filter_program(rules: int) -> bytes:
    """struct sock_filter[]: load args[0]; RULES x (arg == 0xdead0000+i ? deny : next);
    allow."""
    insns = [struct.pack("HBBI", BPF_LD_W_ABS, 0, 0, ARG0_OFFSET)]
    for i in range(rules):
        # jump over the next rule when it does not match; the last falls to "allow"
        insns.append(struct.pack("HBBI", BPF_JEQ_K, 0, 1, 0xDEAD0000 + i))
        insns.append(struct.pack("HBBI", BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | 1))
    insns.append(struct.pack("HBBI", BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return b"".join(insns)


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    rules = int(sys.argv[1])
    if not 1 <= rules <= 2000:
        sys.exit("RULES: 1 to 2000 (the kernel takes at most 4096 instructions)")
    prog = filter_program(rules)
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
    fbuf = ctypes.create_string_buffer(fprog)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        sys.exit(f"prctl(NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fbuf), 0, 0) != 0:
        sys.exit(f"prctl(SECCOMP): {os.strerror(ctypes.get_errno())}")
    os.execvp(sys.argv[3], sys.argv[3:])


if __name__ == "__main__":
    main()
