"""The invalid models: a valid base model per kind and the mutations that make each invalid, with
the JSON path and rule each must be refused with (tests/formats/test_invalid_models.py runs them
through the CLI, tests/backends/test_dmlapi.py checks DirectML refuses the descs among them too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support import tensor


def base_models() -> dict[str, dict[str, Any]]:
    def model(op: str, desc: dict[str, Any], resources: dict[str, Any]) -> dict[str, Any]:
        bindings = {name: name for name in resources if name != "_"}
        return {
            "resources": resources,
            "dispatchables": {"op": {"type": op, "desc": desc}},
            "commands": [
                {"type": "dispatch", "dispatchable": "op", "bindings": bindings},
                {"type": "writeFile", "resource": "OutputTensor", "targetPath": "out.npy"},
                {"type": "print", "resource": "OutputTensor"},
            ],
        }

    f32 = {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 8, "value": 1}}
    return {
        "hardmax": model(
            "DML_OPERATOR_ACTIVATION_HARDMAX1",
            {
                "InputTensor": tensor("FLOAT32", [2, 2, 2]),
                "OutputTensor": tensor("FLOAT32", [2, 2, 2]),
                "AxisCount": 2,
                "Axes": [0, 2],
            },
            {"InputTensor": f32, "OutputTensor": f32},
        ),
        "argmax": model(
            "DML_OPERATOR_ARGMAX",
            {
                "InputTensor": tensor("FLOAT32", [2, 4]),
                "OutputTensor": tensor("UINT32", [2, 1]),
                "AxisCount": 1,
                "Axes": [1],
                "AxisDirection": "DML_AXIS_DIRECTION_DECREASING",
            },
            {"InputTensor": f32, "OutputTensor": {"initialValuesDataType": "UINT32", "initialValues": [0, 0]}},
        ),
        "mvn": model(
            "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION",
            {
                "InputTensor": tensor("FLOAT32", [1, 2, 2, 2]),
                "ScaleTensor": tensor("FLOAT32", [1, 2, 1, 1]),
                "OutputTensor": tensor("FLOAT32", [1, 2, 2, 2]),
                "CrossChannel": False,
                "NormalizeVariance": True,
                "Epsilon": 1e-5,
                "FusedActivation": {"Type": "ACTIVATION_LEAKY_RELU", "Alpha": 0.1},
            },
            {
                "InputTensor": f32,
                "ScaleTensor": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2]},
                "OutputTensor": f32,
            },
        ),
        "one_hot": model(
            "DML_OPERATOR_ONE_HOT",
            {
                "IndicesTensor": tensor("INT32", [2, 1]),
                "ValuesTensor": tensor("FLOAT32", [1, 2]),
                "OutputTensor": tensor("FLOAT32", [2, 4]),
                "Axis": 1,
            },
            {
                "IndicesTensor": {"initialValuesDataType": "INT32", "initialValues": [1, -1]},
                "ValuesTensor": {"initialValuesDataType": "FLOAT32", "initialValues": [0, 1]},
                "OutputTensor": f32,
            },
        ),
    }


Mutation = Callable[[dict[str, Any]], Any]


def desc(m: dict[str, Any]) -> dict[str, Any]:
    return m["dispatchables"]["op"]["desc"]


def setitem(getter: Callable[[dict[str, Any]], Any], key: Any, value: Any) -> Mutation:
    def mutate(m: dict[str, Any]) -> None:
        getter(m)[key] = value

    return mutate


def delitem(getter: Callable[[dict[str, Any]], Any], key: Any) -> Mutation:
    def mutate(m: dict[str, Any]) -> None:
        del getter(m)[key]

    return mutate


def tensor_of(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda m: desc(m)[name]


D = "dispatchables.op.desc"
CASES: list[tuple[str, str, Mutation, str, str]] = [
    # (id, base model, mutation, JSON path in the message, rule text in the message)
    ("missing-commands", "argmax", delitem(lambda m: m, "commands"), "commands", "required"),
    ("unknown-root-key", "argmax", setitem(lambda m: m, "extra", 1), "extra", "unknown field"),
    (
        "unknown-operator",
        "argmax",
        setitem(lambda m: m["dispatchables"]["op"], "type", "DML_OPERATOR_FOO"),
        "dispatchables.op.type",
        "unknown operator type",
    ),
    (
        "activation-with-axes",
        "argmax",
        setitem(lambda m: m["dispatchables"]["op"], "type", "ACTIVATION_RELU"),
        f"{D}.AxisCount",
        "unknown field of DML_ACTIVATION_RELU_OPERATOR_DESC",
    ),
    ("missing-field", "argmax", delitem(desc, "AxisDirection"), f"{D}.AxisDirection", "required"),
    ("unknown-field", "argmax", setitem(desc, "Axis", 1), f"{D}.Axis", "unknown field"),
    ("uint-as-string", "argmax", setitem(desc, "AxisCount", "1"), f"{D}.AxisCount", "UINT"),
    ("uint-as-float", "argmax", setitem(desc, "Axes", [1.0]), f"{D}.Axes[0]", "UINT"),
    ("negative-axis", "argmax", setitem(desc, "Axes", [-1]), f"{D}.Axes[0]", "does not fit"),
    ("bad-enum", "argmax", setitem(desc, "AxisDirection", "UP"), f"{D}.AxisDirection", "DML_AXIS_DIRECTION"),
    (
        "bad-data-type",
        "argmax",
        setitem(tensor_of("InputTensor"), "DataType", "FLOAT8"),
        f"{D}.InputTensor.DataType",
        "not a supported DML_TENSOR_DATA_TYPE",
    ),
    ("no-sizes", "argmax", delitem(tensor_of("InputTensor"), "Sizes"), f"{D}.InputTensor.Sizes", "required"),
    (
        "nine-dimensions",
        "argmax",
        setitem(tensor_of("InputTensor"), "Sizes", [1] * 9),
        f"{D}.InputTensor.Sizes",
        "1 to 8 dimensions",
    ),
    ("zero-size", "argmax", setitem(tensor_of("InputTensor"), "Sizes", [2, 0]), f"{D}.InputTensor.Sizes[1]", "at least 1"),
    (
        "dimension-count",
        "argmax",
        setitem(tensor_of("InputTensor"), "DimensionCount", 3),
        f"{D}.InputTensor.DimensionCount",
        "DimensionCount is 3",
    ),
    ("strides-count", "argmax", setitem(tensor_of("InputTensor"), "Strides", [1]), f"{D}.InputTensor.Strides", "Sizes 2"),
    (
        "strides-beyond-resource",  # [2, 4] with strides [8, 1] reaches element 11 of an 8-element buffer
        "argmax",
        setitem(tensor_of("InputTensor"), "Strides", [8, 1]),
        "commands[0].bindings.InputTensor",
        "needs 48",
    ),
    (
        "output-strides-overlap",
        "argmax",
        setitem(tensor_of("OutputTensor"), "Strides", [0, 1]),
        f"{D}.OutputTensor.Strides",
        "must not share memory",
    ),
    (
        "alignment-not-power-of-two",
        "argmax",
        setitem(tensor_of("InputTensor"), "GuaranteedBaseOffsetAlignment", 12),
        f"{D}.InputTensor.GuaranteedBaseOffsetAlignment",
        "power of two",
    ),
    (
        "alignment-below-element-size",
        "argmax",
        setitem(tensor_of("InputTensor"), "GuaranteedBaseOffsetAlignment", 2),
        f"{D}.InputTensor.GuaranteedBaseOffsetAlignment",
        "element size (4)",
    ),
    (
        "binding-offset-misaligned",
        "argmax",
        lambda m: (
            tensor_of("InputTensor")(m).update(GuaranteedBaseOffsetAlignment=16, Sizes=[1, 4]),
            tensor_of("OutputTensor")(m).update(Sizes=[1, 1]),
            m["commands"][0]["bindings"].update(InputTensor={"name": "InputTensor", "elementOffset": 1}),
        ),
        "commands[0].bindings.InputTensor",
        "aligned to 16 bytes",
    ),
    (
        "total-size-not-dword",
        "argmax",
        setitem(tensor_of("InputTensor"), "TotalTensorSizeInBytes", 34),
        f"{D}.InputTensor.TotalTensorSizeInBytes",
        "multiple of 4",
    ),
    (
        "total-size-too-small",
        "argmax",
        setitem(tensor_of("InputTensor"), "TotalTensorSizeInBytes", 16),
        f"{D}.InputTensor.TotalTensorSizeInBytes",
        "cannot hold",
    ),
    ("axis-count-mismatch", "argmax", setitem(desc, "AxisCount", 2), f"{D}.AxisCount", "Axes has 1"),
    ("axis-out-of-range", "argmax", setitem(desc, "Axes", [2]), f"{D}.Axes[0]", "out of range"),
    (
        "argmax-input-type",
        "argmax",
        setitem(tensor_of("InputTensor"), "DataType", "FLOAT64"),
        f"{D}.InputTensor.DataType",
        "FLOAT32, FLOAT16, INT64",
    ),
    (
        "argmax-output-type",
        "argmax",
        setitem(tensor_of("OutputTensor"), "DataType", "FLOAT32"),
        f"{D}.OutputTensor.DataType",
        "INT64, INT32, UINT64, UINT32",
    ),
    (
        "argmax-reduced-not-1",
        "argmax",
        setitem(tensor_of("OutputTensor"), "Sizes", [2, 4]),
        f"{D}.OutputTensor.Sizes[1]",
        "reduced axis",
    ),
    (
        "argmax-kept-size",
        "argmax",
        setitem(tensor_of("OutputTensor"), "Sizes", [1, 1]),
        f"{D}.OutputTensor.Sizes[0]",
        "InputTensor.Sizes[0]",
    ),
    ("argmax-rank", "argmax", setitem(tensor_of("OutputTensor"), "Sizes", [2]), f"{D}.OutputTensor.Sizes", "same DimensionCount"),
    ("hardmax-duplicate-axis", "hardmax", setitem(desc, "Axes", [2, 2]), f"{D}.Axes[1]", "more than once"),
    ("hardmax-no-axes", "hardmax", lambda m: desc(m).update(Axes=[], AxisCount=0), f"{D}.Axes", "at least one"),
    (
        "hardmax-int-type",
        "hardmax",
        lambda m: (desc(m)["InputTensor"].update(DataType="INT32"), desc(m)["OutputTensor"].update(DataType="INT32")),
        f"{D}.InputTensor.DataType",
        "FLOAT32, FLOAT16",
    ),
    (
        "hardmax-output-type",
        "hardmax",
        setitem(tensor_of("OutputTensor"), "DataType", "FLOAT16"),
        f"{D}.OutputTensor.DataType",
        "same DataType",
    ),
    ("hardmax-sizes", "hardmax", setitem(tensor_of("OutputTensor"), "Sizes", [2, 2, 1]), f"{D}.OutputTensor.Sizes", "same Sizes"),
    (
        "mvn-rank",
        "mvn",
        lambda m: (desc(m)["InputTensor"].update(Sizes=[2, 2, 2]), desc(m)["OutputTensor"].update(Sizes=[2, 2, 2])),
        f"{D}.InputTensor.Sizes",
        "must have 4 dimensions",
    ),
    (
        "mvn-scale-broadcast",
        "mvn",
        setitem(tensor_of("ScaleTensor"), "Sizes", [1, 3, 1, 1]),
        f"{D}.ScaleTensor.Sizes[1]",
        "or 1 to broadcast",
    ),
    (
        "mvn-scale-type",
        "mvn",
        setitem(tensor_of("ScaleTensor"), "DataType", "FLOAT16"),
        f"{D}.ScaleTensor.DataType",
        "same DataType",
    ),
    ("mvn-null-scale", "mvn", setitem(desc, "ScaleTensor", None), f"{D}.ScaleTensor", "omit the field"),
    ("mvn-bool-as-int", "mvn", setitem(desc, "CrossChannel", 1), f"{D}.CrossChannel", "true or false"),
    ("mvn-epsilon-string", "mvn", setitem(desc, "Epsilon", "small"), f"{D}.Epsilon", "expected a number"),
    (
        "mvn-not-fusable",
        "mvn",
        setitem(desc, "FusedActivation", {"Type": "ACTIVATION_HARDMAX1"}),
        f"{D}.FusedActivation.Type",
        "cannot be a fused activation",
    ),
    (
        "mvn-activation-param",
        "mvn",
        setitem(desc, "FusedActivation", {"Type": "ACTIVATION_ELU"}),
        f"{D}.FusedActivation.Alpha",
        "required",
    ),
    (
        "mvn-activation-tensor",
        "mvn",
        setitem(desc, "FusedActivation", {"Type": "ACTIVATION_RELU", "InputTensor": tensor("FLOAT32", [1])}),
        f"{D}.FusedActivation.InputTensor",
        "must be null",
    ),
    (
        "mvn-softplus-steepness",
        "mvn",
        setitem(desc, "FusedActivation", {"Type": "ACTIVATION_SOFTPLUS", "Desc": {"Steepness": 0.0}}),
        f"{D}.FusedActivation.Desc.Steepness",
        "must not be 0",
    ),
    (
        "one-hot-index-type",
        "one_hot",
        setitem(tensor_of("IndicesTensor"), "DataType", "INT16"),
        f"{D}.IndicesTensor.DataType",
        "INT64, INT32, UINT64, UINT32",
    ),
    (
        "one-hot-value-types",
        "one_hot",
        setitem(tensor_of("ValuesTensor"), "DataType", "INT32"),
        f"{D}.OutputTensor.DataType",
        "same DataType",
    ),
    ("one-hot-axis", "one_hot", setitem(desc, "Axis", 2), f"{D}.Axis", "less than"),
    ("one-hot-axis-size", "one_hot", setitem(desc, "Axis", 0), f"{D}.IndicesTensor.Sizes[0]", "must be 1"),
    (
        "one-hot-other-size",
        "one_hot",
        setitem(tensor_of("OutputTensor"), "Sizes", [3, 4]),
        f"{D}.IndicesTensor.Sizes[0]",
        "OutputTensor.Sizes[0]",
    ),
    (
        "one-hot-one-value",
        "one_hot",
        setitem(tensor_of("ValuesTensor"), "Sizes", [1, 1]),
        f"{D}.ValuesTensor.Sizes",
        "at least 2 elements",
    ),
    # resources, bindings and commands
    (
        "unknown-resource",
        "argmax",
        setitem(lambda m: m["commands"][0]["bindings"], "InputTensor", "nope"),
        "commands[0].bindings.InputTensor",
        "unknown resource",
    ),
    (
        "unknown-bind-point",
        "argmax",
        setitem(lambda m: m["commands"][0]["bindings"], "ATensor", "InputTensor"),
        "commands[0].bindings.ATensor",
        "no bind point",
    ),
    (
        "unbound",
        "argmax",
        delitem(lambda m: m["commands"][0]["bindings"], "InputTensor"),
        "commands[0].bindings.InputTensor",
        "not bound",
    ),
    (
        "buffer-too-small",
        "argmax",
        setitem(lambda m: m["resources"]["InputTensor"]["initialValues"], "valueCount", 7),
        "commands[0].bindings.InputTensor",
        "needs 32",
    ),
    (
        "unknown-dispatchable",
        "argmax",
        setitem(lambda m: m["commands"][0], "dispatchable", "x"),
        "commands[0].dispatchable",
        "unknown dispatchable",
    ),
    ("unknown-command", "argmax", setitem(lambda m: m["commands"][1], "type", "sleep"), "commands[1].type", "unknown command"),
    ("print-unknown", "argmax", setitem(lambda m: m["commands"][2], "resource", "x"), "commands[2].resource", "unknown resource"),
    (
        "write-dims-too-large",
        "argmax",
        setitem(lambda m: m["commands"][1], "dimensions", [3, 3]),
        "commands[1].dimensions",
        "needs more than",
    ),
    (
        "init-integer-float",
        "argmax",
        setitem(lambda m: m["resources"]["OutputTensor"], "initialValues", [0, 1.5]),
        "resources.OutputTensor.initialValues[1]",
        "JSON integer",
    ),
    (
        "init-integer-nan",
        "argmax",
        setitem(lambda m: m["resources"]["OutputTensor"], "initialValues", [0, "nan"]),
        "resources.OutputTensor.initialValues[1]",
        "JSON integer",
    ),
    (
        "init-out-of-range",
        "argmax",
        setitem(lambda m: m["resources"]["OutputTensor"], "initialValues", [0, -1]),
        "resources.OutputTensor.initialValues[1]",
        "does not fit in UINT32",
    ),
    (
        "init-float-word",
        "argmax",
        setitem(lambda m: m["resources"]["InputTensor"], "initialValues", ["one"]),
        "resources.InputTensor.initialValues[0]",
        "inf",
    ),
    (
        "init-empty",
        "argmax",
        setitem(lambda m: m["resources"]["InputTensor"], "initialValues", []),
        "resources.InputTensor.initialValues",
        "non-empty",
    ),
    (
        "init-missing-file",
        "argmax",
        setitem(lambda m: m["resources"]["InputTensor"], "initialValues", {"sourcePath": "missing.npy"}),
        "resources.InputTensor.initialValues.sourcePath",
        "cannot read",
    ),
    (
        "size-in-bytes-small",
        "argmax",
        setitem(lambda m: m["resources"]["InputTensor"], "sizeInBytes", 4),
        "resources.InputTensor.sizeInBytes",
        "too small",
    ),
    (
        "thread-group-count-not-array",
        "argmax",
        setitem(lambda m: m["commands"][0], "threadGroupCount", 4),
        "commands[0].threadGroupCount",
        "",
    ),
    (
        "thread-group-count-four",
        "argmax",
        setitem(lambda m: m["commands"][0], "threadGroupCount", [1, 1, 1, 1]),
        "commands[0].threadGroupCount",
        "1 to 3 thread group counts",
    ),
    (
        "resample-not-an-image",
        "argmax",
        setitem(lambda m: m["resources"]["InputTensor"], "resampleSize", [1, 3, 8, 8]),
        "resources.InputTensor.resampleSize",
        "applies to image initializers only",
    ),
    (
        "resource-unknown-generator",
        "argmax",
        setitem(lambda m: m["resources"]["InputTensor"], "initialValues", {"valueCount": 3}),
        "resources.InputTensor.initialValues",
        "unknown initializer",
    ),
]
