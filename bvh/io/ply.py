"""PLY files: their header and body checked against each other (a truncated
file refused with what it lacks), and the two kinds trimesh does not read,
triangle strips and binary faces of mixed sizes, read here."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# PLY scalar types and their sizes in bytes (both spellings of the standard).
_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}

_PLY_ENDIAN = {"binary_little_endian": "<", "binary_big_endian": ">", "ascii": None}

# Vertex properties read as texture coordinates, in order of preference.
_PLY_UV_NAMES = (("s", "t"), ("u", "v"), ("texture_u", "texture_v"), ("texture_s", "texture_t"))


# ------------------------------------------------------------------- PLY
class _PlyElement(NamedTuple):
    """One ``element`` of a PLY header.

    Attributes
    ----------
    name : str
    count : int
        Rows the header announces.
    properties : list of (str, str or (str, str))
        Name and numpy type code (``"f4"``) of each property; for a list,
        the codes of its count and of its items.
    """

    name: str
    count: int
    properties: list


class _PlyLayout(NamedTuple):
    """Where each element's rows lie in a PLY whose body holds all of them.

    Attributes
    ----------
    endian : str or None
        ``"<"`` or ``">"`` for a binary file, None for ascii.
    elements : list of _PlyElement
    starts : list of int
        Byte offset (binary) or token index (ascii) of each element's first row.
    tokens : list of bytes or None
        The body split at whitespace (ascii only).
    ragged : frozenset of str
        Elements of a binary file whose list lengths vary from row to row.
    """

    endian: str | None
    elements: list
    starts: list
    tokens: list | None
    ragged: frozenset


_PLY_PLURALS = {"vertex": "vertices", "face": "faces", "tristrips": "triangle strips", "edge": "edges"}


def _ply_header(data: bytes):
    """``(format, elements, body offset)`` of a PLY header, or None when the
    header is not one this reads (trimesh then says what it makes of it)."""
    end = data.find(b"end_header", 0, 1 << 20)
    if not data.startswith(b"ply") or end < 0:
        return None
    body = data.find(b"\n", end)
    if body < 0:
        return None
    try:
        lines = data[:end].decode("ascii").splitlines()
    except UnicodeDecodeError:
        return None
    file_format, elements = None, []
    for line in lines[1:]:
        words = line.split()
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "format" and len(words) >= 2 and words[1] in _PLY_ENDIAN:
            file_format = words[1]
        elif words[0] == "element" and len(words) == 3 and words[2].isdigit():
            elements.append(_PlyElement(words[1], int(words[2]), []))
        elif words[0] == "property" and elements and len(words) == 3 and words[1] in _PLY_TYPES:
            elements[-1].properties.append((words[2], _PLY_TYPES[words[1]]))
        elif (words[0] == "property" and elements and len(words) == 5 and words[1] == "list"
              and words[2] in _PLY_TYPES and words[3] in _PLY_TYPES):
            elements[-1].properties.append((words[4], (_PLY_TYPES[words[2]], _PLY_TYPES[words[3]])))
        else:
            return None
    if file_format is None:
        return None
    return file_format, elements, body + 1


def ply_layout(data: bytes) -> _PlyLayout | None:
    """Check that the body of a PLY holds every row its header announces.

    Returns
    -------
    _PlyLayout or None
        None when the header is not one this reads.

    Raises
    ------
    ValueError
        "could not read this as PLY: the header announces 1000 faces, but the
        file holds 512 (its data ends at byte 20480): it is truncated".
    """
    header = _ply_header(data)
    if header is None:
        return None
    file_format, elements, body = header
    endian = _PLY_ENDIAN[file_format]
    tokens = None if endian else data[body:].split()
    position, starts, ragged = (body if endian else 0), [], set()
    for element in elements:
        starts.append(position)
        if endian:
            found, position, uniform = _ply_binary_rows(data, position, element, endian)
            if not uniform:
                ragged.add(element.name)
        else:
            found, position = _ply_ascii_rows(tokens, position, element)
        if found < element.count:
            noun = _PLY_PLURALS.get(element.name, f"'{element.name}' rows")
            lines = data.count(b"\n") + (not data.endswith(b"\n"))
            where = f"its data ends at byte {len(data)}" if endian else f"its text ends at line {lines}"
            raise ValueError(f"could not read this as PLY: the header announces {element.count} {noun}, "
                             f"but the file holds {found} ({where}): it is truncated")
    return _PlyLayout(endian, elements, starts, tokens, frozenset(ragged))


def _ply_binary_rows(data: bytes, offset: int, element: _PlyElement, endian: str) -> tuple[int, int, bool]:
    """``(complete rows found, byte offset after them, whether all rows found
    have the same length)`` of one element, up to its count."""
    sizes = [np.dtype(kind).itemsize if isinstance(kind, str) else None for _, kind in element.properties]
    if None not in sizes:
        row = sum(sizes)
        found = element.count if row == 0 else min(element.count, (len(data) - offset) // row)
        return found, offset + found * row, True
    found, offset = _ply_uniform_rows(data, offset, element, endian)
    uniform = True
    while found < element.count:
        uniform = False
        position = offset
        for _, kind in element.properties:
            if isinstance(kind, str):
                position += np.dtype(kind).itemsize
                continue
            count_type, item_type = np.dtype(endian + kind[0]), np.dtype(kind[1])
            if position + count_type.itemsize > len(data):
                return found, offset, uniform
            count = int(np.frombuffer(data, count_type, 1, position)[0])
            if count < 0:
                raise ValueError(f"could not read this as PLY: byte {position}: a list of "
                                 f"{element.name!r} has a negative length {count}")
            position += count_type.itemsize + count * item_type.itemsize
        if position > len(data):
            return found, offset, uniform
        found, offset = found + 1, position
    return found, offset, uniform


def _ply_uniform_rows(data: bytes, offset: int, element: _PlyElement, endian: str) -> tuple[int, int]:
    """``(rows, byte offset after them)`` of the leading rows of an element
    with lists whose lists all have the first row's lengths (every face a
    triangle, say): checked at once with a strided view of the count bytes,
    so that only rows after a change of length are walked one by one."""
    position, layout = offset, []
    for _, kind in element.properties:
        if isinstance(kind, str):
            position += np.dtype(kind).itemsize
            continue
        count_type = np.dtype(endian + kind[0])
        if position + count_type.itemsize > len(data):
            return 0, offset
        count = int(np.frombuffer(data, count_type, 1, position)[0])
        if count < 0:
            # Walked row by row, which says where.
            return 0, offset
        layout.append((position - offset, count_type, count))
        position += count_type.itemsize + max(count, 0) * np.dtype(kind[1]).itemsize
    row = position - offset
    rows = min(element.count, (len(data) - offset) // row)
    same = np.ones(rows, dtype=bool)
    for at, count_type, count in layout:
        counts = np.ndarray((rows,), count_type, data, offset + at, (row,))
        same &= counts == count
    rows = rows if same.all() else int(np.argmin(same))
    return rows, offset + rows * row


def _ply_ascii_rows(tokens: list, start: int, element: _PlyElement) -> tuple[int, int]:
    """``(complete rows found, token index after them)`` of one element, up to its count."""
    if all(isinstance(kind, str) for _, kind in element.properties):
        width = len(element.properties)
        found = element.count if width == 0 else min(element.count, (len(tokens) - start) // width)
        return found, start + found * width
    found = 0
    while found < element.count:
        position = start
        for _, kind in element.properties:
            if isinstance(kind, str):
                position += 1
                continue
            if position >= len(tokens):
                return found, start
            try:
                count = int(tokens[position])
            except ValueError:
                raise ValueError(f"could not read this as PLY: row {found + 1} of {element.name!r}: "
                                 f"the list length {tokens[position].decode(errors='replace')!r} "
                                 "is not a whole number") from None
            if count < 0:
                raise ValueError(f"could not read this as PLY: row {found + 1} of {element.name!r} has a negative "
                                 f"list length {count}")
            position += 1 + count
        if position > len(tokens):
            return found, start
        found, start = found + 1, position
    return found, start


def _strips_to_triangles(strips) -> np.ndarray:
    """Triangles of PLY triangle strips.

    Parameters
    ----------
    strips : list of (n,) int arrays
        The rows of a ``tristrips`` element; ``-1`` separates strips within a row.

    Returns
    -------
    (F, 3) int64
        Triangle k of a strip s is (s[k], s[k+1], s[k+2]) for even k and
        (s[k+1], s[k], s[k+2]) for odd k, so all keep one winding.
        Triangles with a repeated vertex are dropped: strips repeat a vertex
        on purpose to turn or to join, and such a triangle has no area; it
        still counts for the alternation of the ones after it.
    """
    triangles = []
    for row in strips:
        row = np.asarray(row, dtype=np.int64)
        breaks = np.flatnonzero(row == -1)
        for strip in np.split(row, breaks):
            strip = strip[1:] if len(strip) and strip[0] == -1 else strip
            if len(strip) < 3:
                continue
            first, second, third = strip[:-2].copy(), strip[1:-1].copy(), strip[2:]
            odd = np.arange(len(first)) % 2 == 1
            first[odd], second[odd] = strip[1:-1][odd], strip[:-2][odd]
            triangles.append(np.column_stack([first, second, third]))
    if not triangles:
        return np.empty((0, 3), dtype=np.int64)
    triangles = np.concatenate(triangles)
    distinct = ((triangles[:, 0] != triangles[:, 1]) & (triangles[:, 1] != triangles[:, 2])
                & (triangles[:, 0] != triangles[:, 2]))
    return triangles[distinct]


def ply_own_scene(data: bytes, layout: _PlyLayout, name: str):
    """A trimesh scene of one mesh from a PLY trimesh does not read: faces
    stored as triangle strips (trimesh reads the vertices as a point cloud,
    and no strips), or a binary face element whose polygons have different
    vertex counts (trimesh refuses it).

    Positions, ``nx ny nz`` normals and texture coordinates (``s t``, ``u v``,
    ``texture_u texture_v``) come from the vertex element, which must hold
    scalar properties only. Polygons become fans (k - 2 triangles of a
    k-gon, ``source_face`` their row); strips become triangles as
    :func:`_strips_to_triangles` says (``source_face`` the identity).
    ``name`` names the geometry, as trimesh would.
    """
    import trimesh

    names = [element.name for element in layout.elements]
    if "vertex" not in names:
        raise ValueError("could not read this as PLY: it has faces or triangle strips but no vertex element")
    vertex_element = layout.elements[names.index("vertex")]
    vertex_start = layout.starts[names.index("vertex")]
    if any(not isinstance(kind, str) for _, kind in vertex_element.properties):
        raise ValueError("could not read this as PLY: its vertices have list properties, which are not "
                         "read beside triangle strips or polygons of mixed sizes")
    columns = {name: index for index, (name, _) in enumerate(vertex_element.properties)}
    if not {"x", "y", "z"} <= set(columns):
        raise ValueError("could not read this as PLY: its vertices have no x, y and z")
    if layout.endian:
        row_type = np.dtype([(name, layout.endian + kind) for name, kind in vertex_element.properties])
        table = np.frombuffer(data, row_type, vertex_element.count, vertex_start)
        column = lambda name: table[name].astype(np.float64)  # noqa: E731
    else:
        width = len(vertex_element.properties)
        words = layout.tokens[vertex_start:vertex_start + width * vertex_element.count]
        try:
            values = np.array(words, dtype=np.float64).reshape(vertex_element.count, width)
        except ValueError:
            raise ValueError("could not read this as PLY: a vertex row holds something other than "
                             "numbers") from None
        column = lambda name: values[:, columns[name]]  # noqa: E731
    vertices = np.column_stack([column("x"), column("y"), column("z")])
    normals = (np.column_stack([column("nx"), column("ny"), column("nz")])
               if {"nx", "ny", "nz"} <= set(columns) else None)
    uv = next((np.column_stack([column(u), column(v)]) for u, v in _PLY_UV_NAMES
               if {u, v} <= set(columns)), None)

    if "face" in names:
        element = layout.elements[names.index("face")]
        polygons = _ply_list_rows(data, layout, element, layout.starts[names.index("face")])
        faces, source_face = _fans(polygons)
        what = "a face"
    else:
        element = layout.elements[names.index("tristrips")]
        strips = _ply_list_rows(data, layout, element, layout.starts[names.index("tristrips")])
        faces = _strips_to_triangles(strips)
        source_face = np.arange(len(faces), dtype=np.int64)
        what = "a triangle strip"
    if len(faces) and (faces.min() < 0 or faces.max() >= len(vertices)):
        bad = faces[(faces < 0) | (faces >= len(vertices))][0]
        rule = "; only -1 separates strips" if what == "a triangle strip" else ""
        raise ValueError(f"could not read this as PLY: {what} refers to vertex {bad}, but the file "
                         f"has {len(vertices)} vertices (0..{len(vertices) - 1}){rule}")
    visual = trimesh.visual.TextureVisuals(uv=uv) if uv is not None else None
    mesh = trimesh.Trimesh(vertices, faces, vertex_normals=normals, visual=visual, process=False)
    mesh.metadata["source_face"] = source_face
    scene = trimesh.Scene()
    scene.add_geometry(mesh, geom_name=name, node_name=name)
    return scene


def _fans(polygons: list) -> tuple[np.ndarray, np.ndarray]:
    """``(triangles (F, 3) int64, polygon of each (F,) int64)``: polygon
    (p0, ..., pk) as the fan (p0, p1, p2), (p0, p2, p3), ...; rows of fewer
    than 3 vertices give none."""
    sizes = np.array([len(polygon) for polygon in polygons], dtype=np.int64)
    if not len(sizes) or sizes.max() < 3:
        return np.empty((0, 3), dtype=np.int64), np.empty(0, dtype=np.int64)
    flat = np.concatenate(polygons).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    per_polygon = np.maximum(sizes - 2, 0)
    polygon = np.repeat(np.arange(len(sizes)), per_polygon)
    step = np.arange(len(polygon)) - np.repeat(np.cumsum(per_polygon) - per_polygon, per_polygon)
    first = starts[polygon]
    triangles = np.column_stack([flat[first], flat[first + step + 1], flat[first + step + 2]])
    return triangles, polygon


def _ply_list_rows(data: bytes, layout: _PlyLayout, element: _PlyElement, start: int) -> list:
    """The ``vertex_indices`` (or ``vertex_index``) list of each row of a
    ``face`` or ``tristrips`` element; other properties are skipped."""
    lists = [name for name, kind in element.properties if not isinstance(kind, str)]
    wanted = next((name for name in ("vertex_indices", "vertex_index") if name in lists), None)
    if wanted is None:
        raise ValueError(f"could not read this as PLY: its {element.name} element has no vertex_indices list")
    what = "a triangle strip" if element.name == "tristrips" else "a face"
    rows, position = [], start
    for _ in range(element.count):
        for name, kind in element.properties:
            if isinstance(kind, str):
                position += np.dtype(kind).itemsize if layout.endian else 1
            elif layout.endian:
                count_type = np.dtype(layout.endian + kind[0])
                item_type = np.dtype(layout.endian + kind[1])
                count = int(np.frombuffer(data, count_type, 1, position)[0])
                position += count_type.itemsize
                if name == wanted:
                    rows.append(np.frombuffer(data, item_type, count, position).astype(np.int64))
                position += count * item_type.itemsize
            else:
                count = int(layout.tokens[position])
                if name == wanted:
                    try:
                        rows.append(np.array(layout.tokens[position + 1:position + 1 + count], dtype=np.int64))
                    except ValueError:
                        raise ValueError(f"could not read this as PLY: {what} holds something other than "
                                         "whole numbers") from None
                position += 1 + count
    return rows
