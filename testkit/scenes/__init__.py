"""Generated scenes and shapes for the tests and the benchmarks: ``alpha``
(glTF files with alpha-tested materials), ``shapes`` (random overlap shapes
bracketed against the oracle), ``lines_points`` (a random scene of lines,
points and surfaces)."""
