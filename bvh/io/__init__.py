"""Files: meshes and scene graphs in, scenes saved and opened (no kernel code)."""
