"""The scan and filter kernels of the `cuda` target (`codegen.KIND_WRITERS`): three phases
over a grid of `device.grid(n)` blocks, each block taking a contiguous range of `per` tiles
of `blockDim.x` elements (any block size that is a multiple of 32, any grid):

1. `<name>_partials`: each block runs the element code of its tiles and folds them in order
   (block scans by warp shuffles) into one partial per block;
2. `<name>_carries` (one block): the partials scanned in order, from `ne` (a scan's carry of
   each block), the kept elements counted (a filter's start of each block, its total) and
   its reductions folded from their `ne`;
3. `<name>_apply` (scan) / `<name>_scatter` (filter, only with compacted outputs): each block
   runs its element code again and writes from its carry: `out[i] = op(carry, scan of the
   tile up to i)`, or each kept value at its start plus the exclusive scan of the tile's
   keep flags (a push array: no branch on which half).

Padding is never filled with `ne` (a program may pass one that is not neutral): every value
folded travels as a (flag, value) pair, flag 0 for a lane past `n` or an element a filter
does not keep (`<p>_combine` returns the other value then, and calls `op` only on two
values that are there). `ne` is applied once, at the front, in `<name>_carries`. Operand
order is kept (`op` need only be associative), nothing uses atomics: the results are the
same run to run. Values made before a filter are written at every `i` in phase 1; a filter
kernel with no compacted output stops after phase 2 (counting and reducing only).
"""
from __future__ import annotations

from typing import Any

from ...ir import flat as F
from ..cpu.codegen import _is_scalar_result
from ..cpu.codegen_body import DTYPES, element_type, python_name, split_at_filter
from ..cpu.errors import ERR_LENGTH
from ..cpu.scalar_arith import zero_code
from ...lang.scalar_ops import DTYPE_SOURCE
from .blocks import numba_type, shuffle
from .codegen import CudaBody

FULL = "0xffffffff"
NUMBA = {name: numba_type(source) for name, source in DTYPE_SOURCE.items()}


def write(writer: Any) -> tuple[list[str], list[str]]:
    """The lines of the kernels and of the host function of one kernel statement."""
    if writer.op.kind == "scan":
        return _Scan(writer).write()
    return _Filter(writer).write()


def pair_helpers(p: str, fname: str, elem: str, nfree: int) -> str:
    """`{p}_combine`, `{p}_warp_scan` and `{p}_block_scan` over (flag, value) pairs of the
    operator `fname(a, b, *free, err)` on `elem` values; every thread of the block calls
    `{p}_block_scan` (shuffles and barriers outside any branch). It gives the inclusive and
    exclusive scans up to the thread and the block's total, each a pair."""
    if elem not in NUMBA:
        raise NotImplementedError(f"cuda: scans over `{elem}` values are not built yet")
    free = "".join(f"k_fr{k}, " for k in range(nfree))

    def shfl(kind: str, value: str, delta: str) -> str:
        return shuffle(NUMBA[elem], kind, value, delta)

    steps = []
    for delta in (1, 2, 4, 8, 16):
        steps += [f"    k_of = cuda.shfl_up_sync({FULL}, k_f, {delta})",
                  f"    k_ov = {shfl('up', 'k_v', str(delta))}",
                  f"    if k_lane >= {delta}:",
                  f"        k_f, k_v = {p}_combine(k_of, k_ov, k_f, k_v, {free}err)"]
    return "\n".join([
        "@cuda.jit(device=True)",
        f"def {p}_combine(k_fa, k_a, k_fb, k_b, {free}err):",
        "    # a value whose flag is 0 is not there: the other one is the result",
        "    if k_fa != 0 and k_fb != 0:",
        f"        return numba.int32(1), {fname}(k_a, k_b, {free}err)",
        "    if k_fb != 0:",
        "        return k_fb, k_b",
        "    return k_fa, k_a",
        "", "",
        "@cuda.jit(device=True)",
        f"def {p}_warp_scan(k_f, k_v, k_lane, {free}err):",
        *steps,
        "    return k_f, k_v",
        "", "",
        "@cuda.jit(device=True)",
        f"def {p}_block_scan(k_f, k_v, k_wf, k_wv, {free}err):",
        "    k_lane = cuda.threadIdx.x % 32",
        "    k_warp = cuda.threadIdx.x // 32",
        "    k_warps = cuda.blockDim.x // 32",
        f"    k_f, k_v = {p}_warp_scan(k_f, k_v, k_lane, {free}err)",
        f"    k_ef = cuda.shfl_up_sync({FULL}, k_f, 1)",
        f"    k_ev = {shfl('up', 'k_v', '1')}",
        "    if k_lane == 0:",
        "        k_ef = numba.int32(0)",
        "    if k_lane == 31:",
        "        k_wf[k_warp] = k_f",
        "        k_wv[k_warp] = k_v",
        "    cuda.syncthreads()",
        "    k_sf = numba.int32(0)",
        "    k_sv = k_v",
        "    if k_lane < k_warps:",
        "        k_sf = k_wf[k_lane]",
        "        k_sv = k_wv[k_lane]",
        f"    k_sf, k_sv = {p}_warp_scan(k_sf, k_sv, k_lane, {free}err)",
        f"    k_pf = cuda.shfl_sync({FULL}, k_sf, (k_warp + 31) % 32)",
        f"    k_pv = {shfl('idx', 'k_sv', '(k_warp + 31) % 32')}",
        f"    k_tf = cuda.shfl_sync({FULL}, k_sf, k_warps - 1)",
        f"    k_tv = {shfl('idx', 'k_sv', 'k_warps - 1')}",
        "    cuda.syncthreads()",
        "    if k_warp == 0:",
        "        k_pf = numba.int32(0)",
        f"    k_f, k_v = {p}_combine(k_pf, k_pv, k_f, k_v, {free}err)",
        f"    k_ef, k_ev = {p}_combine(k_pf, k_pv, k_ef, k_ev, {free}err)",
        "    return k_f, k_v, k_ef, k_ev, k_tf, k_tv"])


def _shared(p: str, elem: str) -> list[str]:
    return [f"    k_wf_{p} = cuda.shared.array(32, numba.int32)",
            f"    k_wv_{p} = cuda.shared.array(32, numba.{NUMBA[elem]})"]


TILES = ["    k_tid = cuda.threadIdx.x",
         "    k_first = cuda.blockIdx.x * k_per",
         "    for k_tile in range(k_first, k_first + k_per):",
         "        i = k_tile * cuda.blockDim.x + k_tid"]

PARTS = ["    k_tid = cuda.threadIdx.x",
         "    for k_base in range(0, k_nb, cuda.blockDim.x):",
         "        k_j = k_base + k_tid"]

GRID = ["    k_blocks, k_threads = device.grid(n)",
        "    k_per = (-(-n // k_threads) + k_blocks - 1) // k_blocks"]


class _Kind:
    """What the scan and filter writers share: the kernel's inputs, the operators' pair
    helpers, the kernels' signatures (recorded for the PTX check) and the host's head."""

    def __init__(self, writer: Any):
        self.k = writer
        self.name = writer.name
        self.aligned = writer.aligned_inputs()
        self.outputs = list(writer.stmt.targets)
        self.leaf_types = writer.leaf_types()
        self.functions: list[str] = []

    def body(self) -> CudaBody:
        return CudaBody(self.k, self.aligned)

    def operator(self, stmt: F.Stmt, p: str) -> tuple[str, str]:
        """The pair helpers `p_*` of a scan's or a reduction's operator: (their prefix, the
        free arguments' code in a kernel)."""
        body = self.body()
        fname = body.operator(stmt)
        free = body.free_args(stmt.op.op)
        self.functions.append(pair_helpers(p, fname, element_type(stmt.targets[0].rep),
                                           len(free)))
        return p, "".join(f"{a}, " for a in free)

    def counter(self) -> str:
        """The pair helpers of int64 `+` (the kept elements' count)."""
        p = f"{self.name}_n"
        self.functions.append(f"@cuda.jit(device=True)\ndef {p}_add(a, b, err):\n"
                              "    return a + b")
        self.functions.append(pair_helpers(p, f"{p}_add", "i64", 0))
        return p

    def kernel(self, suffix: str, extra_in: list[tuple[str, str, str]],
               outs: list[tuple[str, str]], lines: list[str]) -> str:
        """A `@cuda.jit` kernel `(k_nb, n, k_per, *leaves, *extra_in, *outs, err)`: `extra_in`
        (name, "array"|"scalar", elem), `outs` (name, elem) arrays."""
        kname = f"{self.name}_{suffix}"
        params = (["k_nb", "n", "k_per"] + self.k.param_names() + [e[0] for e in extra_in]
                  + [o[0] for o in outs] + ["err"])
        self.k.module.params[kname] = (
            ("scalar", "i64"), ("scalar", "i64"), ("scalar", "i64"), *self.leaf_types,
            *[(e[1], e[2]) for e in extra_in], *[("array", o[1]) for o in outs],
            ("array", "i64"))
        self.functions.append("\n".join(
            [*self.k.header(), "@cuda.jit", f"def {kname}({', '.join(params)}):", *lines]))
        return kname

    def host_head(self) -> tuple[list[str], list[str]]:
        """The host function up to its length checks: (its lines, the checks)."""
        params = [python_name(v.name) for v in self.k.inputs]
        lines = [f"def {self.name}_host({', '.join(params + ['alloc'])}):"]
        lines += self.k.size_checks()
        lines.append(f"    n = {self.k.size_expr(self.k.op.kind, self.aligned)}")
        lines.append(f"    err = np.zeros({ERR_LENGTH}, np.int64)")
        checks = self.k.length_checks(self.aligned)
        return lines + checks, checks

    def launch(self, kname: str, extra_in: list[str], outs: list[str], one: bool = False) -> str:
        grid = "(1, k_threads)" if one else "(k_blocks, k_threads)"
        args = ", ".join(["n", "k_per"] + self.k.host_args() + extra_in)
        return (f"launch({kname}, k_blocks, [{args}], [{', '.join(outs)}], err, alloc, "
                f"grid={grid})")


def _out(t: F.FVar) -> str:
    return "out_" + python_name(t.name)


def _tuple(items: list[str]) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


class _Scan(_Kind):
    """An inclusive scan (one `F.Scan`) and the element outputs beside it."""

    def write(self) -> tuple[list[str], list[str]]:
        (scan,) = [s for s in self.k.body if isinstance(s.op, F.Scan)]
        elem = element_type(scan.targets[0].rep)
        zero = zero_code(elem)
        p, free = self.operator(scan, f"{self.name}_s")
        others = [t for t in self.outputs if t.name != scan.targets[0].name]

        def tile(store: bool) -> list[str]:
            """The tile's element values, as pairs, scanned; the element outputs stored."""
            body = self.body()
            code = body.element(self.k.body, " " * 12)
            code += body.store(others, " " * 12) if store else []
            return ["        k_f = numba.int32(0)", f"        k_x = {zero}",
                    "        if i < n:", *code, "            k_f = numba.int32(1)",
                    f"            k_x = {body.value(scan.op.arr)}",
                    f"        k_if, k_iv, k_ef, k_ev, k_tf, k_tv = {p}_block_scan(k_f, k_x, "
                    f"k_wf_{p}, k_wv_{p}, {free}err)"]

        partials = self.kernel("partials", [], [("k_part_f", "i32"), ("k_part_v", elem)], [
            *_shared(p, elem), "    k_rf = numba.int32(0)", f"    k_rv = {zero}", *TILES,
            *tile(False),
            f"        k_rf, k_rv = {p}_combine(k_rf, k_rv, k_tf, k_tv, {free}err)",
            "    if k_tid == 0:", "        k_part_f[cuda.blockIdx.x] = k_rf",
            "        k_part_v[cuda.blockIdx.x] = k_rv"])
        ne = self.body().value(scan.op.ne)
        carries = self.kernel("carries", [("k_part_f", "array", "i32"),
                                          ("k_part_v", "array", elem)], [("k_carries", elem)], [
            *_shared(p, elem), "    k_rf = numba.int32(1)", f"    k_rv = {ne}", *PARTS,
            "        k_f = numba.int32(0)", f"        k_x = {zero}",
            "        if k_j < k_nb:", "            k_f = k_part_f[k_j]",
            "            k_x = k_part_v[k_j]",
            f"        k_if, k_iv, k_ef, k_ev, k_tf, k_tv = {p}_block_scan(k_f, k_x, "
            f"k_wf_{p}, k_wv_{p}, {free}err)",
            "        if k_j < k_nb:",
            f"            k_cf, k_cv = {p}_combine(k_rf, k_rv, k_ef, k_ev, {free}err)",
            "            k_carries[k_j] = k_cv",
            f"        k_rf, k_rv = {p}_combine(k_rf, k_rv, k_tf, k_tv, {free}err)"])
        outs = [(_out(scan.targets[0]), elem)] + [(_out(t), element_type(t.rep)) for t in others]
        apply = self.kernel("apply", [("k_carries", "array", elem)], outs, [
            *_shared(p, elem), "    k_run = k_carries[cuda.blockIdx.x]", *TILES, *tile(True),
            "        if i < n:",
            f"            {_out(scan.targets[0])}[i] = {self.op_call(scan, 'k_run', 'k_iv')}",
            "        if k_tf != 0:",
            f"            k_run = {self.op_call(scan, 'k_run', 'k_tv')}"])
        return ["\n\n\n".join(self.functions)], self.host(elem, partials, carries, apply)

    def op_call(self, stmt: F.Stmt, a: str, b: str) -> str:
        body = self.body()
        return body.op_call(body.operator(stmt), a, b, stmt)

    def host(self, elem: str, partials: str, carries: str, apply: str) -> list[str]:
        lines, checks = self.host_head()
        outs = [_out(t) for t in self.outputs]
        for t, out in zip(self.outputs, outs):
            lines.append(f"    {out} = alloc({self.k.shape_expr('scan', t, [])}, "
                         f"{DTYPES[element_type(t.rep)]})")
        if checks:      # the outputs, unwritten: their lengths are known, their values not
            lines += ["    if err[0]:", f"        return {_tuple(outs)}, err"]
        dtype = DTYPES[elem]
        (scan,) = [s for s in self.k.body if isinstance(s.op, F.Scan)]
        first = [_out(scan.targets[0])] + [o for o in outs if o != _out(scan.targets[0])]
        lines += ["    if n > 0:", *["    " + g for g in GRID],
                  "        k_part_f = alloc((k_blocks,), np.int32)",
                  f"        k_part_v = alloc((k_blocks,), {dtype})",
                  "        " + self.launch(partials, [], ["k_part_f", "k_part_v"]),
                  f"        k_carries = alloc((k_blocks,), {dtype})",
                  "        " + self.launch(carries, ["k_part_f", "k_part_v"], ["k_carries"],
                                          one=True),
                  "        " + self.launch(apply, ["k_carries"], first),
                  f"    return {_tuple(outs)}, err"]
        return lines


class _Filter(_Kind):
    """Element code before the filters (outputs over all elements), the keep flags, the
    values written at the kept elements' positions and reductions over kept (or all)
    elements."""

    def write(self) -> tuple[list[str], list[str]]:
        k = self.k
        body_stmts = k.body
        reductions = [s for s in body_stmts if isinstance(s.op, F.Reduce)]
        filters = [s for s in body_stmts if isinstance(s.op, F.Filter)]
        before, after = split_at_filter(body_stmts)
        made_before = {t.name for s in before for t in s.targets}
        full = [t for t in self.outputs if t.name in made_before
                and not _is_scalar_result(t, reductions)]
        compacted = k.compacted(self.outputs, reductions)
        over_all = {s.id for s in reductions if s in before}
        c = self.counter()
        reds = []                                   # (stmt, prefix, free, elem)
        for r, s in enumerate(reductions):
            p, free = self.operator(s, f"{self.name}_r{r}")
            reds.append((s, p, free, element_type(s.targets[0].rep)))

        def element(write_full: bool) -> list[str]:
            """The element's keep flag `k_keep`, its reductions' pairs and its compacted
            values (`k_o<j>`), for i < n."""
            body = self.body()
            out = ["        k_keep = numba.int64(0)"]
            out += [f"        k_f{r} = numba.int32(0)\n        k_x{r} = {zero_code(e)}"
                    for r, (_, _, _, e) in enumerate(reds)]
            out += [f"        k_o{j} = {zero_code(element_type(t.rep))}"
                    for j, t in enumerate(compacted)]
            code = body.element(before, " " * 12)
            code += body.store(full, " " * 12) if write_full else []
            for r, (s, _, _, _) in enumerate(reds):
                if s.id in over_all:
                    code += [f"            k_f{r} = numba.int32(1)",
                             f"            k_x{r} = {body.value(s.op.arr)}"]
            test = body.value(filters[0].op.keep)
            for f in filters:               # a kept value is the element itself
                body.locals[f.targets[0].name] = body.value(f.op.arr)
            kept = ["                k_keep = numba.int64(1)"]
            kept += body.element(after, " " * 16)
            for r, (s, _, _, _) in enumerate(reds):
                if s.id not in over_all:
                    kept += [f"                k_f{r} = numba.int32(1)",
                             f"                k_x{r} = {body.value(s.op.arr)}"]
            kept += [f"                k_o{j} = {body.locals[t.name]}"
                     for j, t in enumerate(compacted)]
            return out + ["        if i < n:", *code, f"            if {test}:", *kept]

        shared = _shared(c, "i64") + [x for _, p, _, e in reds for x in _shared(p, e)]
        scan_count = (f"        k_if, k_iv, k_ef, k_ev, k_tf, k_tv = {c}_block_scan("
                      f"numba.int32(1), k_keep, k_wf_{c}, k_wv_{c}, err)")
        lines = [*shared, "    k_count = numba.int64(0)"]
        lines += [f"    k_rf{r} = numba.int32(0)\n    k_rv{r} = {zero_code(e)}"
                  for r, (_, _, _, e) in enumerate(reds)]
        lines += [*TILES, *element(True), scan_count, "        k_count += k_tv"]
        for r, (_, p, free, _) in enumerate(reds):
            lines += [f"        k_a, k_b, k_c, k_d, k_tf, k_tv = {p}_block_scan(k_f{r}, k_x{r}, "
                      f"k_wf_{p}, k_wv_{p}, {free}err)",
                      f"        k_rf{r}, k_rv{r} = {p}_combine(k_rf{r}, k_rv{r}, k_tf, k_tv, "
                      f"{free}err)"]
        lines += ["    if k_tid == 0:", "        k_part_n[cuda.blockIdx.x] = k_count"]
        for r in range(len(reds)):
            lines += [f"        k_part_f{r}[cuda.blockIdx.x] = k_rf{r}",
                      f"        k_part_v{r}[cuda.blockIdx.x] = k_rv{r}"]
        parts = [("k_part_n", "i64")] + [x for r, (_, _, _, e) in enumerate(reds)
                                       for x in ((f"k_part_f{r}", "i32"), (f"k_part_v{r}", e))]
        partials = self.kernel("partials", [], [(_out(t), element_type(t.rep)) for t in full]
                               + parts, lines)

        # one block: each block's start, the count, the reductions folded from their `ne`
        body = self.body()
        lines = [*shared, "    k_run = numba.int64(0)"]
        lines += [f"    k_rf{r} = numba.int32(1)\n    k_rv{r} = {body.value(s.op.ne)}"
                  for r, (s, _, _, _) in enumerate(reds)]
        lines += ["    k_tid = cuda.threadIdx.x",
                  "    k_parts = k_nb if n > 0 else 0",
                  "    for k_base in range(0, k_parts, cuda.blockDim.x):",
                  "        k_j = k_base + k_tid",
                  "        k_keep = numba.int64(0)"]
        lines += [f"        k_f{r} = numba.int32(0)\n        k_x{r} = {zero_code(e)}"
                  for r, (_, _, _, e) in enumerate(reds)]
        lines += ["        if k_j < k_parts:", "            k_keep = k_part_n[k_j]"]
        lines += [f"            k_f{r} = k_part_f{r}[k_j]\n            k_x{r} = k_part_v{r}[k_j]"
                  for r in range(len(reds))]
        lines += [scan_count, "        if k_j < k_parts:",
                  "            k_starts[k_j] = k_run + (k_ev if k_ef != 0 else 0)",
                  "        k_run += k_tv"]
        for r, (_, p, free, _) in enumerate(reds):
            lines += [f"        k_a, k_b, k_c, k_d, k_tf, k_tv = {p}_block_scan(k_f{r}, k_x{r}, "
                      f"k_wf_{p}, k_wv_{p}, {free}err)",
                      f"        k_rf{r}, k_rv{r} = {p}_combine(k_rf{r}, k_rv{r}, k_tf, k_tv, "
                      f"{free}err)"]
        lines += ["    if k_tid == 0:", "        k_total[0] = k_run"]
        lines += [f"        k_red{r}[0] = k_rv{r}" for r in range(len(reds))]
        carries = self.kernel("carries", [(n, "array", e) for n, e in parts],
                              [("k_starts", "i64"), ("k_total", "i64")]
                              + [(f"k_red{r}", e) for r, (_, _, _, e) in enumerate(reds)], lines)

        scatter = None
        if compacted:
            lines = [*shared, "    k_pos = k_starts[cuda.blockIdx.x]", *TILES, *element(False),
                     scan_count, "        if k_keep != 0:",
                     "            k_at = k_pos + (k_ev if k_ef != 0 else 0)"]
            lines += [f"            {_out(t)}[k_at] = k_o{j}" for j, t in enumerate(compacted)]
            lines += ["        k_pos += k_tv"]
            scatter = self.kernel("scatter", [("k_starts", "array", "i64")],
                                  [(_out(t), element_type(t.rep)) for t in compacted], lines)
        return ["\n\n\n".join(self.functions)], self.host(reductions, reds, full, compacted, parts,
                                         partials, carries, scatter)

    def host(self, reductions: list[F.Stmt], reds: list, full: list[F.FVar],
             compacted: list[F.FVar], parts: list[tuple[str, str]], partials: str,
             carries: str, scatter: str | None) -> list[str]:
        lines, checks = self.host_head()
        scalars = [t for t in self.outputs if _is_scalar_result(t, reductions)]
        if compacted and checks:
            lines += ["    if err[0]:", "        return None, err"]
        for t in full:
            lines.append(f"    {_out(t)} = alloc({self.k.shape_expr('filter', t, reductions)}, "
                         f"{DTYPES[element_type(t.rep)]})")
        if checks and not compacted:    # the outputs, unwritten
            unwritten = [f"{DTYPES[element_type(t.rep)]}(0)" if t in scalars else _out(t)
                         for t in self.outputs]
            lines += ["    if err[0]:", f"        return {_tuple(unwritten)}, err"]
        lines += GRID
        lines += [f"    {name} = alloc((k_blocks,), {DTYPES[e]})" for name, e in parts]
        lines += ["    if n > 0:      # else no partials: the carries kernel reads none",
                  "        " + self.launch(partials, [], [_out(t) for t in full]
                                          + [name for name, _ in parts])]
        reds_out = [f"k_red{r}" for r in range(len(reds))]
        lines += ["    k_starts = alloc((k_blocks,), np.int64)",
                  "    k_total = alloc((1,), np.int64)"]
        lines += [f"    k_red{r} = alloc((1,), {DTYPES[e]})" for r, (_, _, _, e) in enumerate(reds)]
        lines.append("    " + self.launch(carries, [name for name, _ in parts],
                                          ["k_starts", "k_total"] + reds_out, one=True))
        if compacted:
            lines += ["    if err[0]:", "        return None, err",
                      "    total = int(device.host(k_total)[0])"]
            for t in compacted:
                lines.append(f"    {_out(t)} = alloc("
                             f"{self.k.shape_expr('filter', t, reductions)}, "
                             f"{DTYPES[element_type(t.rep)]})")
            lines.append("    if total > 0:")
            lines.append("        " + self.launch(scatter, ["k_starts"],
                                                  [_out(t) for t in compacted]))
        by_target = {s.targets[0].name: r for r, (s, _, _, _) in enumerate(reds)}
        results = [f"{DTYPES[element_type(t.rep)]}(device.host(k_red{by_target[t.name]})[0])"
                   if t in scalars else _out(t) for t in self.outputs]
        lines.append(f"    return {_tuple(results)}, err")
        return lines
