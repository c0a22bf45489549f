"""`python -m accel_kernel ...` is the `accel` command line."""
import sys

from .cli import main

sys.exit(main())
