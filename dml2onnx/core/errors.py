"""User-facing errors. A `ModelError` means the input is invalid (exit status 2);
a `RuntimeFailure` means valid input could not be executed (exit status 1)."""

from __future__ import annotations

import json
import re

PathPart = str | int
JsonPath = tuple[PathPart, ...]

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")


def one_line(text: str) -> str:
    """`text` with line breaks, other control characters and unpaired surrogates escaped: a
    message that quotes a model's strings stays one printable line, whatever they hold."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF else ascii(c)[1:-1] for c in text)


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (a library's error often carries a trace after it),
    or its type's name where it has none."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def format_path(path: JsonPath) -> str:
    """`("dispatchables", "argmax", "desc", "Axes", 1)` -> `dispatchables.argmax.desc.Axes[1]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(model)"


class Dml2OnnxError(Exception):
    """Base of the errors the command line reports as one line."""

    exit_status = 1


class ModelError(Dml2OnnxError):
    """The model (JSON, desc or file it names) breaks a rule. Exit status 2."""

    exit_status = 2

    def __init__(self, path: JsonPath, rule: str) -> None:
        self.path = tuple(path)
        self.rule = one_line(rule)
        # a rule about the whole file names the file itself: no "(model):" before it
        super().__init__(f"{format_path(self.path)}: {self.rule}" if self.path else self.rule)


class UsageError(Dml2OnnxError):
    """A command-line argument is invalid. Exit status 2."""

    exit_status = 2


class RuntimeFailure(Dml2OnnxError):
    """A valid model could not be executed (missing EP, ONNX Runtime error). Exit status 1."""

    exit_status = 1
