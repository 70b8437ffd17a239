import sys

from tracegrad.cli import main

sys.exit(main())
