"""Reading JSON the way DxDispatch does: comments and trailing commas allowed, strict
value types (integers must be JSON integers, BOOLs JSON booleans, FLOATs numbers or
"inf"/"-inf"/"nan"), every error carrying its JSON path."""

from __future__ import annotations

import difflib
import json
import math
from typing import Any

import numpy as np

from dml2onnx.core.errors import JsonPath, ModelError


def _strip_comments_and_trailing_commas(text: str) -> str:
    """RapidJSON's kParseCommentsFlag | kParseTrailingCommasFlag, done as a text pass that
    leaves string literals alone. Replaced characters keep line/column numbers intact."""
    out: list[str] = []
    i, n = 0, len(text)
    pending_comma: int | None = None  # index in `out` of a comma that may be trailing
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            pending_comma = None
            i = j + 1
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        if c == ",":
            pending_comma = len(out)
        elif c in "]}" and pending_comma is not None:
            out[pending_comma] = " "
            pending_comma = None
        elif not c.isspace():
            pending_comma = None
        out.append(c)
        i += 1
    return "".join(out)


def _reject_constant(name: str) -> Any:
    raise ValueError(f'{name} is not valid JSON (write the string "{name.lower()}")')


def load_jsonc(text: str) -> Any:
    try:
        return json.loads(_strip_comments_and_trailing_commas(text), parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ModelError((), f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except (ValueError, RecursionError) as e:
        raise ModelError((), f"invalid JSON: {e}") from None


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def expect_object(value: Any, path: JsonPath, what: str = "an object") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ModelError(path, f"expected {what}, got {type_name(value)}")
    return value


def expect_array(value: Any, path: JsonPath) -> list[Any]:
    if not isinstance(value, list):
        raise ModelError(path, f"expected an array, got {type_name(value)}")
    return value


def expect_string(value: Any, path: JsonPath) -> str:
    if not isinstance(value, str):
        raise ModelError(path, f"expected a string, got {type_name(value)}")
    return value


def expect_bool(value: Any, path: JsonPath) -> bool:
    if not isinstance(value, bool):
        raise ModelError(path, f"expected true or false, got {type_name(value)}")
    return value


def expect_int(value: Any, path: JsonPath, lo: int, hi: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelError(path, f"expected {what} (a JSON integer), got {type_name(value)}")
    if not lo <= value <= hi:
        raise ModelError(path, f"{value} does not fit in {what} [{lo}, {hi}]")
    return value


def expect_uint32(value: Any, path: JsonPath) -> int:
    return expect_int(value, path, 0, 2**32 - 1, "UINT")


def expect_uint64(value: Any, path: JsonPath) -> int:
    return expect_int(value, path, 0, 2**64 - 1, "UINT64")


def expect_float(value: Any, path: JsonPath) -> float:
    """A JSON number, or "inf" / "-inf" / "nan" in any case (DxDispatch's float parser)."""
    if isinstance(value, str):
        special = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(value.lower())
        if special is None:
            raise ModelError(path, f'expected a number or "inf", "-inf", "nan", got {value!r}')
        return special
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(path, f"expected a number, got {type_name(value)}")
    return float(value)


def expect_enum(value: Any, path: JsonPath, enum: str, values: dict[str, int], prefix: str | None = None) -> str:
    """Full (`DML_AXIS_DIRECTION_INCREASING`) or short (`INCREASING`) form; returns short."""
    text = expect_string(value, path)
    prefix = (prefix or enum) + "_"
    short = text[len(prefix) :] if text.startswith(prefix) else text
    if short not in values:
        allowed = ", ".join(values)
        raise ModelError(path, f"'{text}' is not a {enum} value (one of {allowed})")
    return short


def reject_unknown_keys(obj: dict[str, Any], known: set[str] | list[str], path: JsonPath, what: str) -> None:
    for key in obj:
        if key not in known:
            listed = ", ".join(known)
            close = closest(key, known) if isinstance(key, str) else None
            hint = f"did you mean {close}? " if close else ""
            raise ModelError(path + (key,), f"unknown field of {what} ({hint}known: {listed})")


def closest(name: str, known: list[str] | set[str]) -> str | None:
    """The known name a misspelt one most likely meant (by spelling, else by case), or None."""
    names = list(known)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else next((k for k in names if k.lower() == name.lower()), None)


def unknown_name(what: str, name: str, known: list[str] | set[str]) -> str:
    """`unknown resource 'xww' (did you mean xw?)`."""
    hint = closest(name, known)
    return f"unknown {what} '{name}'" + (f" (did you mean {hint}?)" if hint else "")


def json_number(x: float) -> float | str:
    """JSON has no inf or NaN: those as the strings "inf", "-inf", "nan" (as DxDispatch writes them)."""
    return x if math.isfinite(x) else str(x)


def json_values(values: Any) -> list[Any]:
    """A numpy array's elements as JSON numbers: ints as ints, floats as floats (non-finite as strings)."""
    flat = np.asarray(values).ravel()
    if flat.dtype.kind == "f":
        return [json_number(float(v)) for v in flat.tolist()]
    if flat.dtype.kind == "b":
        return [int(v) for v in flat.tolist()]
    return flat.tolist()
