"""The operator families: one module per family of DirectML operators (the element-wise
activations share one), each with validate(desc), lower(desc, builder, inputs), reference(desc,
inputs) and its candidate lowerings; registry.py lists them, one typed row each (family.Family).
The schema's support tables check data types and dimension counts before validate runs
(lowering.validate).

An operator with one output returns its value (lower: the ONNX value's name; reference: an
array). One with several (desc.outputs: MAX_POOLING2, BATCH_NORMALIZATION_TRAINING, attention)
returns a dict from each set output field to its value, from both; registry.reference_outputs and
lowering.lower take either."""
