"""Matrix cases for the inverse trigonometric and hyperbolic operators
(dml2onnx/ops/element_wise_trig.py): every data type of each page's newest tensor support table at
ranks 1-8 (matrix_element_wise's shapes and ScaleBias), and edges of their own: the domain ends
(+-1 and the FLOAT32 neighbours beyond them), the range-reduction bounds of the formulas (0.5,
tan(pi/8), tan(3pi/8), 1500), sinh/cosh near their overflow (88.7 < |x| < 89.4: exp(x) overflows,
sinh(x) does not), tiny, huge and subnormal values, infinities and NaN; ATAN_YX's other input drawn
the same way (so signed zeros and infinities meet: the origin, (+-inf, +-inf))."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dml2onnx.cases import element_wise as matrix_element_wise
from dml2onnx.cases.common import Case
from dml2onnx.core import dtypes, operator_table
from dml2onnx.ops import element_wise_trig

_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.41421357, -2.4142137, 1500.5, -1e4, 89.0, -89.4)


def _float_edges(dtype: dtypes.DataType) -> np.ndarray:
    if dtype == dtypes.FLOAT16:
        beyond = [1.001, -1.001, 0.999, 6e4, -6e4, 6e-8]
    else:
        beyond = [1.0000001, -1.0000001, 0.99999994, 88.8, 3e38, -3e38, 1e-30, 1e-40]
    pool = [*_EDGES, *beyond, np.inf, -np.inf, np.nan]
    return np.array(pool, np.float64).astype(dtype.numpy)


def cases() -> Iterator[Case]:
    rng = np.random.default_rng(23)
    for name in element_wise_trig.ROWS:
        yield from matrix_element_wise._cases(operator_table.OPERATORS[name], rng, _float_edges)
