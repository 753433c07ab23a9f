"""The official Python client of the bvh-pick service.

``Client`` (synchronous) and ``AsyncClient`` (asyncio) call every route over
httpx; batches take and give numpy arrays, in the binary ``.bin`` form when
large; ``Client.live`` / ``AsyncClient.live`` open a scene's live channel
(picks, edits, events, resync) on the ``websockets`` library. Writes carry an
``Idempotency-Key`` and are retried on connection errors and 503.
"""

#: The client's version: the API version (the service's OpenAPI ``info.version``) it speaks.
__version__ = "0.1.0"

from .arrays import BatchHits, ClosestPoints, Containment, SphereHits  # noqa: E402
from .client import AsyncClient, Client  # noqa: E402
from .live import AsyncLiveChannel, LiveChannel, LiveEvent, ObjectTable, Resync  # noqa: E402
from .models import (AllHits, CameraPickHit, EditResult, ObjectList, ObjectsPage, PickHit, Scene,  # noqa: E402
                     SceneObject, SceneSummary, Selection, VerticesResult)
from .transport import ApiError, RetryPolicy  # noqa: E402

__all__ = ["AllHits", "ApiError", "AsyncClient", "AsyncLiveChannel", "BatchHits", "CameraPickHit", "Client",
           "ClosestPoints", "Containment", "EditResult", "LiveChannel", "LiveEvent", "ObjectList", "ObjectTable",
           "ObjectsPage", "PickHit", "Resync", "RetryPolicy", "Scene", "SceneObject", "SceneSummary", "Selection",
           "SphereHits", "VerticesResult"]
