"""Starting a Wine host: a process that dies before its first answer is started once more, and
only once. No Wine here: the host program is a small Python server speaking host_common.h's framing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from dml2onnx.backends import winhost, xvfb

# Answers each request with status 0 and the request's bytes, then "<name>: served N" on stderr.
SERVER = """
import struct, sys
n = 0
while True:
    head = sys.stdin.buffer.read(8)
    if len(head) < 8:
        break
    body = sys.stdin.buffer.read(struct.unpack("<Q", head)[0])
    if body == b"Q":
        break
    sys.stdout.buffer.write(struct.pack("<Q", len(body) + 1) + b"\\0" + body)
    sys.stdout.buffer.flush()
    n += 1
    print(f"host: served {n}", file=sys.stderr, flush=True)
"""


class Scripted(winhost.WineHost):
    """Runs the scripts in `plan` one per start, in order."""

    plan: ClassVar[list[str]] = []
    starts = 0

    def command(self, exe: Path, args: Sequence[str]) -> list[str]:
        Scripted.starts += 1
        return [sys.executable, "-c", self.plan.pop(0)]

    def started(self) -> None:
        status, body = self.request([b"V"], "INFO")
        assert (status, bytes(body)) == (0, b"V")


@pytest.fixture(autouse=True)
def no_display(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xvfb, "start", lambda: (subprocess.Popen(["sleep", "60"]), ":0"))
    Scripted.starts = 0


def test_a_host_that_exits_before_its_first_answer_is_started_again() -> None:
    Scripted.plan = ["import sys; sys.exit(1)", SERVER]
    h = Scripted(Path("host.exe"))
    try:
        assert Scripted.starts == 2 and h.alive()
        status, body = h.request([b"later"], "ECHO")
        assert (status, bytes(body)) == (0, b"later") and h.served == 2
    finally:
        h.close()
    assert not h.alive() and h.xvfb.poll() is not None


def test_a_second_early_exit_is_the_error_with_the_last_words() -> None:
    Scripted.plan = ["import sys; sys.exit(1)", "import sys; print('no device', file=sys.stderr); sys.exit(3)"]
    with pytest.raises(winhost.HostExited, match="exited with status 3: no device"):
        Scripted(Path("host.exe"))
    assert Scripted.starts == 2


def test_other_start_failures_are_not_repeated() -> None:
    Scripted.plan = [SERVER, SERVER]

    class Refusing(Scripted):
        def started(self) -> None:
            raise winhost.HostError("INFO", "no adapter")

    with pytest.raises(winhost.HostError, match="no adapter"):
        Refusing(Path("host.exe"))
    assert Scripted.starts == 1
