"""`load(array, i, ...)`: `array[i, ...]` (one index per dimension), for the compiled code of
the `cpu` target, at indices the generated code knows to be in bounds (`codegen_body.py` and
`scalar_source.py` write the calls; generated modules import this, so numba is imported here
and nowhere on the way of `import accel_kernel`).

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
