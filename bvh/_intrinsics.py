"""LLVM intrinsics numba does not expose, for the kernels."""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, row):
    """Hint the CPU to load element ``row`` of a 1-D contiguous ``array`` into cache.

    The traversal knows which node pairs it may visit next one step before it
    needs them; a BVH larger than L2 otherwise waits on each level's load in
    turn. A prefetch never faults, so no bounds check is needed.
    """
    if not (isinstance(array, types.Array) and array.ndim == 1 and isinstance(row, types.Integer)):
        return None
    sig = types.void(array, row)

    def codegen(context, builder, signature, args):
        array_type, row_type = signature.args
        ary = context.make_array(array_type)(context, builder, args[0])
        index = context.cast(builder, args[1], row_type, types.intp)
        pointer = cgutils.get_item_pointer(context, builder, array_type, ary, [index], wraparound=False)
        int32 = ir.IntType(32)
        # One declaration serves every element type: cast to a byte pointer.
        pointer = builder.bitcast(pointer, ir.IntType(8).as_pointer())
        fn_type = ir.FunctionType(ir.VoidType(), [pointer.type, int32, int32, int32])
        fn = cgutils.get_or_insert_function(builder.module, fn_type, "llvm.prefetch.p0")
        # read (0), high temporal locality (3), data cache (1)
        builder.call(fn, [pointer, int32(0), int32(3), int32(1)])
        return context.get_dummy_value()

    return sig, codegen
