"""The official TypeScript client (``clients/typescript``): its node:test suite against a real
``python -m service``.

``npm ci`` installs the packages ``package-lock.json`` pins (cached in
``clients/typescript/node_modules``, gitignored, until the lock file changes); ``npm test`` builds
the client (its types generated from the checked-in ``openapi.json``, then ``tsc --strict``) and
runs ``clients/typescript/test/*.test.ts``: HTTP calls and the ``.bin`` operations, idempotency
keys, the live channel (paging, reconnect, resync after overflow), and that ``openapi.json`` and
the types made from it are the live service's. The service runs with an API key,
``PICK_INLINE_OBJECTS=5`` (a hello lists 5 objects, the client pages the rest) and
``PICK_LIVE_QUEUE=8`` (a stalled client is owed a resync soon).
"""

import os
import re

import pytest

from testkit import node
from testkit.servers import free_port, start_server, stop

pytestmark = pytest.mark.skipif(node.missing_node() is not None, reason=node.missing_node() or "")

TOKEN = "ts-client-test-key"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """Base URL of a real service for the suite."""
    data = tmp_path_factory.mktemp("ts-client-service")
    port = free_port()
    process = start_server(data, port, settings={"PICK_API_KEY": TOKEN, "PICK_INLINE_OBJECTS": "5",
                                                 "PICK_LIVE_QUEUE": "8"})
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


def test_the_typescript_client_suite_passes_against_a_live_service(service):
    node.install()
    done = node.npm("test", env=dict(os.environ, PICK_URL=service, PICK_TOKEN=TOKEN))
    print(done.stdout)
    counts = {name: int(value) for name, value in re.findall(r"ℹ (tests|pass|fail|skipped|cancelled) (\d+)", done.stdout)}
    assert done.returncode == 0, done.stdout
    assert counts.get("fail") == 0 and counts.get("cancelled") == 0 and counts.get("skipped") == 0, counts
    assert counts.get("pass", 0) >= 22, counts
