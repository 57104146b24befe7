"""Loading the model a command names, with the command line's overrides."""

from __future__ import annotations

import argparse
import sys

from dml2onnx.formats import dxdispatch, onnx_dispatchable


def load(args: argparse.Namespace) -> dxdispatch.Model:
    """The model, with the command line's free dimension overrides and session options."""
    model = dxdispatch.load(args.model, args.feature_level)
    if not args.quiet:
        for note in dxdispatch.reinterpretations(model):
            print(f"dml2onnx: note: {note}", file=sys.stderr)
    onnx_dispatchable.apply_command_line(model.dispatchables, args.free_dim_name, args.free_dim_denotation)
    if hasattr(args, "session_config"):
        onnx_dispatchable.apply_session_options(
            model.dispatchables, args.session_config, args.graph_optimization_level, args.ort_logging_level
        )
    return model
