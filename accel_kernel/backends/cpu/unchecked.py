"""`load(array, i, ...)`: `array[i, ...]` (one index per dimension), for the compiled code of
the `cpu` target, at indices the generated code knows to be in bounds (`codegen_body.py` and
`scalar_source.py` write the calls; generated modules import this, so numba is imported here
and nowhere on the way of `import accel_kernel`); and `prefetch(array, i)`, a hint that
`array[i]` will be read soon.

numba reads `array[i]` with Python's meaning of a negative `i` (from the end): a compare and
a select per read, unless LLVM proves `i` is never negative, which it cannot for a loop
from a start read out of memory (a segment's `offsets[s]`, a chunk's bounds, a parallel
loop's share). In the segmented sum's inner loop that was three of its five instructions,
and it kept more values live across the loop (spilled, in numba's cached copy of the
kernel: the loop ran 6% slower than the same code compiled in-process). `load` is the
plain read: the address `data + i * stride`, nothing else.

The generated code calls it only where the index is in bounds by construction: an element
index of the kernel's own loops (`0 <= i < n`, or within a segment of offsets that start
at 0, never decrease and end at the values' length, which the host function checks), a
gathered index after its bounds check, and a scalar function's `a[i][j]` after the checks
`scalar_source.py` writes (or inside `for j in range(a.shape[k])`). An accel index is never
read through it unchecked: its meaning (an IndexError, not Python's wraparound) is the
check's.
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def load(typingctx, array, *indices):
    """`array[indices...]`, one index per dimension, without wraparound or bounds check (see
    the module's docstring)."""
    if not (isinstance(array, types.Array) and array.ndim == len(indices)
            and all(isinstance(index, types.Integer) for index in indices)):
        return None

    def codegen(context, builder, signature, args):
        array_type, index_types = signature.args[0], signature.args[1].types
        view = context.make_array(array_type)(context, builder, args[0])
        at = [context.cast(builder, index, index_type, types.intp)
              for index, index_type in zip(cgutils.unpack_tuple(builder, args[1]), index_types)]
        pointer = cgutils.get_item_pointer2(
            context, builder, view.data, cgutils.unpack_tuple(builder, view.shape),
            cgutils.unpack_tuple(builder, view.strides), array_type.layout, at,
            wraparound=False, boundscheck=False)
        return context.unpack_value(builder, array_type.dtype, pointer)

    return array.dtype(array, types.StarArgTuple.from_types(indices)), codegen


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the memory system for the cache line of `array[index]` (LLVM's `prefetch`: a read,
    kept in every cache level); nothing is read, and an address past the array's end is
    harmless (a prefetch never faults).

    A segmented kernel runs each segment's elements in a loop whose trip count is the
    segment's length: with short segments of random lengths, the loop's exit is mispredicted
    once a segment, and the loads issued past it are thrown away with the pipeline, so the
    values stream in less far ahead than the hardware prefetcher alone would keep them. One
    prefetch `PREFETCH_AHEAD` elements past each segment's start keeps them streaming
    (`codegen_body.KernelBody.prefetches`): the segmented sum of 10M values in 1M rows took
    7.0 to 7.2 ms warm and 7.7 cold without it, 5.6 and 6.4 with it (2026-11-25)."""
    if not (isinstance(array, types.Array) and array.ndim == 1
            and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        view = context.make_array(signature.args[0])(context, builder, args[0])
        at = context.cast(builder, args[1], signature.args[1], types.intp)
        address = builder.bitcast(builder.gep(view.data, [at]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [address.type, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # read (0), keep in every level (3), data cache (1)
        builder.call(hint, [address, ir.Constant(i32, 0), ir.Constant(i32, 3),
                            ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen
