"""The bitwise operators, DML_OPERATOR_ELEMENT_WISE_BIT_*: one row each in ROWS, on the element
rows and shared rules of element_wise.py.

The pages: "the bitwise operation is applied to tensor data in its native encoding", so a signed
integer is its two's complement bits (measured: AND/OR/XOR/NOT/COUNT of every integer type match
numpy's on the same bits). Where the pages are silent, DirectML's API showed:
- BIT_SHIFT_LEFT/RIGHT (unsigned types only; CreateOperator refuses INT32): logical shifts by the
  amount reduced as HLSL does in 32 bits: UINT8/16/32 shift the value zero-extended to 32 bits by
  `b & 31` and keep the low bits (UINT8 << 9 is 0, UINT8 << 33 shifts by 1, UINT32 << 32 is the
  value itself); UINT64 takes the low 32 bits s of b and shifts by s when s < 32, else by
  32 + (s & 31) (a shift by 64 is a shift by 32, by 2**32 + 5 a shift by 5);
- BIT_COUNT writes UINT8 or UINT32 (the page's table; CreateOperator refuses UINT16 and INT32).
FLOAT16/32 tensors (the FL 4.1 tables) are bit patterns to DirectML (measured: AND/OR/XOR/NOT/
COUNT of their encodings, inf and NaN included). ONNX has no BitCast before opset 26, so the
encoding is computed exactly from the value (sign with -0, exponent by halving/doubling steps,
mantissa, subnormals, inf) and back; a NaN input reads as the canonical quiet NaN, its sign and
payload being invisible to ONNX. FLOAT64 is refused (exit 2): the DirectML EP has no FLOAT64
arithmetic to read a double's encoding with.

The CUDA EP has neither BitShift nor Bitwise* (ONNX Runtime's OperatorKernels.md), and the
Bitwise* ops need opset 18, so every lowering is exact integer arithmetic that every EP and opset
13-21 has: an integer is split into its bytes (Div/Sub by powers of 256, a signed value first made
non-negative by taking off its sign bit), AND/OR/XOR look each byte pair up in a 256x256 table
(Gather), BIT_COUNT sums a 256-entry popcount table, NOT is -1 - x (signed) or MAX - x (unsigned),
and shifts are Div (right) and Mul after clearing the bits shifted out (left) by powers of two from
a table indexed by the reduced amount. INT64 is split and summed as UINT64 (Cast keeps the bits):
the DirectML EP (under Wine) compares INT64 by low halves as signed, so `x < 0` fails there for
values with bit 31 set (as its INT64 order in tests/dml_findings.py). UINT8/16 and INT8/16 are
computed in INT32 (the EPs lack their arithmetic before opset 14); Where only selects INT32, INT64
and FLOAT32 values (the CUDA EP's Where has no UINT32/UINT64/8/16-bit kernels).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.element_wise import Row, RowTable, tensor_names
from dml2onnx.ops.family import Family

CANDIDATES = ("elementwise",)  # one lowering (choices.py)
BROADCASTS = True  # lower() takes inputs of size 1 where a buffer input repeats (lowering.py)
# Data types the pages list that dml2onnx refuses (BitsFamily.validate says why); `dml2onnx ops` and
# its examples leave them out.
NOT_LOWERED_TYPES = ("FLOAT64",)
I32, I64, F32 = dtypes.INT32, dtypes.INT64, dtypes.FLOAT32

_BYTE = np.arange(256, dtype=np.uint16)
_TABLES = {
    "and": np.bitwise_and.outer(_BYTE, _BYTE).astype(np.uint8).ravel(),
    "or": np.bitwise_or.outer(_BYTE, _BYTE).astype(np.uint8).ravel(),
    "xor": np.bitwise_xor.outer(_BYTE, _BYTE).astype(np.uint8).ravel(),
}
_POPCOUNT = np.array([bin(v).count("1") for v in range(256)], np.uint8)


def _floor_div(b: GraphBuilder, x: str, d: int, dtype: dtypes.DataType, step: str) -> str:
    return b.node("Div", [x, b.scalar(d, dtype, f"{step}_divisor")], step, f"x // {d} (x >= 0)")


def _split(b: GraphBuilder, x: str, c: dtypes.DataType, width: int, tag: str) -> list[str]:
    """The bytes of a non-negative value x of type c, least significant first, as INT32 0..255."""
    out = []
    for k in range(width):
        t = x if k == 0 else _floor_div(b, x, 256**k, c, f"{tag}_shr{8 * k}")
        if k < width - 1:
            hi = b.node(
                "Mul",
                [_floor_div(b, t, 256, c, f"{tag}_hi{k}"), b.scalar(256, c, f"{tag}_256_{k}")],
                f"{tag}_cut{k}",
                "t // 256 * 256",
            )
            t = b.node("Sub", [t, hi], f"{tag}_byte{k}", f"byte {k}: t mod 256")
        out.append(t if c == I32 else b.cast(t, I32, f"{tag}_byte{k}_int32", "the byte in INT32"))
    return out


def _to_bytes(b: GraphBuilder, x: str, dtype: dtypes.DataType, tag: str) -> list[str]:
    """The value's bytes, least significant first, as INT32 0..255 (two's complement for signed,
    the IEEE encoding for floats)."""
    if dtype.is_float:
        return _split(b, _float_bits(b, x, dtype, tag), I64, dtype.size, tag)
    c, width = common.compute_type(dtype), dtype.size
    if dtype == dtypes.INT64:  # the same bits as UINT64: the DirectML EP's INT64 Less is not
        return _split(b, b.cast(x, dtypes.UINT64, f"{tag}_as_uint64", "the same bits as UINT64"), dtypes.UINT64, width, tag)
    if c != dtype:
        x = b.cast(x, c, f"{tag}_in_int32", "in INT32")
    if not dtype.is_signed:
        return _split(b, x, c, width, tag)
    neg = b.node("Less", [x, b.scalar(0, c, f"{tag}_zero")], f"{tag}_negative", "x < 0: the sign bit")
    if width <= 2:  # x + 2**bits for negatives: the unsigned value, in INT32
        lift = b.scalar(1 << (8 * width), c, f"{tag}_modulus")
        shift = b.node("Where", [neg, lift, b.scalar(0, c, f"{tag}_no_lift")], f"{tag}_lift", "2**bits where negative")
        return _split(b, b.node("Add", [x, shift], f"{tag}_unsigned", "the unsigned value of the same bits"), c, width, tag)
    # x - MIN for negatives: the bits below the sign bit, never overflowing; the sign bit then
    # goes back into the top byte
    low = b.scalar(int(np.iinfo(dtype.numpy).min), c, f"{tag}_min")
    drop = b.node("Where", [neg, low, b.scalar(0, c, f"{tag}_keep")], f"{tag}_sign", "MIN where negative")
    parts = _split(b, b.node("Sub", [x, drop], f"{tag}_below_sign", "the bits below the sign bit"), c, width, tag)
    top_bit = b.node(
        "Where", [neg, b.scalar(128, I32, f"{tag}_128"), b.scalar(0, I32, f"{tag}_0")], f"{tag}_top_bit", "128 where negative"
    )
    parts[-1] = b.node("Add", [parts[-1], top_bit], f"{tag}_top_byte", "the top byte with the sign bit")
    return parts


def _from_bytes(b: GraphBuilder, parts: list[str], dtype: dtypes.DataType) -> str:
    """The value of the type with these bytes (INT32 0..255, least significant first)."""
    if dtype == dtypes.INT64:  # summed as UINT64, then the same bits as INT64
        return b.cast(_from_bytes(b, parts, dtypes.UINT64), dtype, "as_int64", "the same bits as INT64")
    c, width = (I64 if dtype.is_float else common.compute_type(dtype)), len(parts)
    acc = None
    for k, r in enumerate(parts):
        if k == width - 1 and dtype.is_signed and not dtype.is_float:  # negative weight at 128..255
            big = b.node("Less", [b.scalar(127, I32, "top_127"), r], "top_negative", "top byte >= 128")
            back = b.node(
                "Where", [big, b.scalar(256, I32, "top_256"), b.scalar(0, I32, "top_0")], "top_wrap", "256 where >= 128"
            )
            r = b.node("Sub", [r, back], "top_signed", "the top byte as signed")
        if c != I32:
            r = b.cast(r, c, f"byte{k}_wide", f"byte {k} as {c}")
        if k:
            r = b.node("Mul", [r, b.scalar(256**k, c, f"weight{k}")], f"weighted{k}", f"byte {k} * 256**{k}")
        acc = r if acc is None else b.node("Add", [acc, r], f"sum{k}", "the bytes summed")
    assert acc is not None
    if dtype.is_float:
        return _bits_float(b, acc, dtype)
    return acc if c == dtype else b.cast(acc, dtype, "narrow", f"as {dtype} (in range)")


# -- FLOAT16/FLOAT32 encodings by exact arithmetic (ONNX has no BitCast before opset 26) -----------


def _format(dtype: dtypes.DataType) -> tuple[int, int, int]:
    """(exponent bits, mantissa bits, bias)."""
    return (5, 10, 15) if dtype == dtypes.FLOAT16 else (8, 23, 127)


def _float_bits(b: GraphBuilder, x: str, dtype: dtypes.DataType, tag: str) -> str:
    """x's encoding as an INT64 0..2**bits-1. Exact for every value but NaN, which reads as the
    canonical quiet NaN (0x7FC00000, 0x7E00): ONNX cannot see a NaN's sign or payload."""
    ebits, mbits, bias = _format(dtype)
    if dtype != F32:
        x = b.cast(x, F32, f"{tag}_f32", "FLOAT16 in FLOAT32 (exact)")
    nan = b.node("Not", [b.node("Equal", [x, x], f"{tag}_ordered", "x == x")], f"{tag}_nan", "NaN")
    a = b.node("Abs", [x], f"{tag}_abs", "|x|")
    inf = b.node("Less", [b.scalar(float(np.finfo(dtype.numpy).max), F32, f"{tag}_max"), a], f"{tag}_inf", "|x| = inf")
    zero = b.scalar(0.0, F32, f"{tag}_fzero")
    recip = b.node("Div", [b.scalar(1.0, F32, f"{tag}_one"), x], f"{tag}_recip", "1 / x: -inf for -0")
    neg = b.node(
        "Or",
        [b.node("Less", [x, zero], f"{tag}_below", "x < 0"), b.node("Less", [recip, zero], f"{tag}_neg_recip", "1/x < 0")],
        f"{tag}_sign",
        "the sign bit (-0 included)",
    )
    m = b.node(
        "Where",
        [b.node("Or", [nan, inf], f"{tag}_special", "inf or NaN"), b.scalar(1.0, F32, f"{tag}_f1"), a],
        f"{tag}_finite",
        "|x|, 1 for inf/NaN",
    )
    e = b.scalar(0, I32, f"{tag}_e0")
    up = (64, 32, 16, 8, 4, 2, 1) if dtype == F32 else (8, 4, 2, 1)
    for k in up:  # m in [1, 2) or below 1, e its binary exponent so far
        small = b.node("Less", [m, b.scalar(2.0**k, F32, f"{tag}_p{k}")], f"{tag}_lt{k}", f"m < 2**{k}")
        m = b.node(
            "Where",
            [small, m, b.node("Mul", [m, b.scalar(2.0**-k, F32, f"{tag}_q{k}")], f"{tag}_down{k}", f"m / 2**{k}")],
            f"{tag}_m_up{k}",
            f"m scaled down by 2**{k} where large",
        )
        e = b.node(
            "Add",
            [
                e,
                b.node(
                    "Where",
                    [small, b.scalar(0, I32, f"{tag}_z{k}"), b.scalar(k, I32, f"{tag}_k{k}")],
                    f"{tag}_de{k}",
                    f"{k} where scaled down, else 0",
                ),
            ],
            f"{tag}_e_up{k}",
            "the exponent after scaling down",
        )
    for i, k in enumerate(up):  # as many steps: a subnormal ends with exponent field <= 0
        small = b.node("Less", [m, b.scalar(2.0 ** (1 - k), F32, f"{tag}_r{i}")], f"{tag}_lo{i}", f"m * 2**{k} < 2")
        m = b.node(
            "Where",
            [small, b.node("Mul", [m, b.scalar(2.0**k, F32, f"{tag}_s{i}")], f"{tag}_upm{i}", f"m * 2**{k}"), m],
            f"{tag}_m_dn{i}",
            f"m scaled up by 2**{k} where small",
        )
        e = b.node(
            "Sub",
            [
                e,
                b.node(
                    "Where",
                    [small, b.scalar(k, I32, f"{tag}_t{i}"), b.scalar(0, I32, f"{tag}_u{i}")],
                    f"{tag}_dd{i}",
                    f"{k} where scaled up, else 0",
                ),
            ],
            f"{tag}_e_dn{i}",
            "the exponent after scaling up",
        )
    biased = b.node("Add", [e, b.scalar(bias, I32, f"{tag}_bias")], f"{tag}_biased", "the exponent field of a normal number")
    normal = b.node("Less", [b.scalar(0, I32, f"{tag}_iz"), biased], f"{tag}_normal", "exponent field >= 1")
    frac = b.node(
        "Mul",
        [
            b.node("Sub", [m, b.scalar(1.0, F32, f"{tag}_f1b")], f"{tag}_frac", "m - 1"),
            b.scalar(2.0**mbits, F32, f"{tag}_mscale"),
        ],
        f"{tag}_mant_n",
        "(m - 1) * 2**mbits: a normal number's mantissa field",
    )
    tiny = b.node("Where", [normal, zero, a], f"{tag}_tiny", "|x| where subnormal")
    for i, k in enumerate((75, bias - 1 + mbits - 75) if dtype == F32 else (bias - 1 + mbits,)):
        tiny = b.node("Mul", [tiny, b.scalar(2.0**k, F32, f"{tag}_ts{i}")], f"{tag}_tiny{i}", "the subnormal's mantissa field")
    mant = b.cast(
        b.node("Where", [normal, frac, tiny], f"{tag}_mant_f", "the mantissa field as a float"),
        I64,
        f"{tag}_mant",
        "the mantissa field",
    )
    field = b.cast(
        b.node(
            "Where", [normal, biased, b.scalar(0, I32, f"{tag}_e_sub")], f"{tag}_field32", "the biased exponent, 0 for subnormals"
        ),
        I64,
        f"{tag}_field",
        "the exponent field",
    )
    top = (1 << ebits) - 1
    field = b.node(
        "Where",
        [b.node("Or", [nan, inf], f"{tag}_special2", "inf or NaN"), b.scalar(top, I64, f"{tag}_etop"), field],
        f"{tag}_field_s",
        "all ones for inf/NaN",
    )
    mant = b.node("Where", [inf, b.scalar(0, I64, f"{tag}_m_inf"), mant], f"{tag}_mant_inf", "mantissa 0 for inf")
    mant = b.node("Where", [nan, b.scalar(1 << (mbits - 1), I64, f"{tag}_m_nan"), mant], f"{tag}_mant_s", "the quiet NaN")
    sign = b.node(
        "Where",
        [
            b.node("And", [neg, b.node("Not", [nan], f"{tag}_num", "not NaN")], f"{tag}_sgn", "the sign bit of a number"),
            b.scalar(1 << (8 * dtype.size - 1), I64, f"{tag}_sbit"),
            b.scalar(0, I64, f"{tag}_nos"),
        ],
        f"{tag}_sign_v",
        "the sign bit in place",
    )
    shifted = b.node("Mul", [field, b.scalar(1 << mbits, I64, f"{tag}_fscale")], f"{tag}_field_v", "the exponent field in place")
    return b.node(
        "Add",
        [b.node("Add", [sign, shifted], f"{tag}_se", "sign and exponent fields"), mant],
        f"{tag}_bits",
        f"the {dtype} encoding",
    )


def _bits_float(b: GraphBuilder, v: str, dtype: dtypes.DataType) -> str:
    """The FLOAT16/FLOAT32 value with encoding v (INT64 0..2**bits-1)."""
    ebits, mbits, bias = _format(dtype)
    mant = b.node(
        "Sub",
        [
            v,
            b.node(
                "Mul",
                [_floor_div(b, v, 1 << mbits, I64, "v_hi"), b.scalar(1 << mbits, I64, "k_m")],
                "v_cut",
                "the bits above the mantissa, in place",
            ),
        ],
        "mant",
        "the mantissa field",
    )
    rest = _floor_div(b, v, 1 << mbits, I64, "v_rest")
    field = b.node(
        "Sub",
        [
            rest,
            b.node(
                "Mul",
                [_floor_div(b, rest, 1 << ebits, I64, "v_sign"), b.scalar(1 << ebits, I64, "k_e")],
                "e_cut",
                "the bits above the exponent, in place",
            ),
        ],
        "field",
        "the exponent field",
    )
    sign = _floor_div(b, rest, 1 << ebits, I64, "sign")
    field32, mant32 = (
        b.cast(field, I32, "field_i32", "the exponent field in INT32"),
        b.cast(mant, I32, "mant_i32", "the mantissa field in INT32"),
    )
    top = (1 << ebits) - 1
    powers = np.array([2.0 ** (max(e, 1) - bias) if e < top else 1.0 for e in range(top + 1)], np.float32)
    scale = b.node("Gather", [b.const(powers, "exponent_table"), field32], "scale", "2**(field - bias)", axis=0)
    sub = b.node("Equal", [field32, b.scalar(0, I32, "e_zero")], "subnormal", "exponent field 0")
    lead = b.node("Where", [sub, b.scalar(0.0, F32, "lead0"), b.scalar(1.0, F32, "lead1")], "lead", "the implicit leading 1")
    frac = b.node(
        "Mul",
        [b.cast(mant32, F32, "mant_f32", "the mantissa field as a float"), b.scalar(2.0**-mbits, F32, "m_unit")],
        "frac",
        "mantissa / 2**mbits",
    )
    y = b.node(
        "Mul",
        [b.node("Add", [lead, frac], "significand", "1 + mantissa / 2**mbits (0 + for subnormals)"), scale],
        "magnitude",
        "significand * 2**exponent",
    )
    inf_or_nan = b.node(
        "Where",
        [
            b.node("Equal", [mant32, b.scalar(0, I32, "m_zero")], "m_is0", "mantissa field 0"),
            b.scalar(np.inf, F32, "inf"),
            b.scalar(np.nan, F32, "nan"),
        ],
        "inf_nan",
        "inf or NaN by the mantissa field",
    )
    y = b.node(
        "Where",
        [
            b.node("Equal", [field32, b.scalar(top, I32, "e_top")], "special", "exponent field all ones: inf or NaN"),
            inf_or_nan,
            y,
        ],
        "value",
        "the magnitude, inf or NaN",
    )
    # times -1 or 1: ONNX Runtime's CPU Where turns a selected -0.0 into +0.0 (measured)
    negative = b.node("Equal", [sign, b.scalar(1, I64, "s_one")], "negative", "the sign bit")
    y = b.node(
        "Mul",
        [
            y,
            b.node(
                "Where",
                [negative, b.scalar(-1.0, F32, "minus1"), b.scalar(1.0, F32, "plus1")],
                "sign_f",
                "-1 or 1 from the sign bit",
            ),
        ],
        "signed",
        "the value with its sign",
    )
    return y if dtype == F32 else b.cast(y, dtype, "to_float16", "FLOAT16 (exact)")


def _bytewise(op: str) -> Any:
    def lower(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
        dtype: dtypes.DataType = p["__dtype__"]
        a, c = _to_bytes(b, xs[0], dtype, "a"), _to_bytes(b, xs[1], dtype, "b")
        table, k256 = b.const(_TABLES[op], f"{op}_table"), b.scalar(256, I32, "k256")
        parts = []
        for k, (x, y) in enumerate(zip(a, c, strict=True)):
            idx = b.node("Add", [b.node("Mul", [x, k256], f"row{k}", "a byte * 256"), y], f"index{k}", "a * 256 + b")
            got = b.node("Gather", [table, idx], f"{op}{k}", f"byte {k}: a {op} b (table)", axis=0)
            parts.append(b.cast(got, I32, f"{op}{k}_int32", "in INT32"))
        return _from_bytes(b, parts, dtype)

    return lower


def _bit_not(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]
    if dtype.is_float:
        ones = b.scalar((1 << (8 * dtype.size)) - 1, I64, "all_ones")
        return _bits_float(b, b.node("Sub", [ones, _float_bits(b, xs[0], dtype, "x")], "not", "~bits = MAX - bits"), dtype)
    c = common.compute_type(dtype)
    x = xs[0] if c == dtype else b.cast(xs[0], c, "in_int32", "in INT32")
    top = -1 if dtype.is_signed else int(np.iinfo(dtype.numpy).max)
    y = b.node("Sub", [b.scalar(top, c, "all_ones"), x], "not", "~x = -1 - x (signed), MAX - x (unsigned)")
    return y if c == dtype else b.cast(y, dtype, "narrow", f"as {dtype} (in range)")


def _bit_count(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype, out = p["__dtype__"], p["__out__"]
    table, total = b.const(_POPCOUNT, "popcount_table"), None
    for k, byte in enumerate(_to_bytes(b, xs[0], dtype, "x")):
        n = b.cast(b.node("Gather", [table, byte], f"popcount{k}", f"bits set in byte {k}", axis=0), I32, f"count{k}", "in INT32")
        total = n if total is None else b.node("Add", [total, n], f"total{k}", "the counts summed")
    assert total is not None
    return b.cast(total, out, "count", f"the count as {out}")


def _shift_amount(b: GraphBuilder, s: str, dtype: dtypes.DataType) -> str:
    """The amount DirectML shifts by, as INT64 (module docstring)."""
    c = common.compute_type(dtype)
    if c != dtype:
        s = b.cast(s, c, "amount_int32", "in INT32")
    mod32 = b.node(
        "Sub",
        [s, b.node("Mul", [_floor_div(b, s, 32, c, "amount_div32"), b.scalar(32, c, "k32")], "amount_cut", "(s // 32) * 32")],
        "amount_mod32",
        "s & 31",
    )
    if dtype.size < 8:
        return b.cast(mod32, I64, "amount", "s & 31, as DirectML's 32-bit shifts")
    low = b.node(
        "Sub",
        [
            s,
            b.node(
                "Mul",
                [_floor_div(b, s, 1 << 32, c, "amount_hi"), b.scalar(1 << 32, c, "k2_32")],
                "amount_hi_cut",
                "(s // 2**32) * 2**32",
            ),
        ],
        "amount_lo32",
        "the low 32 bits of s",
    )
    low, mod32 = b.cast(low, I64, "amount_lo32_i64", "in INT64"), b.cast(mod32, I64, "amount_mod32_i64", "in INT64")
    small = b.node("Less", [low, b.scalar(32, I64, "k32_i64")], "amount_small", "low 32 bits < 32")
    wrapped = b.node("Add", [mod32, b.scalar(32, I64, "k32_again")], "amount_wrapped", "32 + (s & 31)")
    return b.node("Where", [small, low, wrapped], "amount", "s (< 32) or 32 + (s & 31), as DirectML's UINT64 shifts")


def _powers(b: GraphBuilder, values: list[int], c: dtypes.DataType, step: str, amount: str) -> str:
    return b.node(
        "Gather", [b.const(np.array(values, c.numpy), f"{step}_table"), amount], step, "a power of two per amount", axis=0
    )


def _shift_left(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]
    c, bits = common.compute_type(dtype), dtype.size * 8
    n = 64 if bits == 64 else 32
    amount = _shift_amount(b, xs[1], dtype)
    a = xs[0] if c == dtype else b.cast(xs[0], c, "value_int32", "in INT32")
    # keep the bits that stay (a mod 2**(bits - s), via 2**(bits - 1 - s) and 2), then a * 2**s
    keep = _powers(b, [1 << (bits - 1 - s) if s < bits else 1 for s in range(n)], c, "keep", amount)
    two = b.scalar(2, c, "k2")
    q = b.node("Div", [b.node("Div", [a, keep], "dropped_half", "a // 2**(bits - s - 1)"), two], "dropped", "a // 2**(bits - s)")
    cut = b.node(
        "Mul",
        [b.node("Mul", [q, two], "dropped_twice", "(a // 2**(bits - s)) * 2"), keep],
        "dropped_bits",
        "the bits shifted out",
    )
    low = b.node("Sub", [a, cut], "kept", "a mod 2**(bits - s)")
    y = b.node("Mul", [low, _powers(b, [1 << s if s < bits else 0 for s in range(n)], c, "scale", amount)], "shifted", "a << s")
    return y if c == dtype else b.cast(y, dtype, "narrow", f"as {dtype} (in range)")


def _shift_right(b: GraphBuilder, xs: list[str], p: dict[str, Any]) -> str:
    dtype: dtypes.DataType = p["__dtype__"]
    c, bits = common.compute_type(dtype), dtype.size * 8
    n = 64 if bits == 64 else 32
    amount = _shift_amount(b, xs[1], dtype)
    a = xs[0] if c == dtype else b.cast(xs[0], c, "value_int32", "in INT32")
    power = _powers(b, [1 << min(s, bits) for s in range(n)], c, "divisor", amount)
    y = b.node("Div", [a, power], "shifted", "a >> s = a // 2**s")
    return y if c == dtype else b.cast(y, dtype, "narrow", f"as {dtype} (in range)")


# -- references: exact Python integers on the arrays' bits ----------------------------------------


def _bits_view(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind == "f" else x


def _binary_reference(f: Any) -> Any:
    return lambda xs, p: f(_bits_view(xs[0]), _bits_view(xs[1])).view(xs[0].dtype)


def _not_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    return np.invert(_bits_view(xs[0])).view(xs[0].dtype)


def _count_reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
    x = np.ascontiguousarray(xs[0])
    per_byte = _POPCOUNT[x.view(np.uint8).reshape(*x.shape, x.dtype.itemsize)]
    return per_byte.astype(np.uint32).sum(axis=-1)


def _shift_reference(left: bool) -> Any:
    def reference(xs: list[np.ndarray], p: dict[str, Any]) -> np.ndarray:
        a, s = xs
        bits = a.dtype.itemsize * 8
        out = []
        for x, n in zip(a.ravel().tolist(), s.ravel().tolist(), strict=True):
            if bits == 64:
                low = n & 0xFFFFFFFF
                e = low if low < 32 else 32 + (low & 31)
            else:
                e = n & 31
            out.append(((x << e) & ((1 << bits) - 1)) if left else x >> e)
        return np.array(out, dtype=np.uint64).astype(a.dtype).reshape(a.shape)

    return reference


def _row(formula: str, lower: Any, reference: Any) -> Row:
    return Row(formula, lower, reference, integer=lower, int_reference=reference)


ROWS: dict[str, Row] = {
    "ELEMENT_WISE_BIT_AND": _row("f(a, b) = a & b", _bytewise("and"), _binary_reference(np.bitwise_and)),
    "ELEMENT_WISE_BIT_OR": _row("f(a, b) = a | b", _bytewise("or"), _binary_reference(np.bitwise_or)),
    "ELEMENT_WISE_BIT_XOR": _row("f(a, b) = a ^ b", _bytewise("xor"), _binary_reference(np.bitwise_xor)),
    "ELEMENT_WISE_BIT_NOT": _row("f(x) = ~x", _bit_not, _not_reference),
    "ELEMENT_WISE_BIT_COUNT": _row("f(x) = popcount(x)", _bit_count, _count_reference),
    "ELEMENT_WISE_BIT_SHIFT_LEFT": _row("f(a, b) = a << b", _shift_left, _shift_reference(True)),
    "ELEMENT_WISE_BIT_SHIFT_RIGHT": _row("f(a, b) = a >> b", _shift_right, _shift_reference(False)),
}


class BitsFamily(RowTable):
    """element_wise's RowTable with BIT_COUNT's output type passed to its row, every type lowered
    by the integer rows (floats by their encodings), and FLOAT64 refused: the DirectML EP has no
    FLOAT64 arithmetic or comparisons to read a double's encoding with."""

    def validate(self, desc: OperatorDesc) -> None:
        RowTable(self.rows, same_output_type=desc.schema.name != "ELEMENT_WISE_BIT_COUNT").validate(desc)
        name = tensor_names(desc)[0]
        if desc.tensor(name).data_type.name in NOT_LOWERED_TYPES:
            raise ModelError(
                desc.at(name, "DataType"),
                f"{desc.schema.name} on FLOAT64 works on the values' encodings, which dml2onnx reads with "
                "FLOAT64 arithmetic the DirectML EP lacks (ONNX has no BitCast before opset 26); not lowered",
            )

    def lower(self, desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> str:
        names = tensor_names(desc)
        p = {"__dtype__": desc.tensor(names[0]).data_type, "__out__": desc.tensor("OutputTensor").data_type}
        row = self.rows[desc.schema.name]
        assert row.integer is not None
        return row.integer(b, [inputs[n] for n in names], p)

    def reference(self, desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> np.ndarray:
        row, out = self.rows[desc.schema.name], desc.tensor("OutputTensor").data_type
        assert row.int_reference is not None
        return np.asarray(row.int_reference([inputs[n] for n in tensor_names(desc)], {})).astype(out.numpy)


FAMILY = BitsFamily(ROWS)
validate, lower, reference = FAMILY.validate, FAMILY.lower, FAMILY.reference


OPERATOR_FAMILY = Family(
    (
        "ELEMENT_WISE_BIT_AND",
        "ELEMENT_WISE_BIT_OR",
        "ELEMENT_WISE_BIT_XOR",
        "ELEMENT_WISE_BIT_NOT",
        "ELEMENT_WISE_BIT_COUNT",
        "ELEMENT_WISE_BIT_SHIFT_LEFT",
        "ELEMENT_WISE_BIT_SHIFT_RIGHT",
    ),
    validate,
    lower,
    reference,
    CANDIDATES,
    not_lowered_types=NOT_LOWERED_TYPES,
    broadcasts=True,
)
