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
        assert field["enum"] == ["crossing", "window"] and field["default"] == "crossing"
        assert "window" in field["description"]
