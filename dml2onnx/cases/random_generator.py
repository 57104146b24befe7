"""Matrix cases for DML_OPERATOR_RANDOM_GENERATOR (dml2onnx/ops/random_generator.py): UINT32 (the
only type) at every dimension count 1 to 8 for OutputTensor and for the state ({6} to {1 x 7, 6}),
N a multiple of 4 and not, with and without OutputStateTensor, and states whose counter carries
across words or wraps at 2**128 (every word 0xFFFFFFFF), beside zeros and random ones."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases.common import SIZES, Case, tensor_of
from dml2onnx.core import dtypes

OP = "RANDOM_GENERATOR"
U32 = dtypes.UINT32
STATES = {
    "zero": [0, 0, 0, 0, 0, 0],
    "wrap": [0xFFFFFFFF] * 6,
    "carry": [0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFF, 7, 0x12345678, 0x9ABCDEF0],
}


def state_sizes(rank: int) -> list[int]:
    return [1] * (rank - 1) + [6]


def fields_for(out_sizes: tuple[int, ...] | list[int], state_rank: int = 4, with_state: bool = True) -> dict[str, object]:
    state = tensor_of(U32, state_sizes(state_rank))
    f: dict[str, object] = {"InputStateTensor": state, "OutputTensor": tensor_of(U32, out_sizes)}
    if with_state:
        f["OutputStateTensor"] = state
    return f | {"Type": "DML_RANDOM_GENERATOR_TYPE_PHILOX_4X32_10"}


def _case(rng: np.random.Generator, out: tuple[int, ...], rank: int, state: str, with_state: bool) -> Case:
    words = STATES.get(state) or [int(v) for v in rng.integers(0, 2**32, 6)]
    feeds = {"InputStateTensor": np.array(words, np.uint32).reshape(state_sizes(rank))}
    name = f"{OP}-{'x'.join(map(str, out))}-state{rank}d-{state}-{'with' if with_state else 'no'}_state"
    return Case(name, OP, fields_for(out, rank, with_state), feeds)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(132)
    for rank in range(1, 9):
        out = SIZES[:rank]
        yield _case(rng, out, 4 if rank != 4 else 1, "random", True)
        yield _case(rng, (1,) * (rank - 1) + (5,), rank, "random", rank % 2 == 0)
    for state in STATES:
        for out in ((1, 1, 1, 1), (1, 1, 2, 3), (2, 2, 2, 2)):
            yield _case(rng, out, 4, state, True)
