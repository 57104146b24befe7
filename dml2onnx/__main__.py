import sys

from dml2onnx.commands.cli import main

sys.exit(main())
