"""Benchmarks: each module measures one thing and prints a Markdown table for RESULTS.md."""
