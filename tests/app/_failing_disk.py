"""Run ``python -m xaytune`` with every ``os.write`` after the Nth failing with ENOSPC
(a disk that fills up mid-run): ``python _failing_disk.py N <overrides...>``."""

import errno
import os
import runpy
import sys

limit = int(sys.argv[1])
real_write = os.write
count = [0]


def write(fd: int, data: bytes) -> int:
    count[0] += 1
    if count[0] >= limit:
        raise OSError(errno.ENOSPC, "No space left on device")
    return real_write(fd, data)


os.write = write
sys.argv = ["xaytune", *sys.argv[2:]]
runpy.run_module("xaytune", run_name="__main__", alter_sys=True)
