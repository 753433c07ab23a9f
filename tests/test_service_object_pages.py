"""``GET /scenes/{id}/objects?after=&limit=``: a scene's objects page by page, by id; and
``GET /scenes/{id}``, which lists at most ``PICK_INLINE_OBJECTS`` of them and says where the rest are."""

import threading

import pytest

from service.store import views
from tests.conftest import TRIANGLE

#: Each test here runs against the embedded store and against an object store (see tests/conftest.py).
pytestmark = pytest.mark.both_stores


def make_scene(client, count: int) -> str:
    """A scene of ``count`` objects, ids 0 to count - 1 (one inline mesh each), named ``o<id>``."""
    meshes = [{"name": f"o{index}", **TRIANGLE} for index in range(count)]
    response = client.post("/scenes", json={"meshes": meshes})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def page(client, scene_id: str, **query) -> dict:
    response = client.get(f"/scenes/{scene_id}/objects", params=query)
    assert response.status_code == 200, response.text
    return response.json()


def every_page(client, scene_id: str, limit: int, between=lambda pages: None) -> list[dict]:
    """Every page from the first to ``next_after: null``, ``between(pages so far)`` called after each."""
    pages = [page(client, scene_id, limit=limit)]
    while pages[-1]["next_after"] is not None:
        between(pages)
        pages.append(page(client, scene_id, after=pages[-1]["next_after"], limit=limit))
    return pages


def listed_ids(pages: list[dict]) -> list[int]:
    return [entry["id"] for answer in pages for entry in answer["objects"]]


@pytest.mark.parametrize("limit", [1, 7, 5, 25, 1000])
def test_pages_list_every_object_once_in_id_order(client, limit):
    scene_id = make_scene(client, 25)
    whole = client.get(f"/scenes/{scene_id}").json()
    pages = every_page(client, scene_id, limit)
    # 25 objects in pages of 5 are five pages, not five and an empty one: the fifth knows it is the last.
    assert len(pages) == -(-25 // limit)
    for answer in pages[:-1]:
        assert len(answer["objects"]) == limit and answer["next_after"] == answer["objects"][-1]["id"]
    assert pages[-1]["next_after"] is None
    assert all(answer["object_count"] == 25 for answer in pages)
    # The same objects, field for field, as the scene lists them.
    assert [entry for answer in pages for entry in answer["objects"]] == whole["objects"]
    assert listed_ids(pages) == list(range(25))


def test_a_page_starts_after_any_id_listed_or_not(client):
    scene_id = make_scene(client, 10)
    assert client.delete(f"/scenes/{scene_id}/objects/4").status_code == 204
    renamed = client.patch(f"/scenes/{scene_id}/objects", json=[{"id": 0, "name": "first"}])
    assert renamed.status_code == 200, renamed.text
    version = renamed.json()["version"]
    assert listed_ids([page(client, scene_id, after=3, limit=3)]) == [5, 6, 7]
    # A removed id, or one past the last, is a place in the order like any other.
    assert listed_ids([page(client, scene_id, after=4, limit=2)]) == [5, 6]
    empty = {"objects": [], "next_after": None, "object_count": 9, "version": version}
    assert page(client, scene_id, after=9) == empty
    assert page(client, scene_id, after=10 ** 12) == empty
    assert page(client, scene_id, after=8)["objects"][0]["name"] == "o9"


def test_a_page_says_the_edit_it_is_as_of(client):
    """Each page answer's ``version`` is the scene's edit number it was made at: every edit up to
    it shows on the page, and none after (the live channel's clients merge pages and events by it)."""
    scene_id = make_scene(client, 6)
    before = page(client, scene_id, limit=2)
    moved = client.patch(f"/scenes/{scene_id}/objects", json=[{"id": 3, "name": "three"}])
    assert moved.status_code == 200, moved.text
    assert moved.json()["version"] > before["version"]
    after = page(client, scene_id, after=before["next_after"], limit=2)
    assert after["version"] == moved.json()["version"]
    assert [entry["name"] for entry in after["objects"]] == ["o2", "three"]
    again = client.patch(f"/scenes/{scene_id}/objects", json=[{"id": 3, "name": "again"}])
    # The page made before that edit does not show it; one made after does, at its number.
    assert after["objects"][1]["name"] == "three"
    latest = page(client, scene_id, after=before["next_after"], limit=2)
    assert latest["version"] == again.json()["version"] and latest["objects"][1]["name"] == "again"


@pytest.mark.parametrize("fresh_rows_after", [3, views.FRESH_ROWS_AFTER])
def test_paging_is_stable_under_additions_and_removals(client, monkeypatch, fresh_rows_after):
    # With 3, the table is copied afresh every few edits; with the default, the pages are made
    # from rows copied before paging began and the edits since.
    monkeypatch.setattr(views, "FRESH_ROWS_AFTER", fresh_rows_after)
    scene_id = make_scene(client, 20)
    removed = {}    # id: whether a page had listed it before it was removed

    def edit(pages: list[dict]) -> None:
        # After each page: three new objects, a removal among those listed and one among those to come.
        for _ in range(3):
            assert client.post(f"/scenes/{scene_id}/objects", json={"mesh": 0}).status_code == 201
        number = len(pages)
        for victim in (number * 6 - 3, number * 6 + 4):
            if victim < 20 and victim not in removed:
                assert client.delete(f"/scenes/{scene_id}/objects/{victim}").status_code == 204
                removed[victim] = victim in listed_ids(pages)

    pages = every_page(client, scene_id, limit=6, between=edit)
    ids = listed_ids(pages)
    assert ids == sorted(set(ids))   # each once, ascending
    assert True in removed.values() and False in removed.values()
    # Every object is listed that lived when paging began and was not removed before its page came ...
    assert {oid for oid in ids if oid < 20} == {oid for oid in range(20) if removed.get(oid, True)}
    # ... and every object added meanwhile (its id is larger than all before it: its page comes).
    live = client.get(f"/scenes/{scene_id}").json()
    assert set(ids) == {entry["id"] for entry in live["objects"]} | {oid for oid, seen in removed.items() if seen}
    assert pages[-1]["object_count"] == live["object_count"] == 20 + 3 * (len(pages) - 1) - len(removed)


def test_paging_while_another_client_adds_objects(client):
    scene_id = make_scene(client, 40)
    stop = threading.Event()
    added, errors = [], []

    def add() -> None:
        try:
            while not stop.is_set():
                response = client.post(f"/scenes/{scene_id}/objects", json={"shape": "sphere", "radius": 1.0})
                assert response.status_code == 201, response.text
                added.append(response.json()["objects"][0]["id"])
        except BaseException as error:  # reported in the test's own thread below
            errors.append(error)

    adder = threading.Thread(target=add)
    adder.start()
    try:
        ids = []
        answer = page(client, scene_id, limit=3)
        while True:
            ids += [entry["id"] for entry in answer["objects"]]
            # Past the originals, stop once the adder is seen to have added some: it may add forever.
            if answer["next_after"] is None or (answer["next_after"] >= 39 and added):
                break
            answer = page(client, scene_id, after=answer["next_after"], limit=3)
    finally:
        stop.set()
        adder.join(timeout=60)
    assert not errors, errors
    assert ids == sorted(set(ids))
    assert [oid for oid in ids if oid < 40] == list(range(40))
    assert set(ids) - set(range(40)) <= set(added)


def test_removed_objects_leave_the_pages(client):
    scene_id = make_scene(client, 12)
    for victim in (0, 5, 6, 11):
        assert client.delete(f"/scenes/{scene_id}/objects/{victim}").status_code == 204
    pages = every_page(client, scene_id, limit=4)
    assert listed_ids(pages) == [1, 2, 3, 4, 7, 8, 9, 10]
    assert [answer["next_after"] for answer in pages] == [4, None]
    assert pages[0]["object_count"] == 8


@pytest.mark.parametrize("query, detail", [
    ("limit=0", "limit: Input should be greater than or equal to 1, got '0'"),
    ("limit=10001", "limit: Input should be less than or equal to 10000, got '10001'"),
    ("limit=-3", "limit: Input should be greater than or equal to 1, got '-3'"),
    ("limit=many", "limit: Input should be a valid integer, unable to parse string as an integer, got 'many'"),
    ("after=-1", "after: Input should be greater than or equal to 0, got '-1'"),
    ("after=1.5", "after: Input should be a valid integer, unable to parse string as an integer, got '1.5'"),
    ("after=", "after: Input should be a valid integer, unable to parse string as an integer, got ''"),
    ("after=9223372036854775808", "after: Input should be less than or equal to 9223372036854775807, "
                                  "got '9223372036854775808'"),
    ("afer=3", "unknown query parameter: afer (known: after, limit)"),
    ("offset=3&count=2", "unknown query parameters: count, offset (known: after, limit)"),
])
def test_bad_after_or_limit_is_refused_in_words(client, triangle_scene, query, detail):
    response = client.get(f"/scenes/{triangle_scene}/objects?{query}")
    assert response.status_code == 422
    assert response.json() == {"detail": detail}


def test_an_unknown_scene_has_no_pages(client):
    response = client.get(f"/scenes/{'0' * 32}/objects")
    assert response.status_code == 404 and "no scene" in response.json()["detail"]


def test_a_scene_lists_at_most_the_inline_limit_and_says_where_the_rest_are(make_client):
    client = make_client(inline_objects=4)
    meshes = [{"name": f"o{index}", **TRIANGLE} for index in range(10)]
    created = client.post("/scenes", json={"meshes": meshes})
    assert created.status_code == 201, created.text
    scene = created.json()
    assert [entry["id"] for entry in scene["objects"]] == [0, 1, 2, 3]
    assert (scene["object_count"], scene["objects_next_after"], scene["triangles"]) == (10, 3, 10)
    got = client.get(f"/scenes/{scene['id']}").json()
    assert got["objects"] == scene["objects"] and got["objects_next_after"] == 3
    rest = [page(client, scene["id"], after=3, limit=100)]
    assert listed_ids(rest) == list(range(4, 10)) and rest[-1]["next_after"] is None
    # Removals bring it within the limit: every object is listed, and nothing is left to page.
    for victim in range(0, 10, 2):
        assert client.delete(f"/scenes/{scene['id']}/objects/{victim}").status_code == 204
    got = client.get(f"/scenes/{scene['id']}").json()
    assert [entry["id"] for entry in got["objects"]] == [1, 3, 5, 7]
    assert (got["object_count"], got["objects_next_after"]) == (5, 7)
    assert client.delete(f"/scenes/{scene['id']}/objects/9").status_code == 204
    got = client.get(f"/scenes/{scene['id']}").json()
    assert [entry["id"] for entry in got["objects"]] == [1, 3, 5, 7]
    assert (got["object_count"], got["objects_next_after"]) == (4, None)


def test_a_scene_within_the_limit_lists_every_object(client, triangle_scene):
    scene = client.get(f"/scenes/{triangle_scene}").json()
    assert len(scene["objects"]) == scene["object_count"] == 1 and scene["objects_next_after"] is None


@pytest.mark.parametrize("value", [0, 10_001])
def test_the_inline_limit_is_one_to_a_page(value):
    from pydantic import ValidationError

    from service.settings import Settings

    with pytest.raises(ValidationError, match="inline_objects"):
        Settings(inline_objects=value)


def test_the_openapi_documents_the_pages(client):
    document = client.get("/openapi.json").json()
    operation = document["paths"]["/scenes/{scene_id}/objects"]["get"]
    parameters = {entry["name"]: entry for entry in operation["parameters"]}
    assert parameters["after"]["in"] == "query" and not parameters["after"]["required"]
    assert {key: parameters["after"]["schema"][key] for key in ("type", "minimum", "maximum")} == \
        {"type": "integer", "minimum": 0, "maximum": 2 ** 63 - 1}
    assert {key: parameters["limit"]["schema"][key] for key in ("type", "minimum", "maximum")} == \
        {"type": "integer", "minimum": 1, "maximum": 10_000}
    # The default is said, not declared: generators would make a defaulted option required or always send it.
    assert "default" not in parameters["limit"]["schema"] and "Default: 1000." in parameters["limit"]["description"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/ObjectPage"}
    schemas = document["components"]["schemas"]
    assert set(schemas["ObjectPage"]["required"]) == {"objects", "next_after", "object_count", "version"}
    assert {"object_count", "objects_next_after"} <= set(schemas["SceneOut"]["required"])
