"""Compiler passes after the front end, each a pure function of its input (`base.py`: what a
pass is); `compiler.py`, above this package, runs them in order."""
