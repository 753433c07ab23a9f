"""The scene's top-level tree: a BVH over the objects' world boxes.

Built whole from those boxes alone (binned SAH, one object per leaf, time
proportional to the number of objects; no mesh tree is touched), or refitted
when only some objects moved: their leaves' boxes and their ancestors' are
updated (:func:`bvh.builders.refit.refit_top_level`), O(moved objects times
depth), in the memory of the tree before last when no query reads it
(:mod:`bvh.scene.recycling`). A refitted tree answers as a built one; it only
costs more per ray as boxes grown by the motion overlap, so its SAH cost is
tracked and, past :data:`REBUILD_RATIO` times its cost when built, the scene
builds it anew: at once for a small scene, in the background for a large one
(:mod:`bvh.scene.versions`), the refitted tree answering meanwhile.
"""

import numpy as np

from ..builders.config import BuildConfig
from ..builders.refit import refit_top_level, row_sah_terms
from ..builders.sah import binned_sah_build
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, MAX_X, MIN_X, ROW, WIDTH, collapse_to_wide
from .recycling import Recycled, frozen

#: A mesh whose refitted tree costs more than this times its cost when built
#: (SAH, ``bvh.builders.refit.wide_sah_cost``) is rebuilt in the background, the
#: refitted tree answering until the new one is ready. Refitted trees of
#: moderate deformations stay near 1.0-1.2 (measured on the bunny:
#: ``bench.refit``); past about 1.5 the overlap of boxes grown by the motion
#: costs more per pick than a rebuild costs once. The scene's top level
#: follows the same rule: when only transforms, masks, pickability or names
#: changed, the next snapshot refits the top-level tree to the objects' new
#: boxes, and builds it anew (on the snapshot's thread: it costs milliseconds
#: for 10,000 objects) once the refitted tree costs more than this times its
#: cost when built (``Scene.top_level_cost_ratio``).
REBUILD_RATIO = 1.5

#: One object per top-level leaf: a leaf test costs a whole mesh traversal,
#: so the SAH would rarely pay for sharing one.
TOP_LEVEL_CONFIG = BuildConfig(max_leaf_size=1, min_leaf_size=1)


class TopLevel(Recycled):
    """A top-level tree and what a refit of it needs.

    Attributes
    ----------
    nodes : (R, 32) float32
        Four-wide nodes (:mod:`bvh.walk.nodes`), read-only; their leaves
        index ``order``.
    order : (L,) int32
        The objects of the leaves, leaf by leaf: every live object with a
        finite world box.
    leaf_row, leaf_slot : (O,) int64
        Node row and slot of each object's leaf; row -1 for an object
        outside the tree.
    row_parent, row_parent_slot, row_depth : (R,) int64
        Each row's parent row (-1 for the root), its slot there, its depth.
    cost_terms : (R,) float64
        Each row's share of the SAH sum (:func:`_slot_costs`).
    cost, cost_built : float
        SAH cost of the tree now and when it was built.
    """

    ALIGNED = ("nodes",)

    def __init__(self, nodes: np.ndarray, order: np.ndarray, objects: int):
        self._spares = {}
        self.nodes = frozen(nodes)
        self.order = frozen(order)
        self._index(objects)
        self.cost_terms = _slot_costs(nodes, np.arange(nodes.shape[0]))
        self.cost = _top_cost(nodes, self.cost_terms)
        self.cost_built = self.cost

    @classmethod
    def build(cls, bounds: np.ndarray, live: np.ndarray) -> "TopLevel":
        """The tree over the world boxes ``bounds (O, 2, 3)`` of objects
        ``live (K,)`` whose boxes are finite."""
        return cls.from_boxes(*finite_boxes(bounds, live), bounds.shape[0])

    @classmethod
    def from_boxes(cls, objects: np.ndarray, boxes: np.ndarray, count: int) -> "TopLevel":
        """The tree over ``boxes (K, 6)`` of ``objects (K,)`` among ``count``
        objects (:func:`finite_boxes`)."""
        if objects.size:
            tree = binned_sah_build(boxes, (boxes[:, :3] + boxes[:, 3:]) * 0.5, TOP_LEVEL_CONFIG)
            return cls(collapse_to_wide(tree), objects[tree.order].astype(np.int32), count)
        return cls(np.zeros((1, ROW), np.float32), np.zeros(0, np.int32), count)

    @property
    def traceable(self) -> bool:
        """Whether any object is in the tree."""
        return self.order.shape[0] > 0

    @property
    def cost_ratio(self) -> float:
        """SAH cost now over the cost when built (1.0 for an empty tree)."""
        return self.cost / self.cost_built if self.cost_built > 0.0 else 1.0

    def holds(self, objects: np.ndarray) -> bool:
        """Whether every one of ``objects`` has a leaf in the tree."""
        return not (self.leaf_row[objects] < 0).any()

    def refitted(self, bounds: np.ndarray, moved: np.ndarray) -> "TopLevel | None":
        """This tree with the leaves of objects ``moved`` (sorted, each with a
        leaf: :meth:`holds`) refitted to their world boxes in ``bounds (O,
        2, 3)``, and their ancestors' boxes; its ``cost_ratio`` says how
        much more it costs than this tree when built.
        """
        child = object.__new__(TopLevel)
        child.__dict__.update(self.__dict__)
        child._spares = {}
        nodes = self._writable("nodes")
        written = np.zeros(nodes.shape[0], np.bool_)
        refit_top_level(nodes, nodes.view(np.int32), self.order, bounds, self.leaf_row[moved],
                        self.leaf_slot[moved], self.row_parent, self.row_parent_slot, self.row_depth, written)
        changed = np.flatnonzero(written)
        child.cost_terms = self._replaced(child, "cost_terms", changed, _slot_costs(nodes, changed))
        child.cost = _top_cost(nodes, child.cost_terms)
        child.nodes = frozen(nodes)
        child._spares["nodes"] = (self.nodes, changed)
        return child

    def fits(self, bounds: np.ndarray, objects: np.ndarray) -> bool:
        """Whether this tree is the one of objects ``objects`` (each with a
        leaf: :meth:`holds`) with world boxes ``bounds (O, 2, 3)``: refitting
        their leaves leaves every box as it is, bit for bit."""
        nodes = self.nodes.copy()
        refit_top_level(nodes, nodes.view(np.int32), self.order, bounds, self.leaf_row[objects],
                        self.leaf_slot[objects], self.row_parent, self.row_parent_slot, self.row_depth,
                        np.zeros(nodes.shape[0], np.bool_))
        return np.array_equal(nodes.view(np.int32), self.nodes.view(np.int32))

    def _index(self, objects: int) -> None:
        """Where each object's leaf slot and each row's parent slot are, and
        each row's depth, from the links of ``self.nodes``."""
        links = self.nodes.view(np.int32)
        rows = links.shape[0]
        first = links[:, CHILD_FIRST:CHILD_FIRST + WIDTH]
        count = links[:, CHILD_COUNT:CHILD_COUNT + WIDTH]
        # Row 0 is the root and nobody's child, so first > 0 marks an inner slot.
        parent_row, parent_slot = np.nonzero((count == 0) & (first > 0))
        children = first[parent_row, parent_slot]
        self.row_parent = np.full(rows, -1, np.int64)
        self.row_parent[children] = parent_row
        self.row_parent_slot = np.zeros(rows, np.int64)
        self.row_parent_slot[children] = parent_slot
        # Rows are numbered depth first, each after its parent: one pass in
        # row order sets every depth from its parent's.
        self.row_depth = np.zeros(rows, np.int64)
        level = np.zeros(1, np.int64)
        depth = 0
        while level.size:
            self.row_depth[level] = depth
            is_parent = np.isin(parent_row, level)
            level = children[is_parent]
            depth += 1
            if depth > rows:
                # Only links of a damaged save can do this: a build never makes a cycle.
                raise ValueError("the tree's links form a cycle")
        self.depth = depth - 1
        leaf_row, leaf_slot = np.nonzero(count > 0)
        sizes = count[leaf_row, leaf_slot]
        # Every object of a leaf: its row of order, leaf by leaf.
        positions = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes) \
            + np.repeat(first[leaf_row, leaf_slot], sizes)
        self.leaf_row = np.full(objects, -1, np.int64)
        self.leaf_row[self.order[positions]] = np.repeat(leaf_row, sizes)
        self.leaf_slot = np.zeros(objects, np.int64)
        self.leaf_slot[self.order[positions]] = np.repeat(leaf_slot, sizes)


def finite_boxes(bounds: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(objects (K,), boxes (K, 6))``: those of ``live`` whose world box in
    ``bounds (O, 2, 3)`` is finite, and their boxes (copies)."""
    finite = live[np.isfinite(bounds[live]).all(axis=(1, 2))]
    return finite, bounds[finite].reshape(-1, 6)


def _slot_costs(nodes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(R,) float64: each of ``rows``' share of the SAH sum of
    ``bvh.builders.refit.wide_sah_cost`` (area of each used slot times the top
    level's traversal cost, or its intersection cost per object of a leaf),
    before the division by the root's area."""
    out = np.empty(rows.shape[0])
    row_sah_terms(nodes, nodes.view(np.int32), np.ascontiguousarray(rows, np.int64),
                  TOP_LEVEL_CONFIG.traversal_cost, TOP_LEVEL_CONFIG.intersection_cost, out)
    return out


def _top_cost(nodes: np.ndarray, terms: np.ndarray) -> float:
    """SAH cost of the top-level tree ``nodes``, as ``bvh.builders.refit.wide_sah_cost``
    defines it, from its rows' :func:`_slot_costs`."""
    total = float(terms.sum())
    if total == 0.0:
        return 0.0
    size = nodes[0, MAX_X:CHILD_FIRST].reshape(3, WIDTH).max(axis=1).astype(np.float64) \
        - nodes[0, MIN_X:MAX_X].reshape(3, WIDTH).min(axis=1)
    return TOP_LEVEL_CONFIG.traversal_cost + total / (size[0] * size[1] + size[1] * size[2] + size[2] * size[0])
