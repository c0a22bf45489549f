"""Stage `codegen` for the `cpu` target: the Python source of one numba module for a fused
program: a numba `@njit` function per scalar function, one `@njit(parallel=True)` function
per kernel (`prange` over its elements, segments or rows, inner loops sequential) with its
sequential twin `<name>_seq` (`tiers.py`), and for each kernel a plain Python *host
function* that finds the kernel's size, allocates its outputs through the runtime's
allocator, launches one of the twins through the driver's `launch` (by the kernel's work:
`tiers.py`) and hands back its error array (which the driver gives it: the cancel token
watches its cancel slot while the kernel runs, and the kernel's sequential loops poll it,
`polling.py`).

Takes the fused program (`passes/fuse.py`), gives a `Module`: the source and, per kernel
statement, how its host function is called. This module writes the module, each kernel's
`def` line and its host function; the loops inside a kernel, by its kind
(`ir.flat.Kernel.kind`: map, redomap, scan, filter, segmented, rows), are written by
`codegen_body.py`. A push kernel (`xs ++ ys`) is written here whole: one loop per part, each
writing its own range (no branch per element).

The host function checks that every input read at the element index has the kernel's
length; if not, the kernel does not run and its error waits for the host's own checks
(`length_checks`, `ErrorTable.deferred`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from ...ir import flat as F
from ...ir.flat_printer import print_stmt
from ...lang import ast as lang_ast
from ...passes.base import PassContext, PassOutput
from .codegen_body import (DTYPES, KernelBody, element_type, op_reads, python_name,
                           split_at_filter)
from .codegen_hist import fill_stmt, hist_body, hist_host, histogram_stmt
from .errors import ERR_LENGTH, ErrorTable
from .polling import sequential_body
from .python_code import NUMPY
from .scalar_source import free_parameters, scalar_function
from .tiers import LOOP_WEIGHT, PARALLEL, SEQUENTIAL

CHUNKS_PER_THREAD = 4
_DIVIDES = re.compile(r"\btrunc_(div|rem)\(")     # a call of int_division.py's: imported
_LOADS = re.compile(r"\bload\(")                   # a call of unchecked.py's: imported
_PREFETCHES = re.compile(r"\bprefetch\(")           # likewise


@dataclass(frozen=True)
class KernelCode:
    """One kernel's functions in the module and how the host calls it."""
    stmt_id: int
    name: str                   # the @njit kernel; the host function is `<name>_host`
    kind: str
    inputs: tuple[str, ...]     # the accel names the host function takes, in order
    outputs: tuple[F.FVar, ...]
    # the host function takes `launch` and `err` (after `alloc`) from the driver, which
    # watches the cancel slot of `err` while the kernel runs (`polling.py`); else it makes
    # its own error array and launches by itself (the `cuda` target's)
    cancellable: bool = False


@dataclass
class Module:
    source: str
    kernels: dict[int, KernelCode]          # by the kernel statement's id
    errors: ErrorTable
    key: str = ""                           # a hash of the source (the compile cache key)
    program: F.FlatProgram | None = None    # the fused program it was generated from


def generate(program: F.FlatProgram) -> Module:
    """The numba module of a fused program (every kernel statement of every form)."""
    writer = _ModuleWriter()
    for form in program.forms:
        writer.block(form.body)
    source = writer.render()
    return Module(source, writer.kernels, writer.errors,
                  hashlib.sha256(source.encode()).hexdigest()[:16], program)


class CodegenPass:
    """The `codegen` stage: the fused program's numba module (source text; nothing is
    compiled until the `cpu` target runs it)."""
    name = "codegen"
    transforms = True
    kernel_kind = ""                # how a kernel function is described in the log

    def generate(self, program: F.FlatProgram) -> Module:
        return generate(program)

    def run(self, program: F.FlatProgram, ctx: PassContext) -> PassOutput:
        module = self.generate(program)
        for code in module.kernels.values():
            with ctx.log.apply("KERNEL-FUNCTION", f"kernel {code.kind}", changed=(code.stmt_id,),
                               note=f"reads {', '.join(code.inputs) or 'nothing'}; writes "
                                    f"{', '.join(t.name for t in code.outputs) or 'nothing'}"
                               ) as step:
                step.after = f"{code.name} ({self.kernel_kind}host: {code.name}_host)"
        return PassOutput(module)

    def verify(self, module: Module) -> list[str]:
        try:
            compile(module.source, "<codegen>", "exec")
        except SyntaxError as err:
            return [f"generated code does not parse: {err}"]
        return []


CODEGEN = CodegenPass()


class _ModuleWriter:
    """The functions of one generated module. The `cuda` target's writer is a subclass
    (`backends/cuda/codegen.py`): its scalar functions are device functions written with
    the device dialect, and its kernels are written by its own `KernelWriter`."""
    scalar_decorator = "@njit(inline=\"always\")"
    dialect = NUMPY

    def __init__(self) -> None:
        self.errors = ErrorTable()
        self.kernels: dict[int, KernelCode] = {}
        self.functions: list[str] = []
        self.count = 0
        self.histograms = False         # a hist kernel's host needs `histogram.py`

    def block(self, block: F.Block) -> None:
        for stmt in block.stmts:
            if isinstance(stmt.op, F.Kernel):
                self.kernel(stmt)
            else:
                for inner in F.blocks_of(stmt.op):
                    self.block(inner)

    def scalar_fn(self, fn: F.ScalarFn, arg_types: list[Any], base: str) -> tuple[str, Any]:
        self.count += 1
        name = f"{python_name(base)}_f{self.count}"
        free = {v.name: v.rep for v in fn.free}
        source, result = scalar_function(fn, name, arg_types, free, self.errors, self.dialect)
        self.functions.append(self.scalar_decorator + "\n" + source)
        return name, result

    def kernel_function(self, lines: list[str], lean_twin: bool = True) -> None:
        """A kernel function (`lines`: comments, the `PARALLEL` decorator, its `def` and body)
        and its sequential twin `<name>_seq`, the same body under `SEQUENTIAL`, less the
        copies of its loops that pay only at scale (`polling.sequential_body`) unless not
        `lean_twin` (a hist kernel's twin runs its one-row launches at any scale)."""
        at = lines.index(PARALLEL)
        name = lines[at + 1].split("def ", 1)[1].split("(", 1)[0]
        body = sequential_body(lines[at + 2:]) if lean_twin else lines[at + 2:]
        twin = [f"# {name} run sequentially (tiers.py)", SEQUENTIAL,
                lines[at + 1].replace(f"def {name}(", f"def {name}_seq(", 1), *body]
        self.functions += ["\n".join(lines), "\n".join(twin)]

    def kernel(self, stmt: F.Stmt) -> None:
        op = stmt.op
        assert isinstance(op, F.Kernel)
        code = KernelWriter(self, stmt).write()
        self.kernels[stmt.id] = code

    def render(self) -> str:
        head = ['"""Generated by accel_kernel (codegen for the cpu target)."""',
                "import numba", "import numpy as np", "from numba import njit, prange",
                "from accel_kernel.backends.cpu.stop_flag import stop_asked",
                *_unchecked_import(self.functions),
                *(["from accel_kernel.backends.cpu.histogram import (hist_merge, "
                   "hist_partials, hist_rows)"] if self.histograms else []),
                *(["from accel_kernel.backends.cpu.int_division import trunc_div, trunc_rem"]
                  if any(_DIVIDES.search(f) for f in self.functions) else []), "",
                f"CHUNKS_PER_THREAD = {CHUNKS_PER_THREAD}", ""]
        return "\n".join(head) + "\n\n" + "\n\n\n".join(self.functions) + "\n"


class KernelWriter:
    """One kernel statement: its inputs and their leaves, the kernel function (its `def` line;
    its body from `KernelBody`) and its host function."""

    def __init__(self, module: _ModuleWriter, stmt: F.Stmt):
        self.module = module
        self.stmt = stmt
        self.op: F.Kernel = stmt.op        # type: ignore[assignment]
        self.name = self.op.name           # the fuse pass's `k<N>_<kind>`, never an accel name
        self.body = list(self.op.body.stmts)
        self.made = {t.name for s in self.body for t in s.targets}
        self.reps: dict[str, F.Rep] = {}
        self.inputs: list[F.FVar] = []
        self._find_inputs()
        self.host_only: set[str] = set()     # inputs only the host function reads
        if self.op.kind == "hist":      # its destination's replicate is filled by the host
            fill = fill_stmt(self.body)
            self.body = [s for s in self.body if s is not fill]
            if fill is not None:
                read = {v.name for s in self.body for v in op_reads(s.op)}
                self.host_only = {v.name for v in op_reads(fill.op)} - read
        # what the kernel function takes for each input: its leaves (a tuple's parts, a
        # segmented value's offsets and values), named as the scalar functions name them
        self.leaves = {v.name: free_parameters({v.name: v.rep}) for v in self.inputs}
        self.leaf_name = {(p.var, p.path): python_name(p.name)
                          for params in self.leaves.values() for p in params}

    def param_names(self) -> list[str]:
        return [python_name(p.name) for v in self.inputs if v.name not in self.host_only
                for p in self.leaves[v.name]]

    def host_args(self) -> list[str]:
        """The kernel's arguments in the host function, from the whole input values (a
        block read at the element index as its flat values; one that only scalar functions
        read, `xss[q][j]`, with its shape)."""
        out = []
        aligned = self.aligned_inputs()
        for v in self.inputs:
            if v.name in self.host_only:
                continue
            for p in self.leaves[v.name]:
                code = python_name(v.name)
                for step in p.path:
                    code = f"{code}[{step}]" if isinstance(step, int) else f"{code}.{step}"
                if isinstance(p.rep, F.Regular) and p.rep.rank > 1 and v.name in aligned:
                    code += ".reshape(-1)"
                out.append(code)
        return out

    # ------------------------------------------------------------------ inputs
    def _find_inputs(self) -> None:
        seen: set[str] = set()
        for s in self.body:
            for v in op_reads(s.op):
                self.reps[v.name] = v.rep
                if v.name not in self.made and v.name not in seen:
                    seen.add(v.name)
                    self.inputs.append(v)
            for t in s.targets:
                self.reps[t.name] = t.rep

    def aligned_inputs(self) -> set[str]:
        """Inputs read at the element index (the others are used whole)."""
        out = set()
        for s in self.body:
            op = s.op
            if isinstance(op, F.Map):
                out |= {a.name for a in op.args if isinstance(a, F.FVar)}
            elif isinstance(op, F.Project):
                out.add(op.tup.name)
            elif isinstance(op, F.Gather):
                out.add(op.indices.name)
            elif isinstance(op, (F.Values, F.Reshape)):
                out.add(op.arr.name)
            elif isinstance(op, (F.Reduce, F.Scan)):
                out.add(op.arr.name)
            elif isinstance(op, F.Filter):
                out |= {op.keep.name, op.arr.name}
            elif isinstance(op, F.SegReduce):
                out.add(op.values.name)
            elif isinstance(op, F.Library) and op.name == "reduce_by_index":
                out |= {a.name for a in op.args[2:] if isinstance(a, F.FVar)}
        return out - self.made

    # ------------------------------------------------------------------ writing
    def write(self) -> KernelCode:
        kind = self.op.kind
        if kind == "push":
            lines, host = self.push()
        else:
            lines, host = self.loop_kernel(kind)
        self.module.kernel_function(lines, lean_twin=kind != "hist")
        self.module.functions.append("\n".join(host))
        return KernelCode(self.stmt.id, self.name, kind,
                          tuple(v.name for v in self.inputs), self.stmt.targets,
                          cancellable=True)

    def header(self) -> list[str]:
        lines = self.op.lines
        where = f"lines {', '.join(map(str, lines))}" if lines else "no source line"
        out = [f"# kernel {self.op.name} ({self.op.kind}, {where}) fuses:"]
        for s in self.body:
            out += ["#   " + line.strip() for line in print_stmt(s)[:1]]
        return out

    # ------------------------------------------------------------------ push
    def push(self) -> tuple[list[str], list[str]]:
        """`a ++ b`: one loop writes `a` to the front, another `b` after it."""
        (concat,) = self.body
        a, b = concat.op.args
        out = concat.targets[0]
        pa, pb = python_name(a.name), python_name(b.name)
        lines = self.header() + [
            PARALLEL,
            f"def {self.name}(front, back, out):",
            "    n = front.shape[0]",
            "    for i in prange(n):",
            "        out[i] = front[i]",
            "    for i in prange(back.shape[0]):",
            "        out[n + i] = back[i]"]
        params = list(dict.fromkeys([pa, pb]))
        host = [f"def {self.name}_host({', '.join(params + ['alloc', 'launch', 'err'])}):",
                f"    out = alloc(({pa}.shape[0] + {pb}.shape[0],), "
                f"{DTYPES[element_type(out.rep)]})",
                f"    {self.launch('out.shape[0]', f'{pa}, {pb}, out')}",
                "    return (out,), None"]
        return lines, host

    # ------------------------------------------------------------------ loop kernels
    def loop_kernel(self, kind: str) -> tuple[list[str], list[str]]:
        aligned = self.aligned_inputs()
        params = self.param_names()
        outputs = list(self.stmt.targets)
        terminals = [s for s in self.body if _is_terminal(s, kind)]
        reductions = [s for s in terminals if isinstance(s.op, (F.Reduce, F.SegReduce))]
        element_outputs = [t for t in outputs
                           if not any(t in s.targets for s in reductions)]
        lines = self.header()
        lines.append(PARALLEL)
        out_params = [f"out_{python_name(t.name)}" for t in outputs
                      if not (kind in ("redomap", "filter") and _is_scalar_result(t, reductions))]
        if kind == "hist":              # the histogram's rows instead of its result
            result = histogram_stmt(self.body).targets[0]
            element_outputs = [t for t in outputs if t != result]
            out_params = [f"out_{python_name(t.name)}" for t in element_outputs]
        extra = ["starts"] if kind == "filter" and self.compacted(outputs, reductions) else []
        if kind == "hist":              # its rows, and the buckets of a row it reads
            extra = ["part", "buckets"]
        sizes = ["n", "chunks"] + (["width"] if kind == "rows" else [])
        lines.append(f"def {self.name}({', '.join(sizes)}, "
                     f"{', '.join(params + out_params + extra + ['err'])}):")
        body = KernelBody(self, aligned)
        if kind == "map":
            body.map_loop(element_outputs)
        elif kind == "redomap":
            body.redomap(element_outputs, reductions)
        elif kind == "scan":
            body.scan(element_outputs, terminals)
        elif kind == "filter":
            body.filter(element_outputs, reductions)
        elif kind in ("segmented", "rows"):
            body.segmented(kind, element_outputs, reductions)
        elif kind == "hist":
            hist_body(body, element_outputs)
        else:
            raise NotImplementedError(f"cpu: a {kind} kernel is not built yet")
        lines += body.lines or ["    pass"]          # a kernel with nothing left to do
        if kind == "hist":
            self.module.histograms = True
            return lines, hist_host(self, aligned, outputs, out_params)
        host = self.host(kind, aligned, outputs, reductions, out_params)
        return lines, host

    def host(self, kind: str, aligned: set[str], outputs: list[F.FVar],
             reductions: list[F.Stmt], out_params: list[str]) -> list[str]:
        params = [python_name(v.name) for v in self.inputs]
        lines = [f"def {self.name}_host({', '.join(params + ['alloc', 'launch', 'err'])}):"]
        lines += self.size_checks()
        size = self.size_expr(kind, aligned)
        lines.append(f"    n = {size}")
        lines.append("    chunks = min(n, CHUNKS_PER_THREAD * numba.get_num_threads())")
        if kind == "rows":
            red = next(s for s in self.body if isinstance(s.op, F.Reduce))
            lines.append(f"    width = {self.width_expr(red.op.arr, aligned)}")
        lines.append(f"    work = {self.work_expr(kind)}")
        args = self.host_args()
        if kind == "segmented" or self.segment_offsets() is not None:
            checks = self.segmented_checks(aligned, outputs, reductions)
        elif kind in ("map", "redomap", "scan", "filter"):
            checks = self.length_checks(aligned)
        else:
            checks = []
        lines += checks
        if kind == "filter" and self.compacted(outputs, reductions):
            if checks:
                lines += ["    if err[0]:", "        return None, err"]
            lines += self.host_filter(args, outputs, reductions)
            return lines
        for t in outputs:
            if kind in ("redomap", "filter") and _is_scalar_result(t, reductions):
                continue
            lines.append(f"    out_{python_name(t.name)} = alloc("
                         f"{self.shape_expr(kind, t, reductions)}, {DTYPES[element_type(t.rep)]})")
        flat_outs = [f"{p}.reshape(-1)" if isinstance(t.rep, F.Regular) and t.rep.rank > 1
                     else p for p, t in zip(out_params, [t for t in outputs
                                                        if "out_" + python_name(t.name)
                                                        in out_params])]
        sizes = "n, chunks, width" if kind == "rows" else "n, chunks"
        call = self.launch("work", f"{sizes}, {', '.join(args + flat_outs + ['err'])}")
        scalars = [t for t in outputs if kind in ("redomap", "filter")
                   and _is_scalar_result(t, reductions)]
        if checks:      # the outputs, unwritten: their lengths are known, their values not
            unwritten = [f"{DTYPES[element_type(t.rep)]}(0)" if t in scalars
                         else "out_" + python_name(t.name) for t in outputs]
            comma = "," if len(unwritten) == 1 else ""
            lines += ["    if err[0]:", f"        return ({', '.join(unwritten)}{comma}), err"]
        return lines + _call_and_return(call, outputs, scalars)

    def compacted(self, outputs: list[F.FVar], reductions: list[F.Stmt]) -> list[F.FVar]:
        """A filter kernel's outputs written at the kept elements' positions (made after its
        filters): only with some does the kernel have a counting pass and `starts`; values
        made before the filters are written at every element, as a map's are."""
        before, _ = split_at_filter(self.body)
        made_before = {t.name for s in before for t in s.targets}
        return [t for t in outputs if not _is_scalar_result(t, reductions)
                and t.name not in made_before]

    def host_filter(self, args: list[str], outputs: list[F.FVar],
                    reductions: list[F.Stmt]) -> list[str]:
        """Count, allocate the compacted outputs, write."""
        count = self.launch("work", f"n, chunks, {', '.join(args + ['err'])}",
                            f"{self.name}_count")
        lines = [f"    counts = {count}",
                 "    if err[0]:",
                 "        return None, err",
                 "    starts = np.zeros(counts.shape[0] + 1, np.int64)",
                 "    np.cumsum(counts, out=starts[1:])",
                 "    total = int(starts[-1])"]
        outs = []
        for t in outputs:
            p = "out_" + python_name(t.name)
            if _is_scalar_result(t, reductions):
                continue
            lines.append(f"    {p} = alloc({self.shape_expr('filter', t, reductions)}, "
                         f"{DTYPES[element_type(t.rep)]})")
            outs.append(p)
        scalars = [t for t in outputs if _is_scalar_result(t, reductions)]
        call = self.launch("work", f"n, chunks, {', '.join(args + outs + ['starts', 'err'])}")
        return lines + _call_and_return(call, outputs, scalars)

    def launch(self, work: str, args: str, name: str = "") -> str:
        """A launch of the kernel function `name` (the kernel's own by default) on `args`:
        `launch(parallel, sequential, work, args...)`, `tiers.Launcher`."""
        name = name or self.name
        return f"launch({name}, {name}_seq, {work}, {args})"

    def work_expr(self, kind: str) -> str:
        """The work of a launch in elements, as `tiers.py` weighs it: the segments'
        elements, rows times width, else the loop's `n`; times `LOOP_WEIGHT` when a
        scalar function of the kernel has a loop."""
        work = "n"
        if kind == "segmented" or self.segment_offsets() is not None:
            offsets = self.segment_offsets() or self.offsets_name()
            work = f"max(n, int({python_name(offsets)}[-1]))"
        elif kind == "rows":
            work = "n * width"
        return f"{work} * {LOOP_WEIGHT}" if _has_loop(self.stmt) else work

    def size_expr(self, kind: str, aligned: set[str]) -> str:
        """The number of elements (segments, rows) the kernel's parallel loop runs over."""
        if kind == "segmented" or self.segment_offsets() is not None:
            offsets = self.offsets_name()
            return f"{python_name(offsets)}.shape[0] - 1"
        if kind == "rows":
            red = next(s for s in self.body if isinstance(s.op, F.Reduce))
            return self.rows_expr(red.op.arr)
        domain = self.domain()
        if domain is not None:                  # the kernel's own iota or replicate
            return domain
        for v in self.inputs:
            if v.name in aligned:
                return self.leaf_size(v)
        raise NotImplementedError("cpu: a kernel whose size is not known is not built yet")

    def domain(self) -> str | None:
        for s in self.body:
            if isinstance(s.op, (F.Iota, F.Replicate)):
                return _atom_code(s.op.n)
        return None

    def leaf_size(self, v: F.FVar) -> str:
        """The number of elements of an input (of its first leaf: a tuple's parts have one
        length), in the host function."""
        p = self.leaves[v.name][0]
        code = python_name(v.name)
        for step in p.path:
            code = f"{code}[{step}]" if isinstance(step, int) else f"{code}.{step}"
        return f"{code}.size"

    def segmented_checks(self, aligned: set[str], outputs: list[F.FVar],
                         reductions: list[F.Stmt]) -> list[str]:
        """`length_checks` of a segmented kernel: every input read at the element index has
        one value per element of the segments, and a block it makes (a `reshape` of the
        elements) has as many elements as the segments: else the kernel does not run (a
        deferred error), so it never reads or writes past an array's end."""
        total = f"int({python_name(self.offsets_name())}[-1])"
        out = self.length_checks(aligned, total, every=True)
        for t in outputs:
            if isinstance(t.rep, F.Regular) and t.rep.rank > 1 \
                    and not any(t in s.targets for s in reductions):
                code = self.module.errors.code("SizeError", "reshape: rows of different "
                                               "lengths", None)
                self.module.errors.deferred.add(code)
                shape = self.shape_expr("segmented", t, reductions)
                out += [f"    if int(np.prod({shape})) != {total} and not err[0]:",
                        f"        err[0], err[1], err[2] = {code}, {total}, "
                        f"int(np.prod({shape}))"]
        return out

    def length_checks(self, aligned: set[str], count: str = "n",
                      every: bool = False) -> list[str]:
        """Every input read at the element index has the kernel's length. The flattener
        checks these lengths (`assert`) before the statement that reads them, but fusion
        may have moved that statement into a kernel that runs before the check: the kernel
        checks them itself and does not run, so it never reads past an array's end. Its
        error is *deferred* (`ErrorTable.deferred`): the host goes on to the flattener's
        own checks, which raise the interpreter's error; the kernel's SizeError is raised
        only if something reads its outputs first."""
        out: list[str] = []
        read = [v for v in self.inputs if v.name in aligned]
        for v in read if every or self.domain() is not None else read[1:]:  # or the first
            #                                                                     gives n
            reader = next((s for s in self.body if v.name in
                           {a.name for a in op_reads(s.op)}), None)
            what = "map" if reader is None or isinstance(reader.op, F.Map) \
                else type(reader.op).__name__.lower()
            message = what + ": array lengths differ"
            if reader is not None and isinstance(reader.op, F.Library):   # FUSE-HIST's values
                message = f"{reader.op.name}: array lengths differ ({{1}} and {{0}})"
            code = self.module.errors.code("SizeError", message,
                                           reader.span if reader is not None else None)
            self.module.errors.deferred.add(code)
            size = self.leaf_size(v)
            out += [f"    if {size} != {count} and not err[0]:",
                    f"        err[0], err[1], err[2] = {code}, {size}, {count}"]
        return out

    def size_checks(self) -> list[str]:
        """The host's checks of an `iota`/`replicate` extent (SizeError, as the numpy
        target reports it)."""
        out = []
        for s in self.body:
            if isinstance(s.op, (F.Iota, F.Replicate)) and not (
                    isinstance(s.op.n, F.Const) and s.op.n.value >= 0):   # known to be fine
                what = "iota" if isinstance(s.op, F.Iota) else "replicate"
                code = self.module.errors.code("SizeError", what + ": negative size {0}", s.span)
                n = _atom_code(s.op.n)
                out += [f"    if {n} < 0:", f"        err = np.zeros({ERR_LENGTH}, np.int64)",
                        f"        err[0], err[1] = {code}, {n}", "        return None, err"]
        return out

    def segment_offsets(self) -> str | None:
        """A filter kernel that runs segment by segment (FUSE-SEGMENTED-FILTER), or a hist
        kernel made from a segmented one (FUSE-HIST): the descriptor's name; None for
        another kernel."""
        if self.op.kind not in ("filter", "hist"):
            return None
        return next((s.op.offsets.name for s in self.body
                     if isinstance(s.op, (F.SegmentIds, F.SegmentIota))), None)

    def offsets_name(self) -> str:
        for s in self.body:
            if isinstance(s.op, (F.SegReduce, F.SegmentIds, F.SegmentIota)):
                return s.op.offsets.name
        raise NotImplementedError("cpu: a segmented kernel without a descriptor")

    def rows_expr(self, arr: F.FVar) -> str:
        if arr.name not in self.made:
            return f"{python_name(arr.name)}.shape[0]"
        stmt = next(s for s in self.body if arr in s.targets)
        if isinstance(stmt.op, F.Reshape):
            return _atom_code(stmt.op.rows)
        raise NotImplementedError("cpu: the rows of a block made inside a kernel")

    def width_expr(self, arr: F.FVar, aligned: set[str]) -> str:
        if arr.name not in self.made:
            return f"{python_name(arr.name)}.shape[1]"
        total = self.flat_size(aligned)
        return f"({total}) // max(1, {self.rows_expr(arr)})"

    def flat_size(self, aligned: set[str]) -> str:
        """The number of elements of the blocks a rows kernel makes."""
        for v in self.inputs:
            if v.name in aligned:
                return self.leaf_size(v)
        for s in self.body:
            if isinstance(s.op, (F.Iota, F.Replicate)):
                return _atom_code(s.op.n)
        raise NotImplementedError("cpu: a rows kernel whose size is not known")

    def shape_expr(self, kind: str, t: F.FVar, reductions: list[F.Stmt]) -> str:
        """The shape of an output, in the host function."""
        if any(t in s.targets for s in reductions):
            if kind == "segmented":
                return "(n,)"
            if kind == "rows":
                return "(n,)"
            return "()"
        if kind == "filter":
            before, _ = split_at_filter(self.body)
            made_before = {x.name for b in before for x in b.targets}
            offsets = self.segment_offsets()
            every = "(n,)" if offsets is None else f"(int({python_name(offsets)}[-1]),)"
            return every if t.name in made_before else "(total,)"
        rank = t.rep.rank if isinstance(t.rep, F.Regular) else 1
        if kind in ("segmented",):
            total = f"int({python_name(self.offsets_name())}[-1])"     # one per element
            return f"({total},)" if rank == 1 else self.block_shape(t, total)
        if kind == "rows":
            red = next(s for s in self.body if isinstance(s.op, F.Reduce))
            total = f"n * {self.width_expr(red.op.arr, self.aligned_inputs())}"
            if rank == 2:
                return f"(n, {self.width_expr(red.op.arr, self.aligned_inputs())})"
            return f"({total},)"
        if rank == 1:
            return "(n,)"
        return self.block_shape(t)

    def block_shape(self, t: F.FVar, count: str = "n") -> str:
        """The shape of a block the kernel makes: that of the block it is computed from
        element by element, back to an input or a `reshape` (of `count` elements: the
        kernel's size, or a segmented kernel's number of elements)."""
        if t.name not in self.made:
            return f"{python_name(t.name)}.shape"
        stmt = next(s for s in self.body if t in s.targets)
        op = stmt.op
        if isinstance(op, F.Reshape):       # the outer axis split, the inner ones kept
            rows = _atom_code(op.rows)
            if not (isinstance(op.arr.rep, F.Regular) and op.arr.rep.rank > 1):
                return f"({rows}, {count} // max(1, {rows}))"
            inner = self.block_shape(op.arr, count)
            return f"(({rows}, ({inner})[0] // max(1, {rows})) + tuple(({inner})[1:]))"
        sources = [a for a in op_reads(op) if isinstance(a.rep, F.Regular)
                   and a.rep.rank == t.rep.rank]
        if isinstance(op, (F.Map, F.Values)) and sources:
            return self.block_shape(sources[0], count)
        raise NotImplementedError("cpu: the shape of a block made in a kernel")


def _unchecked_import(functions: list[str]) -> list[str]:
    """The import of what the functions call of `unchecked.py` (`load`, `prefetch`)."""
    used = [name for name, pattern in (("load", _LOADS), ("prefetch", _PREFETCHES))
            if any(pattern.search(f) for f in functions)]
    return [f"from accel_kernel.backends.cpu.unchecked import {', '.join(used)}"] if used else []


def _call_and_return(call: str, outputs: list[F.FVar], scalars: list[F.FVar]) -> list[str]:
    """The host function's kernel call (binding the reductions it returns) and its return:
    the outputs in order, reductions as numpy scalars of their type."""
    line = f"    {call}"
    if scalars:
        line = f"    ({', '.join('r_' + python_name(t.name) for t in scalars)},) = {call}"
    results = [f"{DTYPES[element_type(t.rep)]}(r_{python_name(t.name)})" if t in scalars
               else "out_" + python_name(t.name) for t in outputs]
    return [line, f"    return ({', '.join(results)}{',' if len(results) == 1 else ''}), err"]


def _is_terminal(stmt: F.Stmt, kind: str) -> bool:
    op = stmt.op
    if isinstance(op, (F.Reduce, F.SegReduce, F.Scan, F.Filter)):
        return True
    return False


def _is_scalar_result(t: F.FVar, reductions: list[F.Stmt]) -> bool:
    return isinstance(t.rep, F.ScalarRep) and any(t in s.targets for s in reductions)


def _atom_code(a: F.Atom) -> str:
    if isinstance(a, F.Const):
        return repr(a.value)
    return f"int({python_name(a.name)})"


def scalar_functions(stmt: F.Stmt) -> list[F.ScalarFn]:
    """The scalar functions of a kernel statement's operations (its maps', its reductions'
    operators, ...)."""
    return [fn for s in stmt.op.body.stmts for fn in vars(s.op).values()
            if isinstance(fn, F.ScalarFn)]


def _has_loop(stmt: F.Stmt) -> bool:
    """Whether a scalar function of the kernel loops: a `loop`, or an array it reads element
    by element (SEQ-INNER's loops)."""
    return any(any(not isinstance(v.rep, F.ScalarRep) for v in fn.free)
               or any(isinstance(node, lang_ast.Loop) for node in lang_ast.walk(fn.body))
               for fn in scalar_functions(stmt))
