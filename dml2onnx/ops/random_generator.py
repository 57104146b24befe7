"""DML_OPERATOR_RANDOM_GENERATOR: pseudo-random UINT32 bits from Philox 4x32-10 (Salmon et al.,
"Parallel Random Numbers: As Easy as 1, 2, 3"), the only DML_RANDOM_GENERATOR_TYPE.

Fields: InputStateTensor (UINT32, six values: a 128-bit counter in elements 0-3, a 64-bit key in
4-5), OutputTensor (UINT32, any Sizes), the optional OutputStateTensor (the state for the next
execution) and Type. The page: the counter is incremented by ceil(outputSize / 4) per execution.

What the page leaves open, as DirectML's own API computed it (1.24.4 under Wine; tests/
test_random_generator.py pins its values):
- the counter is little-endian: element 0 holds its low 32 bits, element 3 its high ones; the key
  is (element 4, element 5) = (k0, k1) of Philox's reference code;
- block j (j = 0 .. ceil(N / 4) - 1) is Philox4x32-10 of counter + j (mod 2**128: the carry runs
  through all four words and the counter wraps at 2**128) under the key, its four words (x0, x1,
  x2, x3) being output elements 4j .. 4j + 3 in the logical (row-major) order of OutputTensor's
  Sizes, whatever its Strides; the last block's unused words are dropped;
- OutputStateTensor is the counter + ceil(N / 4) (mod 2**128) and the key unchanged, as the page
  says; its Sizes must equal InputStateTensor's, DimensionCount included (CreateOperator refuses
  [1, 1, 1, 6] against [6]);
- InputStateTensor's Sizes: every size 1 but the last, which is 6 ({6}, {1, 6}, {1, 1, 1, 6} and 8
  dimensions are accepted; {2, 3}, {6, 1}, {1, 1, 1, 5}, {1, 1, 1, 7} refused);
- the page's example (counter 0x48656c6c'6f46726f'6d536561'74746c65 plus 324,855 "resulting in"
  0x...746f776e) does not add up: the sum is 0x48656c6c'6f46726f'6d536561'7479615c, which is what
  DirectML computes (README: RANDOM_GENERATOR).

Three lowerings, all bit for bit, the state's counter carried word by word.

"uint32_halves" (portable; the cuda target's too, and the cpu target's below opset 18): UINT32
values only, none ever overflowing. The 64-bit products of Philox's rounds (high and low words of
M * x) come from 16-bit halves (four partial products below 2**32 and their carries), the counter's
words + offset in 16-bit halves with the carry into the next word as a division by 0xFFFFFFFF, and
XOR byte by byte from a 256 x 256 table (Gather at a * 256 + b). Every node (Div, Mul, Add, Sub on
UINT32, Gather, Cast, Range, Concat, Split, Squeeze, Reshape, Slice, Unsqueeze) is registered on
the CPU, CUDA and DirectML EPs, at opsets 13-21. The obvious form needs BitShift and
BitwiseAnd/Xor, which the CUDA EP does not register (ONNX Runtime's OperatorKernels.md): this is
its exact replacement.

"uint64_bitwise" (the cpu and dml targets, opset 18 and newer: BitwiseAnd/Xor are opset 18):
words in UINT64 below 2**32, the products by UINT64 Mul, their words by BitShift RIGHT 32 and
BitwiseAnd 0xFFFFFFFF, XOR by BitwiseXor, the counter's words + carry by BitShift (below 2**33).
The CPU EP registers BitShift (opset 11, UINT64) and BitwiseAnd/Xor (opset 18, UINT64); the
DirectML EP all of them, and under Wine (Int64ShaderOps hidden, 64-bit emulated) it computes
every matrix case bit for bit. ONLY_ON cpu and dml (the CUDA EP lacks BitShift and Bitwise*);
CPU_PREFERENCE and DML_PREFERENCE take it where the opset allows.

"byte_tables" (CUDA_ONLY): fewer and wider nodes for the CUDA EP, 16 nodes a round (and 2 for its
table) over whole-output tensors, 232 nodes in all against uint32_halves' 628. The two products of
a round are one UINT64 tensor [1, 1, 2, blocks] (M0 x0, M1 x2: exact, below 2**64), the words they
meet (x3, x1) one UINT32 tensor. A round's XORs, hi(P) ^ (word met) ^ (round key), take one
GatherElements for every byte k of both lanes: the bytes are Div by 256**k of the high words (the
quotients by 2**32, in UINT32) and of the words met, and a Cast to UINT8 (ONNX's Cast of an integer
that does not fit keeps its low bits); the index is l * 256 + h [1, 4, 2, blocks] (INT32), and the
round's table [1, 4, 2, 65536] (FLOAT64) holds (h ^ l ^ byte k of the lane's round key) * 256**k,
built per execution from the key input (the rows of a (a ^ b) * 256**k table taken in the order l ^
key byte: one Gather of 2,048 whole rows a round). ReduceSum over the 4 bytes gives the XORed words
in FLOAT64 (exact: below 2**32; the CUDA EP's integer ReduceSum computes in FLOAT32, its
reduction_ops.cc), Cast to UINT64 and Mul by the next multipliers the next products. The lanes
alternate between the two multipliers from round to round, so that only the low words change lanes:
one Gather of [1, 1, 2, blocks] UINT32 a round. Every node and type (Add/Mul/Div on UINT32, UINT64,
INT32 and FLOAT64, Cast, Gather, GatherElements with INT32 indices, ReduceSum on FLOAT64, Range,
Concat, Split, Slice, Reshape, Transpose, Unsqueeze) is registered by the CUDA EP at opsets 13-21
(onnxruntime/core/providers/cuda/cuda_execution_provider.cc); the DirectML EP has no FLOAT64
ReduceSum. For 2**26 outputs its kernels (Reshape and Unsqueeze aside) read and write 130 GB, 1,940
bytes per output word, where uint32_halves' move 324 GB (99.9 ms on the H200).

All unroll the ten rounds over all ceil(N / 4) blocks at once; the round keys are key + r * W
(mod 2**32), computed from the key input. No ONNX node maps onto DirectML's operator (ONNX's
RandomUniform has no counter state). Under Wine the DirectML EP runs uint32_halves and
uint64_bitwise bit for bit (every matrix case, every node on the EP).

Measured on the CPU EP (2 loaded cores, 2 threads): uint32_halves takes 7-15 ms for 4,096
outputs and 3.5-5.3 s for 2**20; uint64_bitwise 0.1 ms and 0.11-0.23 s (25 to 150 times faster:
the halves' byte splits are UINT32 divisions, and each word of every round is split and joined
again); byte_tables 16-19 ms (its tables: 10 Gathers of 4 MiB) and 0.86 s.
"""

from __future__ import annotations

import numpy as np

from dml2onnx.core import dtypes
from dml2onnx.core.desc import OperatorDesc
from dml2onnx.core.errors import ModelError
from dml2onnx.core.schema import OperatorSchema
from dml2onnx.graph.builder import GraphBuilder
from dml2onnx.ops import common
from dml2onnx.ops.family import Family

CANDIDATES = ("uint32_halves", "uint64_bitwise", "byte_tables")  # choices.py
ONLY_ON = {"uint64_bitwise": ("cpu", "dml")}  # the CUDA EP has no BitShift, BitwiseAnd, BitwiseXor
CUDA_ONLY = ("byte_tables",)  # the DirectML EP has no FLOAT64 ReduceSum (dml_ep_registry)
DML_PREFERENCE = CPU_PREFERENCE = ("uint64_bitwise",)
BITWISE_OPSET = 18  # BitwiseAnd and BitwiseXor
STATE_SIZE = 6
TYPE = "DML_RANDOM_GENERATOR_TYPE_PHILOX_4X32_10"
ROUNDS = 10
MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)  # Philox's M0 (for x0) and M1 (for x2)
WEYL = (0x9E3779B9, 0xBB67AE85)  # the key's increments per round
U32 = dtypes.UINT32
I32 = dtypes.INT32
MASK32 = 0xFFFFFFFF
_XOR = np.bitwise_xor.outer(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8)).ravel()


def validate(desc: OperatorDesc) -> None:
    sizes = desc.tensor("InputStateTensor").sizes
    for i, s in enumerate(sizes):
        want = STATE_SIZE if i == len(sizes) - 1 else 1
        if s != want:
            raise ModelError(
                desc.at("InputStateTensor", "Sizes", i),
                f"must be {want} (PHILOX_4X32_10's state: sizes of 1 then 6, as {{1, 1, 1, 6}}), not {s}",
            )
    if "OutputStateTensor" in desc.outputs:
        common.check_same_rank(desc, "OutputStateTensor", "InputStateTensor")
        common.check_same_sizes(desc, "OutputStateTensor", "InputStateTensor")


def blocks(desc: OperatorDesc) -> int:
    """ceil(N / 4): the Philox blocks an execution uses, and the counter's increment."""
    return -(-int(np.prod(desc.tensor("OutputTensor").sizes)) // 4)


# -- the numpy reference ------------------------------------------------------------------------


def philox(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox4x32-10 of each [4] counter row (UINT32 words x0..x3) under key (k0, k1)."""
    x = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    m0, m1, mask = np.uint64(MULTIPLIERS[0]), np.uint64(MULTIPLIERS[1]), np.uint64(MASK32)
    for _ in range(ROUNDS):
        p0, p1 = m0 * x[0], m1 * x[2]
        x = [(p1 >> np.uint64(32)) ^ x[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ x[3] ^ k1, p0 & mask]
        k0, k1 = (k0 + np.uint64(WEYL[0])) & mask, (k1 + np.uint64(WEYL[1])) & mask
    return np.stack(x, axis=1).astype(np.uint32)


def _words(value: int) -> list[int]:
    return [(value >> (32 * i)) & MASK32 for i in range(4)]


def counter_rows(counter: int, n: int) -> np.ndarray:
    """counter + j (mod 2**128) for j = 0 .. n-1, as [n, 4] UINT32 words (low first)."""
    low, high = counter & (2**64 - 1), counter >> 64
    lows = np.uint64(low) + np.arange(n, dtype=np.uint64)  # wraps mod 2**64
    highs = np.uint64(high) + (lows < np.uint64(low)).astype(np.uint64)  # the carry (wraps too)
    mask = np.uint64(MASK32)
    return np.stack([lows & mask, lows >> np.uint64(32), highs & mask, highs >> np.uint64(32)], axis=1).astype(np.uint32)


def reference(desc: OperatorDesc, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    state = [int(v) for v in inputs["InputStateTensor"].ravel()]
    counter = sum(w << (32 * i) for i, w in enumerate(state[:4]))
    n, out = blocks(desc), desc.tensor("OutputTensor")
    bits = philox(counter_rows(counter, n), (state[4], state[5])).ravel()[: int(np.prod(out.sizes))]
    result = {"OutputTensor": bits.reshape(out.sizes)}
    if "OutputStateTensor" in desc.outputs:
        new = np.array(_words((counter + n) % 2**128) + state[4:], np.uint32)
        result["OutputStateTensor"] = new.reshape(desc.tensor("OutputStateTensor").sizes)
    return result


# -- the lowerings -------------------------------------------------------------------------------


class _Arith:
    """UINT32 helpers over a GraphBuilder, each node named after `tag`."""

    def __init__(self, b: GraphBuilder) -> None:
        self.b = b
        self.consts: dict[tuple[tuple[int, ...], bytes], str] = {}
        self.xor_table = b.const(_XOR, "xor_table")
        self.powers = self.k([1, 256, 65536, 16777216], "byte_weights")
        self.last_axis = b.i64([-1], "last_axis")
        self.row = b.scalar(256, I32, "row_length")

    def k(self, value: int | list[int] | np.ndarray, tag: str) -> str:
        """A UINT32 constant, one initializer per distinct value (`tag` names its first use)."""
        a = np.asarray(value, np.uint32)
        key = (a.shape, a.tobytes())
        if key not in self.consts:
            self.consts[key] = self.b.const(a, tag)
        return self.consts[key]

    def op(self, op: str, a: str, c: str, tag: str, doc: str) -> str:
        return self.b.node(op, [a, c], tag, doc)

    def halves(self, x: str, tag: str) -> tuple[str, str]:
        """(x // 2**16, x mod 2**16)."""
        return self.b.divmod(x, self.k(65536, f"{tag}_2p16"), f"{tag}_low", "x mod 2**16", "x // 2**16")

    def add32(self, x: str, y: str, tag: str) -> tuple[str, str]:
        """((x + y) mod 2**32, the carry 0 or 1), x and y below 2**32."""
        xh, xl = self.halves(x, f"{tag}_x")
        yh, yl = self.halves(y, f"{tag}_y")
        low = self.op("Add", xl, yl, f"{tag}_low_sum", "low halves summed (< 2**17)")
        lc, lr = self.halves(low, f"{tag}_ls")
        high = self.op("Add", self.op("Add", xh, yh, f"{tag}_high_sum", "high halves"), lc, f"{tag}_high", "+ carry")
        carry, hr = self.halves(high, f"{tag}_hs")
        word = self.op("Add", self.op("Mul", hr, self.k(65536, f"{tag}_w"), f"{tag}_up", "<< 16"), lr, tag, "the sum's word")
        return word, carry

    def add_carry(self, x: str, carry: str, tag: str) -> tuple[str, str]:
        """((x + carry) mod 2**32, its carry), carry 0 or 1: x // 0xFFFFFFFF is 1 at the maximum alone."""
        full = self.op("Div", x, self.k(MASK32, f"{tag}_max"), f"{tag}_full", "x == 0xFFFFFFFF")
        out = self.op("Mul", carry, full, f"{tag}_carry", "the carry out")
        kept = self.op(
            "Sub",
            x,
            self.op("Mul", out, self.k(MASK32, f"{tag}_m"), f"{tag}_drop", "0xFFFFFFFF where it wraps"),
            f"{tag}_kept",
            "0 on wrap",
        )
        return self.op("Add", kept, self.op("Sub", carry, out, f"{tag}_in", "carry in kept"), tag, "x + carry mod 2**32"), out

    def mulhilo(self, x: str, m: tuple[int, ...], tag: str) -> tuple[str, str]:
        """(high, low) 32-bit words of m * x (m per lane, broadcast on the last axis), from halves."""
        mh = self.k([v >> 16 for v in m], f"{tag}_mh")
        ml = self.k([v & 0xFFFF for v in m], f"{tag}_ml")
        xh, xl = self.halves(x, f"{tag}_x")
        ll = self.op("Mul", xl, ml, f"{tag}_ll", "xl * ml")
        llh, lll = self.halves(ll, f"{tag}_ll")
        mid1 = self.op("Add", self.op("Mul", xh, ml, f"{tag}_hl", "xh * ml"), llh, f"{tag}_mid1", "xh*ml + carry")
        m1h, m1l = self.halves(mid1, f"{tag}_mid1")
        mid2 = self.op("Add", self.op("Mul", xl, mh, f"{tag}_lh", "xl * mh"), m1l, f"{tag}_mid2", "xl*mh + mid1 low")
        m2h, m2l = self.halves(mid2, f"{tag}_mid2")
        hh = self.op("Mul", xh, mh, f"{tag}_hh", "xh * mh")
        hi = self.op(
            "Add", self.op("Add", hh, m1h, f"{tag}_hi1", "high halves' products summed"), m2h, f"{tag}_hi", "the high word"
        )
        lo = self.op("Add", self.op("Mul", m2l, self.k(65536, f"{tag}_s"), f"{tag}_lo1", "<< 16"), lll, f"{tag}_lo", "low word")
        return hi, lo

    def to_bytes(self, x: str, tag: str) -> str:
        """x [...] as its bytes [..., 4] (least significant first), INT32."""
        b = self.b
        q = self.op(
            "Div",
            b.node("Unsqueeze", [x, self.last_axis], f"{tag}_col", "a column per byte"),
            self.powers,
            f"{tag}_q",
            "x // 256**k",
        )
        return b.cast(b.remainder(q, self.k(256, f"{tag}_256"), f"{tag}_r", "byte k"), I32, f"{tag}_bytes", "bytes in INT32")

    def from_bytes(self, x: str, tag: str) -> str:
        """bytes [..., 4] (INT32) as the UINT32 value [...]."""
        b = self.b
        w = self.op("Mul", b.cast(x, U32, f"{tag}_u32", "bytes as UINT32"), self.powers, f"{tag}_weighted", "byte * 256**k")
        count = {"num_outputs": 4} if b.opset >= 18 else {}  # Split-18 wants it
        parts = b.node_outputs("Split", [w], f"{tag}_split", "the four weighted bytes", 4, axis=-1, **count)
        acc = parts[0]
        for i, p in enumerate(parts[1:]):
            acc = self.op("Add", acc, p, f"{tag}_sum{i}", "summed (no carries: disjoint bits)")
        return b.node("Squeeze", [acc, self.last_axis], tag, "the word")

    def xor(self, a: str, c: str, tag: str) -> str:
        """Bytewise XOR of byte tensors (INT32 0..255) by the 256 x 256 table."""
        b = self.b
        index = self.op(
            "Add",
            self.op("Mul", a, self.row, f"{tag}_hi", "row of the first byte"),
            c,
            f"{tag}_index",
            "the table index a * 256 + c",
        )
        return b.cast(b.node("Gather", [self.xor_table, index], f"{tag}_lookup", "a ^ b by table"), I32, tag, "in INT32")


def _counters(ar: _Arith, words: list[str], offsets: str) -> list[str]:
    """The 128-bit counter (words [1] each, low first) + offsets [n] (UINT32), mod 2**128."""
    w0, carry = ar.add32(words[0], offsets, "ctr0")
    out = [w0]
    for i in (1, 2, 3):
        w, carry = ar.add_carry(words[i], carry, f"ctr{i}")
        out.append(w)
    return out


def _stack(b: GraphBuilder, values: list[str], axis: int, step: str, doc: str) -> str:
    """The values side by side along a new `axis`."""
    at = b.i64([axis], f"{step}_axis")
    return b.node(
        "Concat",
        [b.node("Unsqueeze", [v, at], f"{step}_{i}", "one more axis to stack on") for i, v in enumerate(values)],
        step,
        doc,
        axis=axis,
    )


def applies(desc: OperatorDesc, candidate: str, opset: int) -> bool:
    return candidate != "uint64_bitwise" or opset >= BITWISE_OPSET


def choose(desc: OperatorDesc, target: str, options: tuple[str, ...]) -> str:
    """byte_tables where the target has it (`cuda`): 70.5 ms against uint32_halves' 125 ms for
    2**26 outputs on the H100 (PyTorch's own Philox: 0.125 ms; benchmarks/results/h100-part4-2026-11-23.md)."""
    return "byte_tables" if "byte_tables" in options else options[0]


def _outputs(b: GraphBuilder, desc: OperatorDesc, flat: str, state: list[str]) -> dict[str, str]:
    """OutputTensor from the words of the blocks in order ([4 * blocks], UINT32 or UINT64 below
    2**32), OutputStateTensor from the next counter's words and the key (six [1] of one type)."""
    out = desc.tensor("OutputTensor")
    count = int(np.prod(out.sizes))
    bits = flat if count == 4 * blocks(desc) else b.slice(flat, [0], [0], [count], "used", "the first N words")
    bits = b.cast(bits, U32, "bits_u32", "in UINT32 (below 2**32)") if b.variant == "uint64_bitwise" else bits
    result = {"OutputTensor": b.reshape(bits, list(out.sizes), "output", "in OutputTensor's Sizes")}
    if "OutputStateTensor" in desc.outputs:
        new = b.node("Concat", state, "new_state", "counter + blocks, the key", axis=0)
        new = b.cast(new, U32, "state_u32", "in UINT32") if b.variant == "uint64_bitwise" else new
        sizes = list(desc.tensor("OutputStateTensor").sizes)
        result["OutputStateTensor"] = b.reshape(new, sizes, "output_state", "in OutputStateTensor's Sizes")
    return result


def _interleave(b: GraphBuilder, desc: OperatorDesc, lanes: list[str]) -> str:
    """The four lanes [blocks] (x0..x3) as the words in order [4 * blocks]."""
    stacked = _stack(b, lanes, 1, "interleave", "x0 x1 x2 x3 per block [blocks, 4]")
    return b.reshape(stacked, [4 * blocks(desc)], "bits", "in order")


def _lower_uint64(desc: OperatorDesc, b: GraphBuilder, state: str, offsets: str) -> dict[str, str]:
    """UINT64 words below 2**32: Mul for the products, BitShift and BitwiseAnd for their words,
    BitwiseXor; the counter's carries by BitShift of word + carry (never past 2**33)."""
    n = blocks(desc)
    u64 = b.cast(state, dtypes.UINT64, "state_u64", "the state words in UINT64")
    words = [b.slice(u64, [0], [i], [i + 1], f"word{i}", f"state word {i}") for i in range(STATE_SIZE)]
    mask, s32 = b.scalar(MASK32, dtypes.UINT64, "mask32"), b.scalar(32, dtypes.UINT64, "shift32")

    def split(x: str, tag: str) -> tuple[str, str]:
        high = b.node("BitShift", [x, s32], f"{tag}_high", "x >> 32", direction="RIGHT")
        return high, b.node("BitwiseAnd", [x, mask], f"{tag}_low", "x & 0xFFFFFFFF")

    carry = b.cast(offsets, dtypes.UINT64, "offsets_u64", "block offsets")
    ctr = []
    for i in range(4):
        carry, w = split(b.node("Add", [words[i], carry], f"ctr{i}_sum", "word + carry in"), f"ctr{i}")
        ctr.append(w)
    x = [b.slice(w, [0], [0], [n], f"block_word{i}", f"word {i} of each block's counter") for i, w in enumerate(ctr)]
    steps = [[(r * w) & MASK32 for w in WEYL] for r in range(ROUNDS)]
    for r in range(ROUNDS):
        k0, k1 = (
            b.node(
                "BitwiseAnd",
                [
                    b.node(
                        "Add",
                        [words[4 + i], b.scalar(steps[r][i], dtypes.UINT64, f"r{r}_w{i}")],
                        f"r{r}_k{i}_sum",
                        "key + the round's Weyl step",
                    ),
                    mask,
                ],
                f"r{r}_k{i}",
                f"round {r}'s key word {i}",
            )
            for i in (0, 1)
        )
        hi0, lo0 = split(
            b.node("Mul", [x[0], b.scalar(MULTIPLIERS[0], dtypes.UINT64, f"r{r}_m0")], f"r{r}_p0", "M0 x0"), f"r{r}_p0"
        )
        hi1, lo1 = split(
            b.node("Mul", [x[2], b.scalar(MULTIPLIERS[1], dtypes.UINT64, f"r{r}_m1")], f"r{r}_p1", "M1 x2"), f"r{r}_p1"
        )
        x0 = b.node("BitwiseXor", [b.node("BitwiseXor", [hi1, x[1]], f"r{r}_a0", "hi1 ^ x1"), k0], f"r{r}_x0", "hi1 ^ x1 ^ k0")
        x2 = b.node("BitwiseXor", [b.node("BitwiseXor", [hi0, x[3]], f"r{r}_a2", "hi0 ^ x3"), k1], f"r{r}_x2", "hi0 ^ x3 ^ k1")
        x = [x0, lo1, x2, lo0]
    nxt = [b.slice(w, [0], [n], [n + 1], f"next{i}", f"counter + {n}, word {i}") for i, w in enumerate(ctr)]
    return _outputs(b, desc, _interleave(b, desc, x), [*nxt, *words[4:]])


# byte_tables: XOR by one GatherElements per round, from tables of the round's key
_XOR_I32 = _XOR.astype(np.int32)  # a ^ b at a * 256 + b
# which key word lane c XORs in round r: (k1, k0) in even rounds, (k0, k1) in odd ones
_KEY_LANES = np.array([[1 - c if r % 2 == 0 else c for c in (0, 1)] for r in range(ROUNDS)], np.int64)
# the multipliers of the products the lanes' words go into next: (M1, M0) after even rounds
_NEXT_MULTIPLIERS = [[MULTIPLIERS[1 - c] if r % 2 == 0 else MULTIPLIERS[c] for c in (0, 1)] for r in range(ROUNDS)]


def _bytes(b: GraphBuilder, x: str, powers: list[int], dtype: dtypes.DataType, tag: str) -> str:
    """Byte k of x ([..., 1, lanes, blocks], `dtype`) on axis 1 as INT32: x // powers[k], its low
    byte kept by a Cast to UINT8 (ONNX's Cast of an integer that does not fit keeps its low bits)."""
    divisors = b.const(np.array(powers, dtype.numpy).reshape(1, len(powers), 1, 1), f"{tag}_powers")
    q = b.node("Div", [x, divisors], f"{tag}_shifted", "x // 256**k")
    return b.cast(b.cast(q, dtypes.UINT8, f"{tag}_u8", "mod 256"), I32, tag, "the byte in INT32")


def _round_tables(b: GraphBuilder, key: str) -> list[str]:
    """Per round r, the table [1, 4, 2, 65536] (FLOAT64) at byte k, lane c, index l * 256 + h:
    (h ^ l ^ byte k of the lane's round key) * 256**k, as rows of (a ^ b) * 256**k [4 * 256, 256]
    (row l ^ key byte: a Gather of whole rows). `key`: (k0, k1) in UINT64."""
    steps = np.array([[(r * WEYL[j]) & MASK32 for j in row] for r, row in enumerate(_KEY_LANES)], np.uint64)
    keys = b.node("Gather", [key, b.i64(_KEY_LANES.tolist(), "key_lanes")], "lane_keys", "each lane's key word", axis=0)
    keys = b.node("Add", [keys, b.const(steps, "weyl_steps")], "round_keys_sum", "key + r * W")
    keys = b.reshape(b.cast(keys, U32, "round_keys", "mod 2**32"), [ROUNDS, 1, 2, 1], "round_keys_col", "[10, 1, 2, 1]")
    key_bytes = _bytes(b, keys, [256**k for k in range(4)], U32, "key_bytes")
    at = b.node("Add", [key_bytes, b.const(np.arange(256, dtype=np.int32) * 256, "l_rows")], "key_at", "l * 256 + key byte")
    moved = b.node("Gather", [b.const(_XOR_I32, "xor_i32"), at], "key_xor", "l ^ key byte [10, 4, 2, 256]")
    rows = b.node(
        "Add",
        [moved, b.const(np.arange(4, dtype=np.int32).reshape(1, 4, 1, 1) * 256, "k_rows")],
        "rows",
        "each byte's row in its 256-row table",
    )
    xor = b.cast(b.const(_XOR.reshape(256, 256), "xor_u8"), dtypes.FLOAT64, "xor_f64", "a ^ b [256, 256]")
    scales = b.const((256.0 ** np.arange(4)).reshape(4, 1, 1), "byte_scales")
    scaled = b.reshape(
        b.node("Mul", [xor, scales], "xor_scaled", "(a ^ b) * 256**k"),
        [1024, 256],
        "xor_rows",
        "[1024, 256]: a row per (byte, value)",
    )
    count = {"num_outputs": ROUNDS} if b.opset >= 18 else {}
    tables = []
    for r, row in enumerate(b.node_outputs("Split", [rows], "round_rows", "each round's rows", ROUNDS, axis=0, **count)):
        table = b.node("Gather", [scaled, row], f"r{r}_rows", f"round {r}'s rows [1, 4, 2, 256, 256]", axis=0)
        tables.append(b.reshape(table, [1, 4, 2, 65536], f"r{r}_table", f"round {r}'s table"))
    return tables


def _lower_tables(desc: OperatorDesc, b: GraphBuilder, state: str, offsets: str) -> dict[str, str]:
    """UINT64 products, their bytes by Div and Cast, the XORs by table (every lane and byte of a
    round in one GatherElements), the words summed in FLOAT64 (ReduceSum; every value exact)."""
    n = blocks(desc)
    u64 = b.cast(state, dtypes.UINT64, "state_u64", "the state words in UINT64")
    two32 = b.scalar(2**32, dtypes.UINT64, "two32")
    carry, ctr = b.cast(offsets, dtypes.UINT64, "offsets_u64", "block offsets"), []
    for i in range(4):
        word = b.slice(u64, [0], [i], [i + 1], f"word{i}", f"state word {i}")
        total = b.node("Add", [word, carry], f"ctr{i}_sum", "word + carry in (< 2**33)")
        carry = b.node("Div", [total, two32], f"ctr{i}_carry", "the carry out")
        ctr.append(b.cast(total, U32, f"ctr{i}", "mod 2**32"))
    counters = _stack(b, ctr, 0, "counters", "counter + j, word by word [4, blocks + 1]")
    block = b.slice(counters, [1], [0], [n], "block_words", "each block's counter [4, blocks]")
    pick = b.node("Gather", [block, b.i64([[[0, 2]]], "x02_at")], "x02", "(x0, x2) [1, 1, 2, blocks]", axis=0)
    low = b.node("Gather", [block, b.i64([[[3, 1]]], "x31_at")], "x31", "(x3, x1): the words each product meets", axis=0)
    lanes = b.const(np.array(MULTIPLIERS, np.uint64).reshape(1, 1, 2, 1), "m0_m1")
    product = b.node(
        "Mul", [b.cast(pick, dtypes.UINT64, "x02_u64", "as UINT64: exact 64-bit products"), lanes], "r0_product", "(M0 x0, M1 x2)"
    )
    tables = _round_tables(b, b.slice(u64, [0], [4], [6], "key", "(k0, k1)"))
    swap = b.i64([1, 0], "swap")
    for r in range(ROUNDS):
        top = b.cast(b.node("Div", [product, two32], f"r{r}_top", "hi(P)"), U32, f"r{r}_top_u32", "high words")
        high = _bytes(b, top, [256**k for k in range(4)], U32, f"r{r}_high")
        lows = _bytes(b, low, [256**k for k in range(4)], U32, f"r{r}_low")
        up = b.node("Mul", [lows, b.scalar(256, I32, f"r{r}_256")], f"r{r}_low_up", "low byte * 256")
        index = b.node("Add", [high, up], f"r{r}_index", "l * 256 + h [1, 4, 2, blocks]")
        shares = b.node("GatherElements", [tables[r], index], f"r{r}_xor", "(h ^ l ^ key) * 256**k", axis=3)
        words = b.reduce("ReduceSum", shares, [1], f"r{r}_words", "the XORed words [1, 1, 2, blocks]")
        kept = b.cast(product, U32, f"r{r}_low_words", "the products' low words")
        if r == ROUNDS - 1:
            break
        low = b.node("Gather", [kept, swap], f"r{r + 1}_meets", "low words, lanes swapped", axis=2)
        multipliers = b.const(np.array(_NEXT_MULTIPLIERS[r], np.uint64).reshape(1, 1, 2, 1), f"r{r}_next_m")
        product = b.node(
            "Mul",
            [b.cast(words, dtypes.UINT64, f"r{r}_u64", "as UINT64: exact 64-bit products"), multipliers],
            f"r{r + 1}_product",
            "the next round's (M0 x0, M1 x2)",
        )
    # after the last (odd) round: words (x0, x2), kept (x1, x3)
    final = b.node("Concat", [b.cast(words, U32, "x02_words", "x0, x2 as UINT32"), kept], "final", "[1, 2, 2, blocks]", axis=1)
    ordered = b.transpose(
        b.reshape(final, [2, 2, n], "final_3d", "[2, 2, blocks]"), [2, 1, 0], "blocks_first", "[blocks, x0 x1 | x2 x3]"
    )
    flat = b.reshape(ordered, [4 * n], "bits", "in order")
    nxt = b.slice(counters, [1], [n], [n + 1], "next", f"counter + {n}")
    key = b.slice(state, [0], [4], [6], "key_u32", "the key")
    return _outputs(b, desc, flat, [b.reshape(nxt, [4], "next_words", "the next counter's four words"), key])


def lower(desc: OperatorDesc, b: GraphBuilder, inputs: dict[str, str]) -> dict[str, str]:
    n = blocks(desc)
    state = b.reshape(inputs["InputStateTensor"], [STATE_SIZE], "state", "the six state words")
    # offsets 0 .. n-1 for the blocks, then n for the next state
    rng = b.node("Range", [b.scalar(0, I32, "r0"), b.scalar(n + 1, I32, "r1"), b.scalar(1, I32, "r2")], "offsets", "0..n")
    if b.variant == "uint64_bitwise":
        return _lower_uint64(desc, b, state, rng)
    if b.variant == "byte_tables":
        return _lower_tables(desc, b, state, rng)
    ar = _Arith(b)
    words = [b.slice(state, [0], [i], [i + 1], f"word{i}", f"state word {i}") for i in range(STATE_SIZE)]
    ctr = _counters(ar, words[:4], b.cast(rng, U32, "offsets_u32", "block offsets"))
    rows = [b.slice(w, [0], [0], [n], f"block_word{i}", f"word {i} of each block's counter") for i, w in enumerate(ctr)]
    x02 = _stack(b, [rows[0], rows[2]], 1, "x02", "lanes x0, x2 [blocks, 2]")
    x13 = ar.to_bytes(_stack(b, [rows[1], rows[3]], 1, "x13", "lanes x1, x3 [blocks, 2]"), "x13b")
    # round keys: key + r * W (mod 2**32) for r = 0..9, as bytes [10, 2, 4]
    key = b.node("Concat", [words[4], words[5]], "key", "(k0, k1)", axis=0)
    steps = np.array([[(r * w) & MASK32 for w in WEYL] for r in range(ROUNDS)], np.uint32)
    round_keys, _ = ar.add32(
        b.node("Unsqueeze", [key, b.i64([0], "key_row")], "key_row", "the key as a row"), ar.k(steps, "weyl"), "keys"
    )
    key_bytes = ar.to_bytes(round_keys, "key_b")
    swap = b.i64([1, 0], "swap")
    for r in range(ROUNDS):
        hi, lo = ar.mulhilo(x02, MULTIPLIERS, f"r{r}_mul")
        hi_sw = b.node("Gather", [hi, swap], f"r{r}_hi_swap", "(hi1, hi0)", axis=1)
        lo_sw = b.node("Gather", [lo, swap], f"r{r}_lo_swap", "(lo1, lo0): the new x1, x3", axis=1)
        kr = b.node("Gather", [key_bytes, b.i64(r, f"r{r}_k")], f"r{r}_key", f"round {r}'s key bytes", axis=0)
        mixed = ar.xor(ar.xor(ar.to_bytes(hi_sw, f"r{r}_hib"), x13, f"r{r}_x1"), kr, f"r{r}_x2")
        x02 = ar.from_bytes(mixed, f"r{r}_x02")
        x13 = ar.to_bytes(lo_sw, f"r{r}_x13")
    lanes = _pairs(b, x02, ar.from_bytes(x13, "x13v"))
    nxt = [b.slice(w, [0], [n], [n + 1], f"next{i}", f"counter + {n}, word {i}") for i, w in enumerate(ctr)]
    return _outputs(b, desc, _interleave(b, desc, lanes), [*nxt, *words[4:]])


def _pairs(b: GraphBuilder, x02: str, x13: str) -> list[str]:
    """[blocks, 2] lanes (x0, x2) and (x1, x3) as x0, x1, x2, x3 [blocks]."""
    out = []
    for i in range(4):
        pick = b.node("Gather", [x13 if i % 2 else x02, b.i64(i // 2, f"lane{i}_at")], f"lane{i}", f"x{i}", axis=1)
        out.append(pick)
    return out


def examples(op: OperatorSchema) -> list[common.Example]:
    """onnx_ops: with and without OutputStateTensor, N a multiple of 4 and not."""
    state = common.example_tensor("UINT32", [1, 1, 1, 6])
    whole = {"InputStateTensor": state, "OutputTensor": common.example_tensor("UINT32", [1, 2, 3, 4])}
    part = {"InputStateTensor": state, "OutputTensor": common.example_tensor("UINT32", [2, 3, 5])}
    return [whole | {"OutputStateTensor": state, "Type": TYPE}, part | {"Type": TYPE}]


OPERATOR_FAMILY = Family(
    ("RANDOM_GENERATOR",),
    validate,
    lower,
    reference,
    CANDIDATES,
    applies=applies,
    choose=choose,
    cuda_only=CUDA_ONLY,
    only_on=ONLY_ON,
    dml_preference=DML_PREFERENCE,
    cpu_preference=CPU_PREFERENCE,
    examples=examples,
)
