"""`stop_asked(err)`: whether the cancel slot of a kernel's error array is set, for the
compiled code of the `cpu` target (`polling.py` writes the calls; generated modules import
this, so numba is imported here and nowhere on the way of `import accel_kernel`).

The flag is written by another thread (the cancel token's `set`) while the loop runs. A
plain read of `err[3]` in a loop that never writes `err` is loop-invariant to LLVM, which
hoists it out of the loop: the loop would never see the flag change. An atomic load
(`monotonic`, a relaxed load: no fence, the same instruction as a plain load on x86 and
ARM) is never hoisted, and costs what a load costs.
"""
from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from . import numba_fixes  # noqa: F401 - the parallel compiler's fix, applied on import
from .errors import CANCEL_SLOT


@intrinsic
def stop_asked(typingctx, err):
    """`err[CANCEL_SLOT] != 0`, read atomically (see the module's docstring)."""
    if not (isinstance(err, types.Array) and err.ndim == 1
            and isinstance(err.dtype, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        (array_type,), (array,) = signature.args, args
        view = context.make_array(array_type)(context, builder, array)
        slot = ir.Constant(ir.IntType(64), CANCEL_SLOT)
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [slot])
        width = context.get_abi_sizeof(context.get_data_type(array_type.dtype))
        value = builder.load_atomic(pointer, "monotonic", width)
        return builder.icmp_signed("!=", value, ir.Constant(value.type, 0))

    return types.boolean(err), codegen
