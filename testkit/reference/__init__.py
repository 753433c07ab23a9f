"""The slow float64 brute forces (oracles) the engine's answers are checked
against, written independently of ``bvh`` from the papers and specifications,
and the full-sweep SAH builder the binned builder is measured against."""
