"""Lets these example tests import the tutorial programs in examples/ (swish.py, ...)."""

import sys
from pathlib import Path

EXAMPLES = str(Path(__file__).resolve().parent.parent)
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)
