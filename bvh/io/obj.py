"""OBJ files: their text checked before trimesh parses it (malformed lines
and references out of range refused with their line numbers), ``usemtl``
lines dropped so that the faces form one mesh in file order, ``l`` line
elements read as a line set, and each triangle traced back to its ``f``
line."""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from .wording import quantity

# One vertex reference of an OBJ face in each of its four forms: v, v/vt, v//vn, v/vt/vn.
_OBJ_REFERENCE_FORMS = (r"-?\d+", r"-?\d+/-?\d+", r"-?\d+//-?\d+", r"-?\d+/-?\d+/-?\d+")

# A face line whose references are well formed and all of one form (the
# format requires it); trimesh reads no comment after them.
_OBJ_GOOD_FACE = (r"(?:[ \t]+(?:" + "|".join(rf"{form}(?:[ \t]+{form})*" for form in _OBJ_REFERENCE_FORMS)
                  + r"))?[ \t]*$")

# The patterns below are searched in the text with a newline put in front,
# and start with that newline: a literal start lets the search skip ahead fast.
_OBJ_BAD_FACE = re.compile(rf"\nf(?=[ \t])(?!{_OBJ_GOOD_FACE})[^\n]*", re.MULTILINE)

# A v, vt or vn line with too few numbers (x y z; u [v]; x y z).
# (Possessive quantifiers: a line of three numbers fails at once, without
# trying every split of its words.)
_OBJ_SHORT_VERTEX = re.compile(r"\nv(?:(?:[ \t]++[^\s#]++){0,2}+|t|n(?:[ \t]++[^\s#]++){0,2}+)[ \t]*+(?:#[^\n]*)?$",
                               re.MULTILINE)

_OBJ_ELEMENTS = {"v": "vertex", "vt": "texture coordinate", "vn": "normal"}


class _ObjFaceLines(NamedTuple):
    """The ``f`` lines of an OBJ: vertex count of each, and whether trimesh
    will parse them as one array (every line with the same field count)."""

    sizes: np.ndarray
    uniform: bool


def prepare_obj(data: bytes):
    """OBJ bytes for trimesh, and the vertex count of each ``f`` line.

    The text is checked first (:func:`_check_obj`). ``usemtl`` lines are
    removed so trimesh sees one run of faces: it would otherwise make one
    mesh per material with the faces regrouped, and the map back to the
    file's faces would be lost. Materials are not used here.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # OBJ is ASCII in practice; other bytes only occur in names and comments.
        text = data.decode("latin-1")
    text = text.replace("\r\n", "\n")
    if "\n " in text or "\n\t" in text or text[:1] in (" ", "\t"):
        # Indented lines: trimesh reads an indented v but skips an indented f.
        text = re.sub(r"^[ \t]+", "", text, flags=re.MULTILINE)
    face_lines = re.findall(r"^f[ \t]+([^\n]*)$", text, flags=re.MULTILINE)
    _check_obj(text, face_lines)
    text = re.sub(r"^[ \t]*usemtl\b[^\n]*$", "", text, flags=re.MULTILINE)
    sizes = np.array([len(line.split()) for line in face_lines], dtype=np.int64)
    # trimesh reads the faces as one array only when every line has the same
    # number of numbers ("1/2/3" counts three), and triangulates differently then.
    uniform = len({len(line.replace("/", " ").split()) for line in face_lines}) <= 1
    return text.encode("utf-8"), _ObjFaceLines(sizes, uniform)


def _obj_error(text: str, position: int, problem: str) -> ValueError:
    """"could not read this as OBJ: line 14: ..." for the line holding ``position``;
    a last line without its newline is said to be cut short."""
    line = text.count("\n", 0, position) + 1
    if "\n" not in text[position:] and not text.endswith("\n"):
        problem += " (it is the last line and has no line end: the file looks cut short)"
    return ValueError(f"could not read this as OBJ: line {line}: {problem}")


def _check_obj(text: str, face_lines: list[str]) -> None:
    """Refuse an OBJ whose ``v``/``vt``/``vn``/``f`` lines are malformed or whose
    faces refer to elements the file does not define.

    Whole-text regular expressions and one numpy parse keep this cheap; the
    line-by-line search for the culprit only runs once something is wrong.
    A file cut inside a number that leaves a well-formed line (``f 10 11 12``
    cut to ``f 10 11 1``) cannot be told from an intact one.

    Raises
    ------
    ValueError
        "could not read this as OBJ: line 14: face refers to vertex 9, but the
        file defines 8 vertices", with the line number and the index as the
        file wrote them (1-based, or negative counting back).
    """
    lined = "\n" + text
    short = _OBJ_SHORT_VERTEX.search(lined)
    if short is not None:
        keyword, *numbers = short.group(0).split("#")[0].split()
        needed = {"v": "3 numbers (x y z)", "vt": "at least 1 number (u [v])", "vn": "3 numbers (x y z)"}[keyword]
        raise _obj_error(text, short.start(),
                         f"a '{keyword}' line needs {needed}, but this one has {len(numbers)}")
    bad = _OBJ_BAD_FACE.search(lined)
    if bad is not None:
        raise _obj_error(text, bad.start(), _obj_face_problem(bad.group(0)))
    last_line = text[text.rfind("\n") + 1:]
    if last_line.split()[:1] == ["f"] and len(last_line.split()) < 4:
        # Faces of one or two vertices are skipped elsewhere; at the very end,
        # without a line end, one is the remains of a cut.
        raise _obj_error(text, len(text) - len(last_line),
                         f"a face needs at least 3 vertices, but this one has {len(last_line.split()) - 1}")
    if not face_lines:
        return
    counts = {keyword: lined.count(f"\n{keyword} ") + lined.count(f"\n{keyword}\t") for keyword in _OBJ_ELEMENTS}
    if _obj_references_in_range(" ".join(face_lines), counts):
        return
    for match in re.finditer(r"^f[ \t]+([^\n#]*)", text, flags=re.MULTILINE):
        for reference in match.group(1).split():
            for keyword, number in zip(("v", "vt", "vn"), reference.split("/")):
                if number and not _obj_index_valid(int(number), counts[keyword]):
                    raise _obj_error(text, match.start(), _obj_range_problem(keyword, int(number), counts[keyword]))


def obj_number_problem(text: str) -> str | None:
    """Where a ``v``/``vt``/``vn`` line holds something other than numbers
    (what makes trimesh's parse fail), as "line 5: ...", or None."""
    for match in re.finditer(r"^(?:v|vt|vn)[ \t]+([^\n#]*)", text, flags=re.MULTILINE):
        for word in match.group(1).split():
            try:
                float(word)
            except ValueError:
                line = text.count("\n", 0, match.start()) + 1
                return f"line {line}: {word!r} is not a number"
    return None


def _obj_index_valid(index: int, count: int) -> bool:
    # 1-based, or negative counting back from the last one defined.
    return 1 <= index <= count or -count <= index <= -1


def _obj_range_problem(keyword: str, index: int, count: int) -> str:
    noun = _OBJ_ELEMENTS[keyword]
    if index == 0:
        return f"face refers to {noun} 0, but OBJ numbers them from 1"
    plural = "vertices" if noun == "vertex" else noun + "s"
    return f"face refers to {noun} {index}, but the file defines {count} {noun if count == 1 else plural}"


def _obj_references_in_range(references: str, counts: dict) -> bool:
    """Whether every v (and vt, vn, when all faces write their references in
    one form) index among the face references is within what the file defines."""
    # "//" marks a reference without a texture coordinate; 0 stands in for it.
    spelled = references.replace("//", "/0/")
    first = spelled.split(maxsplit=1)[0]
    per_reference = first.count("/") + 1
    one_form = r"-?\d+" + r"/-?\d+" * (per_reference - 1)
    if re.fullmatch(rf"\s*+(?:{one_form}\s++)*+", spelled + " ") is None:
        # References of several forms: check the vertex indices only.
        spelled, per_reference = re.sub(r"/[^ \t]*", "", references), 1
    # The references are well formed (checked before), so the parse reads every number.
    table = np.fromstring(spelled.replace("/", " "), dtype=np.int64, sep=" ").reshape(-1, per_reference)
    for column, keyword in enumerate(("v", "vt", "vn")[:per_reference]):
        index, count = table[:, column], counts[keyword]
        if keyword == "vt" and "//" in references:
            index = index[index != 0]
        valid = ((index >= 1) & (index <= count)) | ((index <= -1) & (index >= -count))
        if not valid.all():
            return False
    return True


def _obj_face_problem(line: str) -> str:
    """What is wrong with a face line :data:`_OBJ_BAD_FACE` matched."""
    references = line.split()[1:]
    form = re.compile("|".join(f"({form})" for form in _OBJ_REFERENCE_FORMS))
    for reference in references:
        if form.fullmatch(reference) is None:
            return (f"face vertex {reference!r} is not a vertex reference (v, v/vt, v//vn or v/vt/vn, "
                    "whole numbers)")
    shapes = [form.fullmatch(reference).lastindex for reference in references]
    first = references[0]
    other = next((reference for reference, shape in zip(references, shapes) if shape != shapes[0]), None)
    if other is None:
        # Each reference is fine: what separates them is not a space or a tab.
        return f"face line {line.strip()!r} separates its vertices by something other than spaces or tabs"
    return f"face vertex {other!r} is not written like the first one on its line ({first!r})"


def obj_line_elements(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(vertices, segments)`` of an OBJ's ``l`` lines (polylines: each pair
    of consecutive references a segment; ``v/vt`` references, negative ones
    counting back from the vertices defined so far), or None without any."""
    if not re.search(r"^l[ \t]", text, flags=re.MULTILINE):
        return None
    vertices, segments = [], []
    for line in text.split("\n"):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "v" and len(words) >= 4:
            vertices.append([float(w) for w in words[1:4]])
        elif words[0] == "l":
            refs = []
            for word in words[1:]:
                index = int(word.split("/")[0])
                index = index - 1 if index > 0 else len(vertices) + index
                if not 0 <= index < len(vertices):
                    raise ValueError(f"could not read this as OBJ: a line element refers to vertex {word}, but "
                                     f"{quantity(len(vertices), 'vertex')} are defined before it")
                refs.append(index)
            segments.extend(zip(refs[:-1], refs[1:]))
    if not segments:
        return None
    return np.array(vertices, dtype=np.float64), np.array(segments, dtype=np.int64)


def obj_source_face(obj_faces: _ObjFaceLines, faces: np.ndarray):
    """The ``f`` line of each triangle trimesh made from an OBJ, or None.

    trimesh parses the face lines in one of two ways. When every line has
    the same number of numbers it reads them as one (P, k) array: triangles
    stay as they are, quads become every quad's first triangle then every
    quad's second one, larger polygons become consecutive fans. Otherwise it
    loops over the lines: a quad becomes two consecutive triangles, a
    polygon a consecutive fan, a line with fewer than three vertices nothing.
    The result is checked (triangle count, and triangles of one polygon
    sharing an edge) so that a trimesh that does otherwise gives None, not a
    wrong map.
    """
    sizes = obj_faces.sizes
    if len(sizes) == 0:
        return None
    lines = np.arange(len(sizes), dtype=np.int64)
    if obj_faces.uniform and sizes[0] == 4:
        source_face = np.concatenate([lines, lines])
    else:
        source_face = np.repeat(lines, np.maximum(sizes - 2, 0))
    if len(source_face) != len(faces) or not _polygons_hold_together(source_face, faces):
        return None
    return source_face


def _polygons_hold_together(source_face: np.ndarray, faces: np.ndarray) -> bool:
    """Whether each triangle shares an edge with the previous triangle of its
    polygon, as a quad's halves and a fan's triangles do.

    Vertex indices suffice: trimesh gives one vertex to each distinct
    (position, uv, normal) reference, and a polygon's triangles reuse its
    references.
    """
    order = np.argsort(source_face, kind="stable")
    same = source_face[order][1:] == source_face[order][:-1]
    if not same.any():
        return True
    corners = faces[order]
    first, second = corners[:-1][same], corners[1:][same]
    shared = (first[:, :, None] == second[:, None, :]).any(axis=2).sum(axis=1)
    return bool((shared >= 2).all())
