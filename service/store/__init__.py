"""Scenes on disk or in an object store: the cache, the edit pipeline, the journal, checkpoints."""
