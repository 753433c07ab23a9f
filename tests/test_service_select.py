"""``/scenes/{id}/select`` with ``containment``: window and crossing marquees, as in CAD tools.

A unit box standing on a 10 x 10 ground grid, seen from straight above: a
marquee around the box touches the ground (crossing takes both) but holds only
the box (window takes it alone).
"""

import numpy as np
import trimesh

from .test_scene import grid_mesh

#: From straight above: the ground spans most of the image, the box [0, 1]^3 a small square near the centre.
CAMERA = {"position": [0.0, 0.0, 20.0], "target": [0.0, 0.0, 0.0], "up": [0.0, 1.0, 0.0], "fov_y_deg": 40.0,
          "width": 400, "height": 400}
#: Around the box's image with a margin (its top, the nearer face, spans about pixels x 200 to 229, y 171 to 200).
AROUND_THE_BOX = [190, 160, 240, 210]
#: Over the left half of the box's top only.
ACROSS_THE_BOX = [205, 170, 215, 195]


def box_on_ground(client) -> str:
    ground_vertices, ground_faces = grid_mesh(10, 5.0)
    box = trimesh.creation.box(extents=[1.0, 1.0, 1.0])
    lifted = np.eye(4)
    lifted[:3, 3] = [0.5, 0.5, 0.5]
    response = client.post("/scenes", json={"name": "box on ground", "meshes": [
        {"name": "ground", "vertices": ground_vertices.tolist(), "faces": ground_faces.tolist()},
        {"name": "box", "vertices": box.vertices.tolist(), "faces": box.faces.tolist(), "transform": lifted.tolist()},
    ]})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def selected(client, scene: str, rect, **options) -> dict:
    response = client.post(f"/scenes/{scene}/select", json={**CAMERA, "rect": rect, **options})
    assert response.status_code == 200, response.text
    return {item["name"]: item["triangles"] for item in response.json()["objects"]}


def test_window_takes_the_box_crossing_takes_the_ground_too(client):
    scene = box_on_ground(client)
    assert sorted(selected(client, scene, AROUND_THE_BOX)) == ["box", "ground"]
    assert sorted(selected(client, scene, AROUND_THE_BOX, containment="crossing")) == ["box", "ground"]
    assert list(selected(client, scene, AROUND_THE_BOX, containment="window")) == ["box"]
    # Cutting the box: only a crossing takes it.
    assert sorted(selected(client, scene, ACROSS_THE_BOX)) == ["box", "ground"]
    assert selected(client, scene, ACROSS_THE_BOX, containment="window") == {}
    # The whole image holds both.
    assert sorted(selected(client, scene, [0, 0, 400, 400], containment="window")) == ["box", "ground"]


def test_window_lists_the_triangles_inside(client):
    scene = box_on_ground(client)
    triangles = selected(client, scene, AROUND_THE_BOX, mode="triangles", containment="window")
    # All twelve of the box's; of the ground's, the two of the cell under the box, [0, 1]^2.
    assert sorted(triangles["box"]) == list(range(12))
    assert sorted(triangles["ground"]) == [55, 155]
    crossing = selected(client, scene, AROUND_THE_BOX, mode="triangles")
    assert sorted(crossing["box"]) == list(range(12)) and len(crossing["ground"]) > 2


def test_containment_is_refused_when_unknown(client):
    scene = box_on_ground(client)
    response = client.post(f"/scenes/{scene}/select", json={**CAMERA, "rect": AROUND_THE_BOX, "containment": "inside"})
    assert response.status_code == 422
    assert response.json()["detail"] == "containment: Input should be 'crossing' or 'window', got 'inside'"


def test_containment_is_documented(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("PinholeSelect", "MatrixSelect"):
        field = schemas[name]["properties"]["containment"]
        assert field["enum"] == ["crossing", "window"] and "default" not in field
        assert 'Default: "crossing".' in field["description"]
        assert "window" in field["description"]


# ------------------------------------------------------------------ lasso and visible-only

#: A concave "C" around the box's image (its top spans about x 200 to 229, y 171 to 200), open to the right.
C_AROUND_THE_BOX = [[185, 150], [250, 150], [250, 160], [196, 160], [196, 215], [250, 215], [250, 225], [185, 225]]
#: The box's image in a lasso, and a notch cut into it from the right up to x = 210.
AROUND_THE_BOX_LASSO = [[190, 160], [240, 160], [240, 210], [190, 210]]
NOTCHED = [[190, 160], [240, 160], [240, 183], [210, 183], [210, 187], [240, 187], [240, 210], [190, 210]]


def lasso(client, scene: str, polygon, **options) -> dict:
    response = client.post(f"/scenes/{scene}/select", json={**CAMERA, "polygon": polygon, **options})
    assert response.status_code == 200, response.text
    return {item["name"]: item["triangles"] for item in response.json()["objects"]}


def test_a_lasso_takes_what_its_polygon_encloses(client):
    scene = box_on_ground(client)
    assert sorted(lasso(client, scene, AROUND_THE_BOX_LASSO)) == ["box", "ground"]
    assert list(lasso(client, scene, AROUND_THE_BOX_LASSO, containment="window")) == ["box"]
    # The C's arms pass around the box, and take only ground.
    assert list(lasso(client, scene, C_AROUND_THE_BOX)) == ["ground"]
    # A notch into the box's image: the box is crossed, no longer within.
    assert sorted(lasso(client, scene, NOTCHED)) == ["box", "ground"]
    assert lasso(client, scene, NOTCHED, containment="window") == {}
    # A square lasso selects what the same rect does, triangle by triangle.
    for containment in ("crossing", "window"):
        assert (lasso(client, scene, AROUND_THE_BOX_LASSO, mode="triangles", containment=containment)
                == selected(client, scene, AROUND_THE_BOX, mode="triangles", containment=containment))


def test_lasso_triangles_match_the_naive_reference(client):
    from bvh.camera import Camera
    from testkit.reference.lasso import ProjectedTriangles, star_polygon

    scene = box_on_ground(client)
    ground_vertices, ground_faces = grid_mesh(10, 5.0)
    box = trimesh.creation.box(extents=[1.0, 1.0, 1.0])
    triangles = np.concatenate([ground_vertices[ground_faces], (box.vertices + 0.5)[box.faces]])
    names = ["ground"] * len(ground_faces) + ["box"] * len(box.faces)
    faces = list(range(len(ground_faces))) + list(range(len(box.faces)))
    reference = ProjectedTriangles(Camera.pinhole(**CAMERA), triangles)
    rng = np.random.default_rng(8)
    for _ in range(10):
        polygon = star_polygon(rng, rng.uniform(100, 300, 2), rng.uniform(20, 150), int(rng.integers(3, 25)))
        for containment in ("crossing", "window"):
            expected = reference.select(polygon, containment == "window")
            want = {}
            for f in np.flatnonzero(expected):
                want.setdefault(names[f], []).append(faces[f])
            got = lasso(client, scene, polygon.tolist(), mode="triangles", containment=containment)
            assert {name: sorted(t) for name, t in got.items()} == want


def id_buffer(client, scene: str) -> tuple[np.ndarray, np.ndarray]:
    response = client.post(f"/scenes/{scene}/idbuffer", json=CAMERA)
    assert response.status_code == 200, response.text
    pixels = CAMERA["width"] * CAMERA["height"]
    planes = np.frombuffer(response.content, "<i4", 2 * pixels)
    shape = (CAMERA["height"], CAMERA["width"])
    return planes[:pixels].reshape(shape), planes[pixels:].reshape(shape)


def test_visible_only_takes_what_the_id_buffer_shows(client):
    from bvh.queries.lasso import pixels_in_polygon

    scene = box_on_ground(client)
    objects, triangles = id_buffer(client, scene)
    names = {0: "ground", 1: "box"}
    for polygon in (AROUND_THE_BOX_LASSO, NOTCHED, C_AROUND_THE_BOX):
        for samples in (1, 3):
            pixels = pixels_in_polygon(np.array(polygon, float), CAMERA["width"], CAMERA["height"], samples)
            want = {}
            for oid, face in sorted({(int(objects[y, x]), int(triangles[y, x])) for x, y in pixels} - {(-1, -1)}):
                want.setdefault(names[oid], []).append(face)
            got = lasso(client, scene, polygon, mode="triangles", visible_only=True, samples=samples)
            assert {name: sorted(t) for name, t in got.items()} == want
            assert sorted(lasso(client, scene, polygon, visible_only=True, samples=samples)) == sorted(want)
    # Seen from above, the ground under the box is hidden: crossing takes it, visible_only does not.
    hidden = selected(client, scene, AROUND_THE_BOX, mode="triangles")["ground"]
    seen = selected(client, scene, AROUND_THE_BOX, mode="triangles", visible_only=True)["ground"]
    assert 55 in hidden and 55 not in seen and set(seen) < set(hidden)
    # A rect's pixels are those whose centres lie in it, edges included: columns 200..229, rows 172..199.
    rect = [200.2, 171.6, 229.5, 199.5]
    got = selected(client, scene, rect, mode="triangles", visible_only=True)
    want = {}
    for oid, face in sorted({(int(objects[y, x]), int(triangles[y, x])) for y in range(172, 200)
                             for x in range(200, 230)} - {(-1, -1)}):
        want.setdefault(names[oid], []).append(face)
    assert {name: sorted(t) for name, t in got.items()} == want
    # Window and visible: what is seen and also lies entirely inside.
    assert list(lasso(client, scene, AROUND_THE_BOX_LASSO, visible_only=True, containment="window")) == ["box"]


def test_lasso_and_visible_only_refusals(make_client):
    client = make_client(max_rays=100)
    scene = box_on_ground(client)
    cases = [
        ({"polygon": [[0, 0], [10, 10]]}, 422, "polygon needs at least 3 distinct points to enclose anything, got 2"),
        ({"polygon": [[0, 0], [10, 10], [20, 20]]}, 422, "polygon encloses no area: its points lie on one line"),
        ({"polygon": [[-50, -50], [-10, -50], [-10, -10]]}, 422,
         "the polygon (bounding box [-50.0, -50.0, -10.0, -10.0]) lies wholly outside the 400x400 image: "
         "it must overlap [0, 400] x [0, 400]"),
        ({}, 422, "give the region as rect [x0, y0, x1, y1] or as polygon [[x, y], ...]"),
        ({"rect": [0, 0, 5, 5], "polygon": [[0, 0], [5, 0], [0, 5]]}, 422,
         "give the region as rect [x0, y0, x1, y1] or as polygon [[x, y], ...], not both"),
        ({"rect": None, "polygon": [[0, 0], [5, 0], [0, 5]]}, 422,
         "rect must not be null: leave it out, and give the other"),
        ({"rect": [0, 0, 5, 5], "samples": 2}, 422,
         "samples is the stride of visible_only's rays: set visible_only to true, or leave samples out"),
        ({"rect": [0, 0, 40, 40], "visible_only": True}, 413,
         "visible_only casts a ray per pixel: the rect holds 1600 pixels at samples 1; the limit is 100 rays "
         "(PICK_MAX_RAYS): set samples to 4 or more, or select a smaller region"),
        ({"polygon": [[0, 0], [40, 0], [0, 40]], "visible_only": True, "samples": 2}, 413,
         "visible_only casts a ray per pixel: the polygon's bounding box holds 400 pixels at samples 2; the limit "
         "is 100 rays (PICK_MAX_RAYS): set samples to 4 or more, or select a smaller region"),
    ]
    for body, status, message in cases:
        response = client.post(f"/scenes/{scene}/select", json={**CAMERA, **body})
        assert response.status_code == status, (body, response.text)
        assert response.json()["detail"] == message
    fine = client.post(f"/scenes/{scene}/select", json={**CAMERA, "rect": [0, 0, 40, 40], "visible_only": True,
                                                        "samples": 4})
    assert fine.status_code == 200, fine.text


def test_lasso_and_visible_only_are_documented(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("PinholeSelect", "MatrixSelect"):
        properties = schemas[name]["properties"]
        assert "even-odd" in properties["polygon"]["description"]
        assert "one ray through the centre of every pixel" in properties["visible_only"]["description"]
        assert "samples-th" in properties["samples"]["description"]


def test_a_region_too_big_for_any_stride_says_to_select_less(make_client):
    client = make_client(max_rays=1)
    scene = box_on_ground(client)
    huge = {**CAMERA, "width": 100_000, "height": 100_000}
    response = client.post(f"/scenes/{scene}/select", json={**huge, "rect": [0, 0, 100_000, 100_000],
                                                             "visible_only": True, "samples": 4096})
    assert response.status_code == 413
    assert response.json()["detail"] == (
        "visible_only casts a ray per pixel: the rect holds 625 pixels at samples 4096; the limit is 1 rays "
        "(PICK_MAX_RAYS): select a smaller region")
