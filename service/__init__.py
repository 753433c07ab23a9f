"""The HTTP picking service over ``bvh.Scene`` (FastAPI): ``python -m service`` runs it.

Layout (``docs/architecture.md``): ``app`` (``create_app``) and ``settings``
(the PICK_* variables); ``api/`` (routes, request and response bodies,
errors, the OpenAPI); ``queries/`` (what a request does, shared by HTTP and
the live channel); ``live/`` (the live channel); ``store/`` (scenes in memory,
on disk or in an object store; the journal); ``ops/`` (metrics, memory,
warm-up, sample scenes).
"""
