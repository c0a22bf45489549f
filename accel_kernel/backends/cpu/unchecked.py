"""`load(array, i)`: `array[i]` of a one-dimensional array, for the compiled code of the `cpu`
target, at an index the generated code knows to be in bounds (`codegen_body.py` writes the
calls; generated modules import this, so numba is imported here and nowhere on the way of
`import accel_kernel`).

numba reads `array[i]` with Python's meaning of a negative `i` (from the end): a compare and
a select per read, unless LLVM proves `i` is never negative, which it cannot for a loop
from a start read out of memory (a segment's `offsets[s]`, a chunk's bounds, a parallel
loop's share). In the segmented sum's inner loop that was three of its five instructions,
and it kept more values live across the loop (spilled, in numba's cached copy of the
kernel: the loop ran 6% slower than the same code compiled in-process). `load` is the
plain read: the address `data + i * stride`, nothing else.

The generated code calls it only where the index is in bounds by construction: an element
index of the kernel's own loops (`0 <= i < n`, or within a segment of offsets that start
at 0, never decrease and end at the values' length, which the host function checks), and
a gathered index after its bounds check. An accel index is never read through it
unchecked: its meaning (an IndexError, not Python's wraparound) is the gather's check.
"""
from __future__ import annotations

from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def load(typingctx, array, index):
    """`array[index]` without wraparound or bounds check (see the module's docstring)."""
    if not (isinstance(array, types.Array) and array.ndim == 1
            and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        (array_type, index_type), (value, i) = signature.args, args
        view = context.make_array(array_type)(context, builder, value)
        i = context.cast(builder, i, index_type, types.intp)
        pointer = cgutils.get_item_pointer2(
            context, builder, view.data, cgutils.unpack_tuple(builder, view.shape),
            cgutils.unpack_tuple(builder, view.strides), array_type.layout, [i],
            wraparound=False, boundscheck=False)
        return context.unpack_value(builder, array_type.dtype, pointer)

    return array.dtype(array, index), codegen
