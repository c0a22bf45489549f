"""`python -m accel_kernel ...` is the `accel` command line."""
import sys

from .cli import command

sys.exit(command())
