"""The execution targets a program can run on, and which of them are built.

`interp` is the reference interpreter. The compiled targets arrive with later stages of the
compiler; asking for one before it exists raises NotImplementedError naming the feature.
"""
from __future__ import annotations

TARGETS: dict[str, str] = {
    "interp": "the reference interpreter (defines the meaning of programs)",
    "numpy": "the flat segmented IR run with whole-array numpy operations",
    "cpu": "numba-compiled fused kernels on the CPU",
    "cuda": "numba.cuda kernels on an NVIDIA GPU",
}

BUILT: frozenset[str] = frozenset({"interp", "numpy", "cpu"})

_PENDING = {
    "cuda": "it arrives with the numba.cuda back end",
}


def check_target(name: str) -> str:
    """Return `name` if it is a built target; raise otherwise, saying why."""
    if name not in TARGETS:
        raise ValueError(f"unknown target '{name}': choose one of {', '.join(TARGETS)}")
    if name not in BUILT:
        raise NotImplementedError(f"target '{name}' ({TARGETS[name]}) is not built yet: "
                                  f"{_PENDING[name]}; use --target interp")
    return name
