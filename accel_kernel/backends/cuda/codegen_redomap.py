"""The redomap kernels of the `cuda` target (`codegen.KIND_WRITERS`): a map's element code,
its element-wise outputs stored at `i`, and one or more reductions (`F.Reduce`) of values
the kernel makes, each with its own operator, type and `ne`. Two kernels:

1. `<name>_partials`, over a grid of `device.grid(n)` blocks (any block size that is a
   multiple of 32): each block takes a contiguous range of `k_per` tiles of `blockDim.x`
   elements, runs the element code of each tile (storing the element outputs), reduces the
   tile's values of every reduction (`blocks.counted_reduce`: warp shuffles, one value per
   warp through shared memory, then one warp's shuffles) and folds the tiles in order: one
   partial per block and reduction. The host launches only blocks whose range is not empty.
2. `<name>_final`, one block: the partials of each reduction reduced in order, then
   `op(ne, total)` once (`ne` for an empty input), one value per reduction.

Padding is never filled with `ne` (a program may pass one that is not neutral): a tile's
valid lanes are a prefix of it, and only that many are folded. Operand order is kept (`op`
need only be associative); there are no atomics: the results are the same run to run.
The host function returns the element outputs and each reduction as a numpy scalar of its
type, in the kernel statement's order (as `cpu`'s), with `err`.
"""
from __future__ import annotations

from typing import Any

from ...ir import flat as F
from ..cpu.codegen import _is_scalar_result
from ..cpu.codegen_body import DTYPES, element_type, python_name
from ..cpu.errors import ERR_LENGTH
from ..cpu.scalar_arith import zero_code
from ...lang.scalar_ops import DTYPE_SOURCE
from .blocks import counted_reduce, numba_type
from .codegen import CudaBody

NUMBA = {name: numba_type(source) for name, source in DTYPE_SOURCE.items()}


def write(writer: Any) -> tuple[list[str], list[str]]:
    """The lines of the kernels and of the host function of one kernel statement."""
    return _Redomap(writer).write()


def _out(t: F.FVar) -> str:
    return "out_" + python_name(t.name)


def _tuple(items: list[str]) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


class _Redomap:
    """One redomap kernel statement: its reductions (each with its helpers `<name>_r<k>_*`,
    its operator's device function and the kernel names of the operator's free variables)."""

    def __init__(self, writer: Any):
        self.k = writer
        self.name = writer.name
        self.aligned = writer.aligned_inputs()
        self.outputs = list(writer.stmt.targets)
        self.reductions = [s for s in writer.body if isinstance(s.op, F.Reduce)]
        for s in self.reductions:
            if not _is_scalar_result(s.targets[0], self.reductions):
                raise NotImplementedError("cuda: redomap kernels are not built yet")
        self.elements = [t for t in self.outputs if not _is_scalar_result(t, self.reductions)]
        self.leaf_types = writer.leaf_types()
        self.functions: list[str] = []
        body = CudaBody(writer, self.aligned)
        self.ops: list[tuple[str, str, str]] = []     # (helpers' prefix, operator, free args)
        for r, s in enumerate(self.reductions):
            elem = element_type(s.targets[0].rep)
            if elem not in NUMBA:
                raise NotImplementedError("cuda: redomap kernels are not built yet")
            fname = body.operator(s)
            free = body.free_args(s.op.op)
            p = f"{self.name}_r{r}"
            self.functions.append(counted_reduce(p, fname, NUMBA[elem], len(free)))
            self.ops.append((p, fname, "".join(f"{a}, " for a in free)))

    def elem(self, r: int) -> str:
        return element_type(self.reductions[r].targets[0].rep)

    def write(self) -> tuple[list[str], list[str]]:
        partials = self.partials()
        final, needed = self.final()
        return ["\n\n\n".join(self.functions)], self.host(partials, final, needed)

    def kernel(self, suffix: str, params: list[tuple[str, tuple[str, str]]],
               lines: list[str]) -> str:
        """A `@cuda.jit` kernel with these (name, parameter type) parameters and `err`."""
        kname = f"{self.name}_{suffix}"
        self.k.module.params[kname] = (*[t for _, t in params], ("array", "i64"))
        self.functions.append("\n".join(
            [*self.k.header(), "@cuda.jit",
             f"def {kname}({', '.join([name for name, _ in params] + ['err'])}):", *lines]))
        return kname

    def shared(self) -> list[str]:
        return [f"    k_wsum{r} = cuda.shared.array(32, numba.{NUMBA[self.elem(r)]})"
                for r in range(len(self.reductions))]

    def fold_tile(self, r: int, first: str) -> list[str]:
        """Thread 0 folds the tile's fold `k_t<r>` into the block's `k_acc<r>` (the block's
        first tile starts it)."""
        _, fname, free = self.ops[r]
        return ["        if k_tid == 0:",
                f"            if {first}:",
                f"                k_acc{r} = k_t{r}",
                "            else:",
                f"                k_acc{r} = {fname}(k_acc{r}, k_t{r}, {free}err)"]

    def partials(self) -> str:
        """Each block: its tiles' element code and outputs, one partial per reduction."""
        body = CudaBody(self.k, self.aligned)
        element = body.element(self.k.body, " " * 12) + body.store(self.elements, " " * 12)
        lines = [*self.shared(), "    k_tid = cuda.threadIdx.x",
                 "    k_tiles = (n + cuda.blockDim.x - 1) // cuda.blockDim.x",
                 "    k_first = cuda.blockIdx.x * k_per"]
        lines += [f"    k_acc{r} = {zero_code(self.elem(r))}" for r in range(len(self.ops))]
        lines += ["    for k_tile in range(k_first, min(k_first + k_per, k_tiles)):",
                  "        i = k_tile * cuda.blockDim.x + k_tid",
                  "        k_count = min(n - k_tile * cuda.blockDim.x, cuda.blockDim.x)"]
        lines += [f"        k_x{r} = {zero_code(self.elem(r))}" for r in range(len(self.ops))]
        values = [f"            k_x{r} = {body.value(s.op.arr)}"
                  for r, s in enumerate(self.reductions)]
        lines += ["        if i < n:", *element, *values]
        for r, (p, _, free) in enumerate(self.ops):
            lines.append(f"        k_t{r} = {p}_block_reduce(k_x{r}, k_count, k_wsum{r}, "
                         f"{free}err)")
            lines += self.fold_tile(r, "k_tile == k_first")
        lines.append("    if k_tid == 0:")
        lines += [f"        k_part{r}[cuda.blockIdx.x] = k_acc{r}" for r in range(len(self.ops))]
        params = [("n", ("scalar", "i64")), ("k_per", ("scalar", "i64"))]
        params += list(zip(self.k.param_names(), self.leaf_types))
        params += [(_out(t), ("array", element_type(t.rep))) for t in self.elements]
        params += [(f"k_part{r}", ("array", self.elem(r))) for r in range(len(self.ops))]
        return self.kernel("partials", params, lines)

    def final(self) -> tuple[str, list[int]]:
        """One block: each reduction's partials folded in order, then `op(ne, total)` (`ne`
        when there are none). Takes only the inputs its operators and `ne`s read (the
        indices of those leaves)."""
        body = CudaBody(self.k, self.aligned)
        nes = [body.value(s.op.ne) for s in self.reductions]
        names = {a for s in self.reductions for a in body.free_args(s.op.op)}
        names |= {ne for s, ne in zip(self.reductions, nes) if isinstance(s.op.ne, F.FVar)}
        if names - set(self.k.param_names()):      # a value made in the kernel
            raise NotImplementedError("cuda: redomap kernels are not built yet")
        needed = [k for k, name in enumerate(self.k.param_names()) if name in names]
        lines = [*self.shared(), "    k_tid = cuda.threadIdx.x"]
        lines += [f"    k_acc{r} = {zero_code(self.elem(r))}" for r in range(len(self.ops))]
        lines += ["    for k_base in range(0, k_m, cuda.blockDim.x):",
                  "        k_j = k_base + k_tid",
                  "        k_count = min(k_m - k_base, cuda.blockDim.x)"]
        for r, (p, _, free) in enumerate(self.ops):
            lines += [f"        k_x{r} = {zero_code(self.elem(r))}",
                      "        if k_j < k_m:", f"            k_x{r} = k_part{r}[k_j]",
                      f"        k_t{r} = {p}_block_reduce(k_x{r}, k_count, k_wsum{r}, "
                      f"{free}err)"]
            lines += self.fold_tile(r, "k_base == 0")
        lines.append("    if k_tid == 0:")
        for r, (p, fname, free) in enumerate(self.ops):
            lines += [f"        k_red{r}[0] = {nes[r]}", "        if k_m > 0:",
                      f"            k_red{r}[0] = {fname}({nes[r]}, k_acc{r}, {free}err)"]
        params = [("k_launch", ("scalar", "i64")), ("k_m", ("scalar", "i64"))]
        params += [(self.k.param_names()[k], self.leaf_types[k]) for k in needed]
        params += [(f"k_part{r}", ("array", self.elem(r))) for r in range(len(self.ops))]
        params += [(f"k_red{r}", ("array", self.elem(r))) for r in range(len(self.ops))]
        return self.kernel("final", params, lines), needed

    def host(self, partials: str, final: str, needed: list[int]) -> list[str]:
        k = self.k
        params = [python_name(v.name) for v in k.inputs]
        lines = [f"def {self.name}_host({', '.join(params + ['alloc'])}):"]
        lines += k.size_checks()
        lines.append(f"    n = {k.size_expr('redomap', self.aligned)}")
        lines.append(f"    err = np.zeros({ERR_LENGTH}, np.int64)")
        checks = k.length_checks(self.aligned)
        lines += checks
        for t in self.elements:
            lines.append(f"    {_out(t)} = alloc({k.shape_expr('redomap', t, self.reductions)}, "
                         f"{DTYPES[element_type(t.rep)]})")
        # the outputs, unwritten: their lengths are known, their values not
        unwritten = _tuple([_out(t) if t in self.elements
                            else f"{DTYPES[element_type(t.rep)]}(0)" for t in self.outputs])
        if checks:
            lines += ["    if err[0]:", f"        return {unwritten}, err"]
        parts = [f"k_part{r}" for r in range(len(self.ops))]
        reds = [f"k_red{r}" for r in range(len(self.ops))]
        args = k.host_args()
        needed_args = [args[j] for j in needed]
        lines += ["    k_blocks, k_threads = device.grid(n)",
                  "    k_tiles = -(-n // k_threads)",
                  "    k_per = -(-k_tiles // k_blocks)",
                  "    k_blocks = -(-k_tiles // k_per) if k_per else 0   # none with no tiles"]
        lines += [f"    {part} = alloc((max(k_blocks, 1),), {DTYPES[self.elem(r)]})"
                  for r, part in enumerate(parts)]
        lines += [f"    {red} = alloc((1,), {DTYPES[self.elem(r)]})" for r, red in enumerate(reds)]
        outs = [_out(t) for t in self.elements]
        lines += [f"    launch({partials}, n, [{', '.join(['k_per'] + args)}], "
                  f"[{', '.join(outs + parts)}], err, alloc, grid=(k_blocks, k_threads))",
                  "    if err[0]:",
                  f"        return {unwritten}, err",
                  f"    launch({final}, 1, [{', '.join(['k_blocks'] + needed_args + parts)}], "
                  f"[{', '.join(reds)}], err, alloc, grid=(1, k_threads))"]
        by_target = {s.targets[0].name: r for r, s in enumerate(self.reductions)}
        results = [_out(t) if t in self.elements else
                   f"{DTYPES[element_type(t.rep)]}(device.host(k_red{by_target[t.name]})[0])"
                   for t in self.outputs]
        lines.append(f"    return {_tuple(results)}, err")
        return lines

