"""Build options of the mesh BVH, each with its trade-off."""

from dataclasses import dataclass, fields

from .._jit import MAX_DEPTH


@dataclass(frozen=True)
class BuildConfig:
    """How :func:`bvh.build` shapes the tree.

    The surface area heuristic (SAH; Goldsmith and Salmon 1987, binned as in
    Wald 2007) prices a split of a node with area ``A`` into children with
    areas ``A_L, A_R`` and triangle counts ``N_L, N_R`` at
    ``traversal_cost + intersection_cost * (A_L*N_L + A_R*N_R) / A`` and a
    leaf at ``intersection_cost * N``: the expected work for a ray that hits
    the node, the chance of hitting a child being the ratio of surface areas.
    """

    bins: int = 16
    """Candidate split planes per axis are ``bins - 1``. More bins find splits
    closer to the full-sweep optimum; each bin costs a little per node."""

    max_leaf_size: int = 8
    """No leaf holds more triangles than this, whatever the SAH says (except at
    the depth limit). Larger leaves mean fewer nodes but more triangle tests."""

    min_leaf_size: int = 4
    """Nodes of at most this many triangles become leaves without trying a
    split. Raising it saves memory (fewer nodes) and build time."""

    traversal_cost: float = 1.0
    """SAH cost of visiting an inner node (both child box tests), in the units
    of ``intersection_cost``. Higher values give shallower trees with larger
    leaves."""

    intersection_cost: float = 1.0
    """SAH cost of one ray/triangle test."""

    max_depth: int = MAX_DEPTH
    """Nodes at this depth become leaves. It bounds the fixed-size stack of
    the traversal, so it may not exceed ``bvh._jit.MAX_DEPTH``."""

    def __post_init__(self):
        if not isinstance(self.bins, int) or self.bins < 2:
            raise ValueError(f"bins must be an integer >= 2, got {self.bins!r}")
        if not isinstance(self.max_leaf_size, int) or self.max_leaf_size < 1:
            raise ValueError(f"max_leaf_size must be an integer >= 1, got {self.max_leaf_size!r}")
        if not isinstance(self.min_leaf_size, int) or not 1 <= self.min_leaf_size <= self.max_leaf_size:
            raise ValueError(
                f"min_leaf_size must be an integer in [1, max_leaf_size={self.max_leaf_size}], "
                f"got {self.min_leaf_size!r}"
            )
        for name in ("traversal_cost", "intersection_cost"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        if not isinstance(self.max_depth, int) or not 2 <= self.max_depth <= MAX_DEPTH:
            raise ValueError(f"max_depth must be an integer in [2, {MAX_DEPTH}], got {self.max_depth!r}")

    @classmethod
    def from_options(cls, **options) -> "BuildConfig":
        """Make a config from keyword options, refusing unknown names."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown build option {unknown[0]!r}; known options: {', '.join(sorted(known))}")
        return cls(**options)
