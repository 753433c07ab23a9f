"""The HTTP picking service over ``bvh.Scene`` (FastAPI): ``python -m service`` runs it.

Layout: ``settings`` (PICK_* variables), ``store`` (scenes in memory and on
disk), ``schemas`` (request and response bodies), ``routes/`` (one router per
resource), ``picking`` (hit results as JSON or binary records), ``app``
(``create_app``).
"""
