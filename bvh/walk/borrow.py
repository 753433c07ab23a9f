"""Borrowed views: arrays handed down a walk without numba counting references.

numba counts a reference to every array handed to an inlined function, at
each call: an atomic increment on entry, a decrement on exit. Its pass that
removes matched pairs (``refprune``) gives up across loops and branches, and
a scene walk takes some twenty-six arrays (the scene's fifteen, the alpha
test's seven, the origins, the hit record, the stack) and calls leaf tests
inside loops: measured, 26 increments at the top of every ray, as many
decrements at its end, and ten more of each around every leaf.

A *borrowed* view is the same array with no owner (a null ``meminfo``), for
which numba's increment and decrement do nothing. It is only safe while
someone else holds the array: the block kernels borrow their own arguments,
which their caller holds for the whole call, and never keep a view past it.
"""

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _borrow(context, builder, kind, value):
    if isinstance(kind, types.Array):
        view = context.make_array(kind)(context, builder, value=value)
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        return view._getvalue()
    if isinstance(kind, types.BaseTuple):
        for k, member in enumerate(kind):
            part = _borrow(context, builder, member, builder.extract_value(value, k))
            value = builder.insert_value(value, part, k)
        return value
    return value


@intrinsic
def borrowed(typingctx, value):
    """``value`` (an array, or a tuple or named tuple of arrays and scalars,
    nested) with every array a borrowed view: same type, same data."""
    def codegen(context, builder, signature, args):
        return _borrow(context, builder, signature.args[0], args[0])

    return value(value), codegen


def frame_array(count, dtype):
    """An intrinsic making an uninitialised ``(count,)`` array of ``dtype`` in
    the calling kernel's stack frame: no allocation and no owner, so nothing
    to count. For fixed-size scratch (a traversal stack, a hit record) that
    never outlives the kernel that makes it; each call site has its own."""
    element = numba.from_dtype(np.dtype(dtype))
    array_type = types.Array(element, 1, "C")

    @intrinsic
    def make(typingctx):
        def codegen(context, builder, signature, args):
            item = context.get_data_type(element)
            size = context.get_abi_sizeof(item)
            array = context.make_array(array_type)(context, builder)
            context.populate_array(array, data=cgutils.alloca_once(builder, item, size=count),
                                   shape=[context.get_constant(types.intp, count)],
                                   strides=[context.get_constant(types.intp, size)],
                                   itemsize=context.get_constant(types.intp, size), meminfo=None)
            return array._getvalue()

        return array_type(), codegen

    return make
