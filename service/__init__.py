"""The HTTP picking service over ``bvh.Scene`` (FastAPI). Not built yet: see ``python -m service``."""
