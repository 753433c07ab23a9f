"""A scene: instanced meshes, shapes, lines and points under a two-level BVH (no kernel code)."""
