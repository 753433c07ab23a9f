"""Uploaded files and inline meshes: exact refusals, triangle strips, object names."""

import trimesh

from tests.conftest import TRIANGLE
from tests.test_loader import BOX_GLB, STRIP_TRIANGLES, strip_ply

SQUARE = {"vertices": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 2, 0]],
          "faces": [[0, 1, 2], [0, 2, 3], [1, 2, 4], [0, 1, 3]]}
BOX_OBJ = trimesh.creation.box().export(file_type="obj")


def upload(client, filename: str, content: bytes, **form):
    return client.post("/scenes/upload", files={"file": (filename, content, "application/octet-stream")}, data=form)


def test_truncated_obj_is_refused_with_its_line(client):
    cut = BOX_OBJ[:BOX_OBJ.rindex("f ") + 5]  # "f 8 6 7" cut to "f 8 6"
    response = upload(client, "cut.obj", cut.encode())
    assert response.status_code == 422
    line = cut.count("\n") + 1
    assert response.json() == {"detail": f"file 'cut.obj': could not read this as OBJ: line {line}: a face needs at "
                                         f"least 3 vertices, but this one has 2 (it is the last line and has no line "
                                         f"end: the file looks cut short)"}


def test_obj_face_beyond_the_vertices_is_refused_one_based(client):
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n"
    response = upload(client, "bad.obj", text.encode())
    assert response.status_code == 422
    assert response.json() == {"detail": "file 'bad.obj': could not read this as OBJ: line 4: face refers to vertex 9, "
                                         "but the file defines 3 vertices"}


def test_truncated_glb_is_refused_with_the_byte(client):
    response = upload(client, "cut.glb", BOX_GLB[:-8])
    assert response.status_code == 422
    assert response.json() == {"detail": f"file 'cut.glb': could not read this as GLB: the header (byte 8) says the "
                                         f"file has {len(BOX_GLB)} bytes, but it has {len(BOX_GLB) - 8}: the file is "
                                         f"truncated"}


def test_obj_with_text_for_a_number_says_which_line(client):
    response = upload(client, "text.obj", b"v 0 0 0\nv 1 0 zero\nv 0 1 0\nf 1 2 3\n")
    assert response.status_code == 422
    assert response.json() == {"detail": "file 'text.obj': could not read this as OBJ: line 2: 'zero' is not a number"}


def test_ply_triangle_strips_upload(client):
    response = upload(client, "strips.ply", strip_ply("binary_little_endian"))
    assert response.status_code == 201, response.text
    assert response.json()["triangles"] == len(STRIP_TRIANGLES)


def test_upload_name_names_the_single_unnamed_object(client):
    stl = trimesh.creation.box().export(file_type="stl")
    named = upload(client, "part.stl", stl, name="gear")
    assert named.status_code == 201, named.text
    assert [o["name"] for o in named.json()["objects"]] == ["gear"]
    unnamed = upload(client, "part.stl", stl)
    assert [o["name"] for o in unnamed.json()["objects"]] == ["part"]
    # A file that names its object keeps that name.
    cube = upload(client, "cube.obj", ("o lid\n" + BOX_OBJ).encode(), name="gear")
    assert [o["name"] for o in cube.json()["objects"]] == ["lid"]
    added = client.post(f"/scenes/{named.json()['id']}/objects/upload",
                        files={"file": ("bolt.stl", stl, "application/octet-stream")})
    assert added.status_code == 201, added.text
    assert [o["name"] for o in added.json()["objects"]] == ["bolt"]


def test_inline_face_index_beyond_int32_is_a_422_naming_the_field(client, triangle_scene):
    for index in (2 ** 63, 10 ** 30, 2 ** 31):
        body = {"meshes": [{**TRIANGLE, "faces": [[0, 1, index]]}]}
        response = client.post("/scenes", json=body)
        assert response.status_code == 422
        assert response.json() == {"detail": f"meshes[0].faces[0][2]: Input should be less than or equal to "
                                             f"2147483647, got {index}"}
        response = client.post(f"/scenes/{triangle_scene}/objects", json={**TRIANGLE, "faces": [[index, 1, 2]]})
        assert response.status_code == 422
        assert response.json() == {"detail": f"faces[0][0]: Input should be less than or equal to 2147483647, "
                                             f"got {index}"}


def test_inline_face_beyond_the_vertices_is_a_422_at_that_index(client, triangle_scene):
    body = {"meshes": [TRIANGLE, {**SQUARE, "faces": [*SQUARE["faces"], [0, 7, 1]]}]}
    response = client.post("/scenes", json=body)
    assert response.status_code == 422
    assert response.json() == {"detail": "meshes[1].faces[4][1]: vertex 7 does not exist, the mesh has 5 vertices "
                                         "(0..4)"}
    response = client.post(f"/scenes/{triangle_scene}/objects", json={**TRIANGLE, "faces": [[0, 1, 3]]})
    assert response.status_code == 422
    assert response.json() == {"detail": "faces[0][2]: vertex 3 does not exist, the mesh has 3 vertices (0..2)"}


def test_a_scene_needs_a_mesh(client):
    response = client.post("/scenes", json={"name": "empty", "meshes": []})
    assert response.status_code == 422
    assert response.json() == {"detail": "meshes: a scene needs at least one mesh; give one in meshes, or upload a "
                                         "file to POST /scenes/upload"}
    response = client.post("/scenes", json={"name": "empty"})
    assert response.status_code == 422
    assert response.json() == {"detail": "meshes: Field required"}
    assert client.get("/scenes").json() == {"scenes": []}


def test_instance_of_a_huge_mesh_id_is_a_422(client, triangle_scene):
    response = client.post(f"/scenes/{triangle_scene}/objects", json={"mesh": 2 ** 63})
    assert response.status_code == 422
    assert response.json() == {"detail": f"mesh: Input should be less than or equal to 2147483647, got {2 ** 63}"}


def test_truncated_ply_upload_says_how_many_rows_it_holds(client):
    data = strip_ply("binary_little_endian")
    response = upload(client, "strips.ply", data[:-6])
    assert response.status_code == 422
    assert response.json() == {"detail": f"file 'strips.ply': could not read this as PLY: the header announces 2 "
                                         f"triangle strips, but the file holds 1 (its data ends at byte "
                                         f"{len(data) - 6}): it is truncated"}
