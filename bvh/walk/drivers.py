"""Drivers: the loops that run the steps of many walks.

A walk is a loop of steps (:func:`bvh.walk.traversal.make_step`,
:func:`bvh.walk.traversal.make_instance_step`); a driver decides whose step
runs next. The one here runs two queries in turns, a step each, over a range
of queries: one query's walk is a chain of dependent loads and comparisons,
node after node, and the other's step does not depend on it, so the
processor overlaps the two (measured: 13-20% more rays per second on random
rays than one query at a time).

A query kind is three functions, bound at compile time as the leaf tests
are:

- ``begin(block, lane, i) -> (query, state)`` sets query ``i`` up in the
  lane's scratch ``lane`` (a hit record, say) and returns what its steps
  read and do not change (``query``: its constants, its ``tmin`` or
  window, its ``out``) and the walk's first state;
- ``advance(block, i, query, state, stack) -> (state, done)`` runs one
  step of query ``i``'s walk on the lane's ``stack`` (:func:`new_stack`'s
  ``(first, count, t)``);
- ``finish(block, lane, i, query, state)`` takes query ``i``'s answer from
  the lane's scratch when its walk is done.

``block`` is whatever the three share: the tree's or the scene's arrays,
the queries, the outputs (a named tuple, borrowed: :mod:`bvh.walk.borrow`).

:func:`make_tree_lanes` and :func:`make_instance_lanes` make ``advance``
from a walk's step, and the walk's first state, so that a query kind only
says how a query starts and where its answer goes.
"""

import numpy as np

from .._jit import jit_inline
from .traversal import new_stack


def make_two_lane_driver(begin, advance, finish):
    """``drive(block, lane_a, lane_b, start, end)``: queries ``start`` to
    ``end - 1`` walked two at a time, in turns, a step each (module
    docstring); ``lane_a`` and ``lane_b`` are the two lanes' scratch. Each
    lane takes the next query when its own is done, until none is left.

    Inlined where it is used, with the three functions inlined into it:
    the lanes' states stay in registers, and the code is what the two lanes
    written out by hand compile to."""

    @jit_inline
    def turn(block, lane, stack, i, query, state, next_i, end):
        """One step of the lane's query; if its walk is done, its answer,
        and the next query, if any. Returns the lane's new
        ``(i, query, state, next_i, busy)``."""
        state, done = advance(block, i, query, state, stack)
        busy = True
        if done:
            finish(block, lane, i, query, state)
            if next_i < end:
                i = next_i
                next_i += 1
                query, state = begin(block, lane, i)
            else:
                busy = False
        return i, query, state, next_i, busy

    @jit_inline
    def drive(block, lane_a, lane_b, start, end):
        if start >= end:
            return
        stack_a = new_stack()
        stack_b = new_stack()
        i_a = start
        query_a, state_a = begin(block, lane_a, i_a)
        busy_a = True
        # With one query, lane b starts on the same one and is idle.
        i_b = min(start + 1, end - 1)
        query_b, state_b = begin(block, lane_b, i_b)
        busy_b = start + 1 < end
        next_i = start + 2
        while busy_a or busy_b:
            if busy_a:
                i_a, query_a, state_a, next_i, busy_a = turn(block, lane_a, stack_a, i_a, query_a, state_a, next_i,
                                                             end)
            if busy_b:
                i_b, query_b, state_b, next_i, busy_b = turn(block, lane_b, stack_b, i_b, query_b, state_b, next_i,
                                                             end)

    return drive



def make_tree_lanes(step, begin, finish):
    """:func:`make_two_lane_driver` of the steps ``step`` of one tree's walk
    (:func:`bvh.walk.traversal.make_step`), from the root (row 0) of the
    tree ``block.nodes``, ``block.links``, ``block.tris`` (flat views) up
    to ``block.tmax``.

    ``begin(block, lane, i) -> (consts, tmin, out)``: query ``i``'s
    constants (its setup's), its ``tmin`` (or window) and the leaf test's
    ``out``, the lane's scratch made ready; ``finish(block, lane, i)``:
    its answer from the lane's scratch."""

    @jit_inline
    def start(block, lane, i):
        consts, tmin, out = begin(block, lane, i)
        return (consts, tmin, out), (np.int64(0), np.int64(0), np.int64(0), block.tmax)

    @jit_inline
    def advance(block, i, query, state, stack):
        consts, tmin, out = query
        first, count, sp, tmax = state
        first, count, sp, tmax, done = step(block.nodes, block.links, block.tris, consts, tmin, tmax, first, count, sp,
                                            i, out, stack[0], stack[1], stack[2])
        return (first, count, sp, tmax), done

    @jit_inline
    def end(block, lane, i, query, state):
        finish(block, lane, i)

    return make_two_lane_driver(start, advance, end)


def make_instance_lanes(step, begin, finish):
    """:func:`make_two_lane_driver` of the steps ``step`` of a walk through
    a two-level scene (:func:`bvh.walk.traversal.make_instance_step`): the
    scene ``block.scene``, the queries' six values in ``block.origins`` and
    ``block.directions``, up to ``block.tmax``. ``begin`` and ``finish`` as
    for :func:`make_tree_lanes`, ``consts`` the world query's."""

    @jit_inline
    def start(block, lane, i):
        consts, tmin, out = begin(block, lane, i)
        return (tmin, out), (consts, np.int64(0), np.int64(0), np.int64(0), np.int64(-1), np.int64(-1), block.tmax)

    @jit_inline
    def advance(block, i, query, state, stack):
        tmin, out = query
        consts, first, count, sp, mark, obj, tmax = state
        consts, first, count, sp, mark, obj, tmax, done = step(block.scene, block.origins, block.directions, tmin, i,
                                                               out, stack[0], stack[1], stack[2], consts, first,
                                                               count, sp, mark, obj, tmax)
        return (consts, first, count, sp, mark, obj, tmax), done

    @jit_inline
    def end(block, lane, i, query, state):
        finish(block, lane, i)

    return make_two_lane_driver(start, advance, end)
