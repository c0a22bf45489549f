"""The segmented and rows kernels of the `cuda` target (`codegen.KIND_WRITERS`).

A segmented kernel runs element code over the elements of segments given by offsets (the
element's segment id and its position in the segment are the loops' own indices), writes
its element outputs at each element, and its segmented reductions (`SegReduce`) one value
per segment: `out[s] = op(ne, fold of the segment's elements in order)` (an empty segment
gives `ne`). A rows kernel is the same over rows of one width (`s * width` to
`(s + 1) * width`, no offsets; its reductions are `Reduce`s along the rows).

Each kernel statement gives three `@cuda.jit` kernels with the same parameters, and its host
function launches one of them, chosen per launch from the segment lengths
(`segmented.pick`, `pick_rows`: `choose` on `SegmentStats`):

- `<name>_thread`: one thread per segment, its elements in order, folding from `ne`;
- `<name>_warp`: one warp per segment, 32 elements at a time; each tile folded by shuffles
  over its valid lanes only (`segmented.warp_fold`), then into the segment's run by lane 0;
- `<name>_block`: one block per segment, a tile of `blockDim.x` elements at a time: each
  warp folds its valid lanes, lane 0 puts the warp's fold in shared memory (32 slots), warp
  0 folds the valid warps', thread 0 folds that into the run.

Padding lanes are never folded (no `ne` as padding: a program may pass one that is not
neutral), operand order is kept, and there are no atomics. Every variant works for any grid
and any block size that is a multiple of 32 (at most 1024). The host's checks are `cpu`'s
(`segmented_checks`: a deferred SizeError when an input does not have one value per element).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir import flat as F
from ..cpu.codegen_body import DTYPES, element_type, python_name
from ..cpu.errors import ERR_LENGTH
from ..cpu.scalar_arith import zero_code
from .blocks import numba_type
from .codegen import CudaBody, CudaKernelWriter
from .segmented import KERNEL_VARIANTS, warp_fold


@dataclass(frozen=True)
class Reduction:
    """One reduction of the kernel, as code: its accumulator's name, the value of the
    element folded in, the neutral element, the element type, and the operator's call."""
    name: str
    value: str
    ne: str
    elem: str
    fname: str
    stmt: F.Stmt


@dataclass(frozen=True)
class Parts:
    """What every variant of one kernel statement shares."""
    params: tuple[str, ...]    # after `n`: (`width`,) the inputs' leaves, the outputs, `err`
    start: str                 # the first element of segment `s`
    end: str                   # past its last element
    element: tuple[str, ...]   # the element code and its stores (for element `i`), unindented
    reductions: tuple[Reduction, ...]


def write(writer: CudaKernelWriter) -> tuple[list[str], list[str]]:
    """The lines of the three kernels and of the host function of one kernel statement."""
    kind = writer.op.kind
    aligned = writer.aligned_inputs()
    outputs = list(writer.stmt.targets)
    reductions = [s for s in writer.body if isinstance(s.op, (F.Reduce, F.SegReduce))]
    element_outputs = [t for t in outputs if not any(t in s.targets for s in reductions)]
    body = CudaBody(writer, aligned)
    folds = [(s, body.operator(s)) for s in reductions]
    element = body.element(writer.body, "", segment="s", start="start")
    element += body.store(element_outputs, "")
    reds = [Reduction(python_name(s.targets[0].name),
                      body.value(s.op.values if isinstance(s.op, F.SegReduce) else s.op.arr),
                      body.value(s.op.ne), element_type(s.targets[0].rep), fname, s)
            for s, fname in folds]
    outs = [f"out_{python_name(t.name)}" for t in outputs]
    if kind == "segmented":
        offsets = python_name(writer.offsets_name())
        start, end, sizes = f"{offsets}[s]", f"{offsets}[s + 1]", ["n"]
    else:
        start, end, sizes = "s * width", "start + width", ["n", "width"]
    parts = Parts((*sizes, *writer.param_names(), *outs, "err"), start, end,
                  tuple(element), tuple(reds))
    lines = writer.header()
    types = writer.param_types()
    for variant in KERNEL_VARIANTS:
        name = f"{writer.name}_{variant}"
        writer.module.params[name] = (types[:1] + (("scalar", "i64"),) * (kind == "rows")
                                      + types[1:])
        lines += KERNELS[variant](name, parts, body) + ["", ""]
    return lines[:-2], host(writer, kind, aligned, outputs, reductions, outs)


def _indented(lines: tuple[str, ...], indent: str) -> list[str]:
    return [indent + line for line in lines]


def _call(body: CudaBody, r: Reduction):
    return lambda a, b: body.op_call(r.fname, a, b, r.stmt)


def thread_kernel(name: str, p: Parts, body: CudaBody) -> list[str]:
    lines = ["@cuda.jit", f"def {name}({', '.join(p.params)}):",
             "    for s in range(cuda.grid(1), n, cuda.gridsize(1)):",
             f"        start = {p.start}",
             f"        sg_end = {p.end}"]
    lines += [f"        acc_{r.name} = {r.ne}" for r in p.reductions]
    loop = _indented(p.element, " " * 12)
    loop += [f"            acc_{r.name} = {_call(body, r)(f'acc_{r.name}', r.value)}"
             for r in p.reductions]
    lines += ["        for i in range(start, sg_end):", *(loop or ["            pass"])]
    lines += [f"        out_{r.name}[s] = acc_{r.name}" for r in p.reductions]
    return lines


def _tile(p: Parts, indent: str) -> list[str]:
    """Element `i` of a tile, when it is in the segment: its code and stores, and each
    reduction's value in `x_<name>` (a dummy, never folded, past the segment)."""
    lines = [f"{indent}x_{r.name} = {zero_code(r.elem)}" for r in p.reductions]
    inside = _indented(p.element, indent + "    ")
    inside += [f"{indent}    x_{r.name} = {r.value}" for r in p.reductions]
    if inside:
        lines += [f"{indent}if i < sg_end:", *inside]
    return lines


def warp_kernel(name: str, p: Parts, body: CudaBody) -> list[str]:
    lines = ["@cuda.jit", f"def {name}({', '.join(p.params)}):",
             "    sg_lane = cuda.threadIdx.x % 32",
             "    for s in range(cuda.grid(1) // 32, n, cuda.gridsize(1) // 32):",
             f"        start = {p.start}",
             f"        sg_end = {p.end}"]
    lines += [f"        run_{r.name} = {r.ne}" for r in p.reductions]
    lines += ["        for sg_base in range(start, sg_end, 32):",
              "            i = sg_base + sg_lane",
              "            sg_count = min(sg_end - sg_base, 32)"]
    lines += _tile(p, " " * 12) or ["            pass"]
    for r in p.reductions:
        lines += warp_fold(f"x_{r.name}", "sg_count", _call(body, r), r.elem, " " * 12)
        fold = _call(body, r)(f"run_{r.name}", f"x_{r.name}")
        lines += ["            if sg_lane == 0:", f"                run_{r.name} = {fold}"]
    if p.reductions:
        lines.append("        if sg_lane == 0:")
        lines += [f"            out_{r.name}[s] = run_{r.name}" for r in p.reductions]
    return lines


def block_kernel(name: str, p: Parts, body: CudaBody) -> list[str]:
    lines = ["@cuda.jit", f"def {name}({', '.join(p.params)}):",
             "    sg_tid = cuda.threadIdx.x",
             "    sg_lane = sg_tid % 32",
             "    sg_warp = sg_tid // 32"]
    lines += [f"    wsum_{r.name} = cuda.shared.array(32, numba.{numba_type(DTYPES[r.elem])})"
              for r in p.reductions]
    lines += ["    for s in range(cuda.blockIdx.x, n, cuda.gridDim.x):",
              f"        start = {p.start}",
              f"        sg_end = {p.end}"]
    lines += [f"        run_{r.name} = {r.ne}" for r in p.reductions]
    lines += ["        for sg_base in range(start, sg_end, cuda.blockDim.x):",
              "            i = sg_base + sg_tid"]
    lines += _tile(p, " " * 12) or ["            pass"]
    if p.reductions:
        lines.append("            sg_count = min(max(sg_end - sg_base - sg_warp * 32, 0), 32)")
        for r in p.reductions:          # each warp's valid lanes, into its slot
            lines += warp_fold(f"x_{r.name}", "sg_count", _call(body, r), r.elem, " " * 12)
            lines += ["            if sg_lane == 0:",
                      f"                wsum_{r.name}[sg_warp] = x_{r.name}"]
        lines += ["            cuda.syncthreads()",
                  "            if sg_warp == 0:",      # the warps with valid lanes, in order
                  "                sg_warps = (min(sg_end - sg_base, cuda.blockDim.x) + 31) // 32"]
        for r in p.reductions:
            lines += [f"                y_{r.name} = {zero_code(r.elem)}",
                      "                if sg_lane < sg_warps:",
                      f"                    y_{r.name} = wsum_{r.name}[sg_lane]"]
            lines += warp_fold(f"y_{r.name}", "sg_warps", _call(body, r), r.elem, " " * 16)
            lines += ["                if sg_lane == 0:",
                      f"                    run_{r.name} = "
                      f"{_call(body, r)(f'run_{r.name}', f'y_{r.name}')}"]
        lines += ["            cuda.syncthreads()", "        if sg_tid == 0:"]
        lines += [f"            out_{r.name}[s] = run_{r.name}" for r in p.reductions]
    return lines


KERNELS = {"thread": thread_kernel, "warp": warp_kernel, "block": block_kernel}


def host(writer: CudaKernelWriter, kind: str, aligned: set[str], outputs: list[F.FVar],
         reductions: list[F.Stmt], outs: list[str]) -> list[str]:
    """`cpu`'s sizes and checks, then the variant chosen from the lengths, and its launch."""
    params = [python_name(v.name) for v in writer.inputs]
    lines = [f"def {writer.name}_host({', '.join(params + ['alloc'])}):"]
    lines += writer.size_checks()
    lines.append(f"    n = {writer.size_expr(kind, aligned)}")
    sizes = ["n"]
    if kind == "rows":
        red = next(s for s in writer.body if isinstance(s.op, F.Reduce))
        lines.append(f"    width = {writer.width_expr(red.op.arr, aligned)}")
        sizes.append("width")
    lines.append(f"    err = np.zeros({ERR_LENGTH}, np.int64)")
    shapes = [writer.shape_expr(kind, t, reductions) for t in outputs]
    checks = []
    if kind == "segmented":          # the lengths, on the host: the checks' total, the choice
        offsets = python_name(writer.offsets_name())
        lines += [f"    offsets = device.host({offsets})",
                  "    total = int(offsets[-1]) if offsets.size else 0"]
        checks = writer.segmented_checks(aligned, outputs, reductions)
        checks = [line.replace(f"int({offsets}[-1])", "total") for line in checks]
        shapes = [shape.replace(f"int({offsets}[-1])", "total") for shape in shapes]
    lines += checks
    lines += [f"    {out} = alloc({shape}, {DTYPES[element_type(t.rep)]})"
              for out, shape, t in zip(outs, shapes, outputs)]
    result = f"({', '.join(outs)}{',' if len(outs) == 1 else ''})"
    if checks:      # the outputs, unwritten: their lengths are known, their values not
        lines += ["    if err[0]:", f"        return {result}, err"]
    choice = (f'segmented.pick("{writer.name}", offsets)' if kind == "segmented"
              else f'segmented.pick_rows("{writer.name}", n, width)')
    kernels = ", ".join(f'"{v}": {writer.name}_{v}' for v in KERNEL_VARIANTS)
    lines += [f"    variant = {choice}",
              f"    kernel = {{{kernels}}}[variant]",
              f"    launch(kernel, n, [{', '.join(sizes[1:] + writer.host_args())}], "
              f"[{', '.join(outs)}], err, alloc, grid=segmented.launch_grid(variant, n))",
              f"    return {result}, err"]
    return lines
