"""Compiler passes after the front end (DESIGN.md, "The pipeline"); see `pipeline`."""
