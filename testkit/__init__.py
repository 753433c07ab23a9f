"""What the tests and the benchmarks share (never installed, run from the repository's root).

- ``testkit.reference``: the slow float64 brute forces every query is checked
  against (``raycast``, ``proximity``, ``lasso``, ``lines``, ``primitives``,
  ``alpha``) and the full-sweep SAH builder (``sweep_builder``);
- ``testkit.meshes``: the sample meshes, the real meshes of ``../shared``, pick rays;
- ``testkit.scenes``: generated scenes (alpha-tested glTF files, random overlap
  shapes, lines and points);
- ``testkit.servers``: a real ``python -m service`` on a free port;
- ``testkit.browser``: a headless Chromium driven by Selenium;
- ``testkit.trimesh_suite``: trimesh's own ray tests on a chosen engine.

``bench/`` imports from here and never from ``tests/``; ``tests/conftest.py``
holds the pytest fixtures.
"""
