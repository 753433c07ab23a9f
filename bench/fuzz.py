"""A long property-based run of the HTTP API against its own OpenAPI (schemathesis), for hours.

    python -m bench.fuzz --minutes 60

The app runs in this process (ASGI, no socket), on a fresh data directory,
with two scenes of a few objects each: path parameters are pointed at those
ids most of the time, so requests reach the picking, editing and rendering
logic instead of stopping at 404. Every answer is checked as
``tests/test_api_contract.py`` checks it (:data:`CHECKS`): no 5xx, and the
status code, content type and body as documented. Failures are counted, not
raised, so the run goes on; the report prints the request count, the
failures by check, and one request (as curl) per distinct failure.

Never run as a test: the suite runs the bounded version.
"""

import argparse
import collections
import logging
import sys
import tempfile
import time
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path

#: Rays (and render pixels) per request in the fuzzed app: large enough to answer the
#: fuzzer's requests, small enough that no request takes seconds.
FUZZ_MAX_RAYS = 20_000

#: One in this many requests keeps the fuzzer's own (nearly always unknown) ids: the 404 path.
KEEP_GENERATED_IDS = 8

TRIANGLES = {"vertices": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.5]],
             "faces": [[0, 1, 2], [1, 3, 2]]}
TRANSLATED = [[1.0, 0.0, 0.0, 3.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
#: The objects added to each scene after its inline mesh (object 0): ids 1, 2, 3.
SCENE_OBJECTS = [{"mesh": 0, "transform": TRANSLATED, "name": "copy"},
                 {"shape": "sphere", "radius": 0.5, "transform": [[1, 0, 0, -2], [0, 1, 0, 0], [0, 0, 1, 0],
                                                                    [0, 0, 0, 1]]},
                 {"shape": "box", "size": [1.0, 2.0, 0.5], "mask": 2, "name": "crate"}]


def checks() -> tuple:
    """The checks every answer must pass: no 5xx; status, content type and body as documented; a method
    the path does not take answered 405 with every method it does take in ``Allow`` (and OPTIONS likewise)."""
    from schemathesis.checks import (allow_header_conformance, content_type_conformance, not_a_server_error,
                                     response_schema_conformance, status_code_conformance, unsupported_method)

    return (not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            unsupported_method, allow_header_conformance)


@dataclass
class World:
    """The app under test, its loaded schema, and the ids requests are pointed at."""

    app: object
    schema: object
    client: object
    scenes: list[str] = field(default_factory=list)
    objects: list[int] = field(default_factory=list)


def _created(response, what: str) -> dict:
    if response.status_code != 201:
        raise RuntimeError(f"could not create {what}: {response.status_code} {response.text}")
    return response.json()


def create(data_dir: Path, **settings) -> World:
    """The app on ``data_dir`` and its schema, loaded from ``/openapi.json`` (no scenes yet: see
    :func:`populate`).

    Parameters
    ----------
    data_dir : Path
        A fresh directory for the scenes.
    **settings
        Overrides of :class:`service.settings.Settings`.
    """
    import schemathesis

    from service.app import create_app
    from service.settings import Settings

    with warnings.catch_warnings():
        # Starlette suggests another HTTP client package for its TestClient; httpx is what this project installs.
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    settings.setdefault("warm_up", False)
    settings.setdefault("max_rays", FUZZ_MAX_RAYS)
    app = create_app(Settings(data_dir=data_dir, **settings))
    # Loading the schema starts the app's lifespan, which schemathesis keeps running for its requests;
    # the TestClient is not entered, so it sends its requests to that same running app.
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    return World(app, schema, TestClient(app))


def populate(world: World) -> None:
    """Wait until the app is ready, then make two scenes of four objects (ids 0-3) each."""
    client = world.client
    deadline = time.monotonic() + 900
    while client.get("/ready").status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError("the service did not become ready")
        time.sleep(0.05)
    for name in ("first", "second"):
        scene = _created(client.post("/scenes", json={"name": name, "meshes": [{"name": "pair", **TRIANGLES}]}),
                         f"scene {name}")
        for body in SCENE_OBJECTS:
            _created(client.post(f"/scenes/{scene['id']}/objects", json=body), f"an object of scene {name}")
        world.scenes.append(scene["id"])
    world.objects = [0, 1, 2, 3]


def _sacrifice(world: World, scene_id: str | None) -> tuple[str, int]:
    """A new scene and object of it for a DELETE to remove, so that the shared ones stay."""
    if scene_id is None:
        scene = _created(world.client.post("/scenes", json={"name": "doomed", "meshes": [TRIANGLES]}), "a scene")
        return scene["id"], scene["objects"][0]["id"]
    added = _created(world.client.post(f"/scenes/{scene_id}/objects", json={"shape": "sphere", "radius": 1.0}),
                     "an object")
    return scene_id, added["objects"][0]["id"]


def aim(case, world: World) -> None:
    """Point the case's path parameters at live scenes and objects (most of the time).

    The choice is a function of the generated values, so a failing case
    replays the same. A DELETE gets a scene or object made for it.
    """
    parameters = case.path_parameters
    if not parameters or "scene_id" not in parameters:
        return
    choice = zlib.crc32(repr(sorted(parameters.items(), key=lambda item: item[0])).encode())
    if choice % KEEP_GENERATED_IDS == 0:
        return
    has_object = isinstance(parameters.get("object_id"), int) and not isinstance(parameters["object_id"], bool)
    if case.method.upper() == "DELETE":
        if "object_id" in parameters and not has_object:
            # A generated id such as "0" (a string) would still delete object 0: leave the scene unknown.
            return
        owner = world.scenes[choice % len(world.scenes)] if "object_id" in parameters else None
        scene_id, object_id = _sacrifice(world, owner)
        parameters["scene_id"] = scene_id
        if has_object:
            parameters["object_id"] = object_id
        return
    parameters["scene_id"] = world.scenes[choice % len(world.scenes)]
    if has_object:
        parameters["object_id"] = world.objects[(choice >> 8) % len(world.objects)]


def call_and_check(case, world: World):
    """Send the case (aimed at live ids) and run :func:`checks` on the answer; raises on a failure."""
    aim(case, world)
    response = case.call()
    case.validate_response(response, checks=list(checks()))
    return response


@dataclass
class Tally:
    """What a run sent and what failed: counts, and the first request of each distinct failure."""

    requests: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    failures: collections.Counter = field(default_factory=collections.Counter)
    examples: dict = field(default_factory=dict)
    #: Strategies that yielded no request at all, by operation and data mode.
    unsatisfiable: collections.Counter = field(default_factory=collections.Counter)

    def record(self, case, error: Exception | None, status: int | None) -> None:
        self.requests += 1
        if status is not None:
            self.by_status[status] += 1
        if error is None:
            return
        from schemathesis.core.failures import Failure, FailureGroup

        failures = list(error.exceptions) if isinstance(error, FailureGroup) else [error]
        for failure in failures:
            if isinstance(failure, Failure):
                check = failure.checks[0] if failure.checks else type(failure).__name__
                title, message = failure.title, failure.message
            else:
                # In process, an exception the app answered with a 500 also reaches the caller.
                check, title, message = "not_a_server_error", f"{type(failure).__name__}: {failure}", repr(failure)
            self.failures[check] += 1
            key = (check, case.method.upper(), case.path, status, title[:80])
            if key not in self.examples:
                self.examples[key] = (case.as_curl_command(), message[:400])


def _run(label: str, strategy, examples: int, world: World, tally: Tally, deadline: float) -> None:
    """Up to ``examples`` cases drawn from ``strategy`` (of the operation ``label``), each sent, checked
    and tallied."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis.core.failures import Failure, FailureGroup

    @given(strategy)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    def one(case):
        if time.monotonic() >= deadline:
            return
        status = None
        try:
            aim(case, world)
            response = case.call()
            status = response.status_code
            case.validate_response(response, checks=list(checks()))
        except (Failure, FailureGroup) as error:
            tally.record(case, error, status)
            return
        except Exception as error:
            # The in-process transport re-raises what the app answered with a 500.
            tally.record(case, error, 500 if status is None else status)
            return
        tally.record(case, None, status)

    try:
        one()
    except Unsatisfiable:
        # Every draw was filtered out: nothing was sent.
        tally.unsatisfiable[label] += 1


def fuzz(world: World, minutes: float, examples_per_round: int, tally: Tally) -> None:
    """The documented examples once, then rounds over every operation, valid and invalid data,
    until ``minutes`` have passed."""
    from schemathesis import GenerationMode

    operations = [result.ok() for result in world.schema.get_all_operations()]
    deadline = time.monotonic() + minutes * 60
    for operation in operations:
        for strategy in operation.get_strategies_from_examples():
            _run(f"{operation.label} (examples)", strategy, 5, world, tally, deadline)
    print(f"documented examples: {tally.requests} requests, {sum(tally.failures.values())} failures", flush=True)
    round_number = 0
    while time.monotonic() < deadline:
        round_number += 1
        for operation in operations:
            modes = [GenerationMode.POSITIVE]
            if {"parameters", "requestBody"} & set(operation.definition.raw):
                # Only an operation that takes something can be sent something invalid.
                modes.append(GenerationMode.NEGATIVE)
            for mode in modes:
                if time.monotonic() >= deadline:
                    return
                label = f"{operation.label} ({mode.value})"
                if label not in tally.unsatisfiable:
                    # (A string path parameter alone has no invalid value: tried once, then left.)
                    _run(label, operation.as_strategy(generation_mode=mode), examples_per_round, world, tally,
                         deadline)
        elapsed = minutes * 60 - (deadline - time.monotonic())
        print(f"round {round_number}: {tally.requests} requests in {elapsed:.0f} s, "
              f"{sum(tally.failures.values())} failures", flush=True)


def report(tally: Tally, seconds: float) -> str:
    server_errors = tally.failures.get("not_a_server_error", 0)
    conformance = sum(count for check, count in tally.failures.items() if check != "not_a_server_error")
    lines = [f"requests: {tally.requests} in {seconds:.0f} s",
             f"server errors (5xx): {server_errors}",
             f"conformance failures: {conformance} "
             f"({', '.join(f'{check} {count}' for check, count in sorted(tally.failures.items())) or 'none'})",
             "statuses: " + ", ".join(f"{status} x{count}" for status, count in sorted(tally.by_status.items()))]
    if tally.unsatisfiable:
        lines.append("no request could be drawn for: " + ", ".join(sorted(tally.unsatisfiable)))
    for (check, method, path, status, title), (curl, message) in tally.examples.items():
        lines += [f"- {check}: {method} {path} -> {status}: {title}", f"    {curl[:600]}",
                  f"    {message.replace(chr(10), ' ')[:400]}"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="how long to run (default 60)")
    parser.add_argument("--examples", type=int, default=50,
                        help="requests per operation and data mode in each round (default 50)")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The set-up requests, and every malformed multipart body the fuzzer sends, would each log a line.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("python_multipart").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="pick-fuzz-") as data_dir:
        print("starting the service (the first run after a change to bvh/ compiles its kernels) ...", flush=True)
        world = create(Path(data_dir))
        populate(world)
        tally = Tally()
        started = time.monotonic()
        try:
            fuzz(world, options.minutes, options.examples, tally)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        print(report(tally, time.monotonic() - started), flush=True)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
