"""An X server for Wine: its DXGI needs a display, and the hosts run where there is none."""

from __future__ import annotations

import os
import select
import subprocess
import time

from dml2onnx.core.errors import RuntimeFailure


def start() -> tuple[subprocess.Popen[bytes], str]:
    """An Xvfb on a free display number (Xvfb picks it and writes it to a pipe)."""
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_fd), "-nolisten", "tcp", "-screen", "0", "640x480x24"],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    finally:
        os.close(write_fd)
    number = b""
    deadline = time.monotonic() + 30
    try:
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                proc.kill()
                raise RuntimeFailure("Xvfb did not report a display within 30 s")
            chunk = os.read(read_fd, 64)
            if not chunk:
                proc.wait()
                raise RuntimeFailure(f"Xvfb exited (status {proc.returncode}) before reporting a display")
            number += chunk
    finally:
        os.close(read_fd)
    return proc, ":" + number.decode().strip()
