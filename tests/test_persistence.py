"""The memory-mapped array directory behind Scene.save / Scene.open: round
trips, cheap re-saves, crash safety and every refusal with its message."""

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from bvh.io import persistence
from bvh.io.persistence import FORMAT, FORMAT_VERSION, read_arrays, read_arrays_and_tokens, write_arrays

METADATA = {"objects": [{"id": 0, "name": "chair", "transform": [1.0, 0.0, 2.5]}], "count": 1, "empty": None}


def sample_arrays():
    rng = np.random.default_rng(7)
    return {
        "points": rng.normal(size=(50, 3)),
        "nodes": rng.normal(size=(17, 8)).astype(np.float32),
        "faces": rng.integers(0, 50, size=(40, 3), dtype=np.int64),
        "flags": rng.random(33) < 0.5,
        "empty": np.zeros((0, 3), dtype=np.float64),
        "empty_int": np.zeros(0, dtype=np.int32),
        "scalar": np.array(42, dtype=np.uint16),
        "small": np.arange(5, dtype=np.int8),
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    }


def manifest_of(directory):
    return json.loads((directory / "manifest.json").read_text())


def rewrite_manifest(directory, change):
    manifest = manifest_of(directory)
    change(manifest)
    (directory / "manifest.json").write_text(json.dumps(manifest))


def array_file(directory, name):
    return directory / manifest_of(directory)["arrays"][name]["file"]


def npy_files(directory):
    return sorted(path.name for path in directory.iterdir() if path.name.endswith(".npy"))


@pytest.fixture
def saved(tmp_path):
    directory = tmp_path / "scene"
    write_arrays(directory, sample_arrays(), METADATA)
    return directory


def test_round_trip_keeps_values_dtypes_shapes_and_metadata(saved):
    metadata, arrays = read_arrays(saved)
    assert metadata == METADATA
    expected = sample_arrays()
    assert list(arrays) == list(expected)
    for name, original in expected.items():
        assert arrays[name].shape == original.shape, name
        assert arrays[name].dtype == original.dtype.newbyteorder("<"), name
        assert arrays[name].dtype.str[0] in "<|", name
        assert arrays[name].flags.c_contiguous, name
        np.testing.assert_array_equal(arrays[name], original)
    assert arrays["points"].dtype == np.float64 and arrays["points"].shape == (50, 3)
    assert arrays["flags"].dtype == np.bool_


def test_arrays_come_back_as_read_only_memory_maps(saved):
    _, arrays = read_arrays(saved)
    for name, array in arrays.items():
        assert not array.flags.writeable, name
        if array.size:
            assert isinstance(array, np.memmap), name
            assert Path(array.filename).parent == saved.resolve(), name
    with pytest.raises(ValueError, match="read-only"):
        arrays["points"][0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        arrays["empty"][...] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        arrays["scalar"][...] = 1


def test_manifest_layout(saved):
    manifest = manifest_of(saved)
    assert manifest["format"] == FORMAT == "bvh-scene"
    assert manifest["version"] == FORMAT_VERSION == 2
    assert manifest["metadata"] == METADATA
    entry = manifest["arrays"]["nodes"]
    assert set(entry) == {"file", "dtype", "shape", "bytes", "crc32", "token"}
    assert re.fullmatch(r"nodes\.[0-9a-f]{12}\.npy", entry["file"])
    assert entry["dtype"] == "<f4"
    assert entry["shape"] == [17, 8]
    assert entry["bytes"] == (saved / entry["file"]).stat().st_size
    assert entry["token"] is None
    loaded = np.load(saved / entry["file"], mmap_mode="r")
    assert loaded.shape == (17, 8)


def test_files_in_the_directory_are_exactly_the_referenced_ones(saved):
    referenced = sorted(entry["file"] for entry in manifest_of(saved)["arrays"].values())
    assert npy_files(saved) == referenced
    assert not [path for path in saved.iterdir() if path.name.endswith(".tmp")]


def test_empty_set_of_arrays_and_nested_parent_directories(tmp_path):
    directory = tmp_path / "a" / "b" / "scene"
    write_arrays(directory, {}, {})
    assert read_arrays(directory) == ({}, {})


def test_resave_with_same_tokens_reuses_files_and_changed_token_rewrites(tmp_path):
    directory = tmp_path / "scene"
    arrays = {"nodes": np.arange(1000.0), "transforms": np.eye(4)[None].repeat(3, axis=0)}
    write_arrays(directory, arrays, {"generation": 1}, tokens={"nodes": "n-1", "transforms": "t-1"})
    first = manifest_of(directory)["arrays"]
    nodes_path = directory / first["nodes"]["file"]
    past = time.time() - 1000
    os.utime(nodes_path, (past, past))
    mtime = nodes_path.stat().st_mtime_ns

    arrays["transforms"] = arrays["transforms"] * 2.0
    write_arrays(directory, arrays, {"generation": 2}, tokens={"nodes": "n-1", "transforms": "t-2"})
    second = manifest_of(directory)["arrays"]
    assert second["nodes"] == first["nodes"]
    assert nodes_path.stat().st_mtime_ns == mtime
    assert second["transforms"]["file"] != first["transforms"]["file"]
    assert second["transforms"]["token"] == "t-2"
    assert not (directory / first["transforms"]["file"]).exists()
    assert npy_files(directory) == sorted([second["nodes"]["file"], second["transforms"]["file"]])

    metadata, loaded = read_arrays(directory)
    assert metadata == {"generation": 2}
    np.testing.assert_array_equal(loaded["transforms"], arrays["transforms"])
    np.testing.assert_array_equal(loaded["nodes"], arrays["nodes"])


@pytest.mark.parametrize("second_arrays, second_tokens", [
    ({"nodes": np.arange(1000.0)}, {"nodes": "other"}),
    ({"nodes": np.arange(1000.0)}, None),
    ({"nodes": np.arange(1000.0).reshape(500, 2)}, {"nodes": "same"}),
    ({"nodes": np.arange(1000.0).astype(np.float32)}, {"nodes": "same"}),
], ids=["new token", "no token", "new shape", "new dtype"])
def test_resave_rewrites_unless_token_dtype_and_shape_all_match(tmp_path, second_arrays, second_tokens):
    directory = tmp_path / "scene"
    write_arrays(directory, {"nodes": np.arange(1000.0)}, {}, tokens={"nodes": "same"})
    first_file = manifest_of(directory)["arrays"]["nodes"]["file"]
    write_arrays(directory, second_arrays, {}, tokens=second_tokens)
    second_file = manifest_of(directory)["arrays"]["nodes"]["file"]
    assert second_file != first_file
    assert npy_files(directory) == [second_file]
    np.testing.assert_array_equal(read_arrays(directory)[1]["nodes"], second_arrays["nodes"])


def test_resave_does_not_reuse_a_file_whose_size_changed(tmp_path):
    directory = tmp_path / "scene"
    write_arrays(directory, {"nodes": np.arange(1000.0)}, {}, tokens={"nodes": "same"})
    path = array_file(directory, "nodes")
    with open(path, "r+b") as stream:
        stream.truncate(100)
    write_arrays(directory, {"nodes": np.arange(1000.0)}, {}, tokens={"nodes": "same"})
    assert array_file(directory, "nodes") != path
    np.testing.assert_array_equal(read_arrays(directory)[1]["nodes"], np.arange(1000.0))


def test_read_returns_the_tokens_of_its_manifest_for_a_cheap_resave(tmp_path):
    directory = tmp_path / "scene"
    write_arrays(directory, {"a": np.arange(3), "b": np.arange(4)}, {}, tokens={"a": "ta"})
    metadata, arrays, tokens = read_arrays_and_tokens(directory)
    assert tokens == {"a": "ta", "b": None}
    before = manifest_of(directory)["arrays"]
    write_arrays(directory, arrays, metadata, tokens=tokens)
    after = manifest_of(directory)["arrays"]
    assert after["a"] == before["a"]
    assert after["b"]["file"] != before["b"]["file"]


def test_old_readers_keep_their_data_after_a_resave_deletes_their_files(tmp_path):
    directory = tmp_path / "scene"
    write_arrays(directory, {"nodes": np.arange(100.0)}, {})
    _, old = read_arrays(directory)
    write_arrays(directory, {"nodes": np.arange(100.0) + 1}, {})
    assert not Path(old["nodes"].filename).exists()
    np.testing.assert_array_equal(old["nodes"], np.arange(100.0))
    np.testing.assert_array_equal(read_arrays(directory)[1]["nodes"], np.arange(100.0) + 1)


def test_leftover_temporaries_and_unreferenced_files_do_not_break_reading(saved):
    (saved / "nodes.0123456789ab.npy.tmp").write_bytes(b"half a file")
    (saved / "manifest.json.0123456789ab.tmp").write_bytes(b'{"format": "bvh-sc')
    np.save(saved / "nodes.ba9876543210.npy", np.arange(3))
    (saved / "notes.txt").write_text("the user's own file")
    metadata, arrays = read_arrays(saved)
    assert metadata == METADATA
    np.testing.assert_array_equal(arrays["nodes"], sample_arrays()["nodes"])

    write_arrays(saved, sample_arrays(), METADATA)
    names = {path.name for path in saved.iterdir()}
    assert "nodes.0123456789ab.npy.tmp" not in names
    assert "manifest.json.0123456789ab.tmp" not in names
    assert "nodes.ba9876543210.npy" not in names
    assert "notes.txt" in names


def test_a_save_over_a_damaged_directory_replaces_it(saved):
    (saved / "manifest.json").write_text("{not json")
    write_arrays(saved, {"x": np.arange(3)}, {"fresh": True})
    metadata, arrays = read_arrays(saved)
    assert metadata == {"fresh": True}
    assert list(arrays) == ["x"]
    assert len(npy_files(saved)) == 1


def test_a_failed_write_leaves_the_previous_save_and_no_new_files(saved, monkeypatch):
    before = sorted(path.name for path in saved.iterdir())

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(persistence, "_replace_manifest", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_arrays(saved, {"other": np.arange(10)}, {})
    assert sorted(path.name for path in saved.iterdir()) == before
    assert read_arrays(saved)[0] == METADATA


def test_an_interruption_right_after_the_manifest_switch_keeps_the_new_files(saved, monkeypatch):
    real_replace = os.replace

    def replace_then_interrupt(source, target):
        real_replace(source, target)
        if str(target).endswith("manifest.json"):
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_arrays(saved, {"other": np.arange(10)}, {"generation": 2})
    monkeypatch.undo()
    metadata, arrays = read_arrays(saved)
    assert metadata == {"generation": 2}
    np.testing.assert_array_equal(arrays["other"], np.arange(10))


def test_a_reader_racing_a_writer_that_deletes_its_files_reads_the_new_save(tmp_path, monkeypatch):
    directory = tmp_path / "scene"
    write_arrays(directory, {"nodes": np.full(10, 1.0)}, {"generation": 1})
    real_map_array = persistence._map_array
    calls = []

    def map_after_a_save(*args):
        # The manifest was read; now a writer replaces it and deletes its files.
        if not calls:
            write_arrays(directory, {"nodes": np.full(10, 2.0)}, {"generation": 2})
        calls.append(args)
        return real_map_array(*args)

    monkeypatch.setattr(persistence, "_map_array", map_after_a_save)
    metadata, arrays = read_arrays(directory)
    assert metadata == {"generation": 2}
    np.testing.assert_array_equal(arrays["nodes"], np.full(10, 2.0))
    assert len(calls) == 2


def test_concurrent_writers_and_readers_always_see_one_whole_save(tmp_path):
    directory = tmp_path / "scene"
    write_arrays(directory, {"a": np.zeros(64), "b": np.zeros((8, 3), np.int32)}, {"generation": 0})
    errors = []
    done = threading.Event()

    def writer(offset):
        try:
            for generation in range(offset, offset + 20, 2):
                arrays = {"a": np.full(64, float(generation)), "b": np.full((8, 3), generation, np.int32)}
                write_arrays(directory, arrays, {"generation": generation})
        except Exception as error:
            errors.append(error)

    def reader():
        try:
            while not done.is_set():
                metadata, arrays = read_arrays(directory)
                generation = metadata["generation"]
                assert (arrays["a"] == generation).all() and (arrays["b"] == generation).all()
        except Exception as error:
            errors.append(error)

    writers = [threading.Thread(target=writer, args=(offset,)) for offset in (1, 2)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in writers + readers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    for thread in readers:
        thread.join()
    assert errors == []
    metadata, arrays = read_arrays(directory)
    assert metadata["generation"] in (19, 20)
    assert len(npy_files(directory)) == 2


CRASHING_WRITER = """
import importlib.util, os, sys
import numpy as np
spec = importlib.util.spec_from_file_location("persistence", sys.argv[1])
persistence = importlib.util.module_from_spec(spec)
spec.loader.exec_module(persistence)
crash_at, replaced = sys.argv[3], []
real_replace = os.replace

def dying_replace(source, target):
    # kill -9 at this instant: no cleanup, no Python shutdown.
    if crash_at == "manifest" and str(target).endswith("manifest.json"):
        os._exit(17)
    if crash_at == "second array" and str(target).endswith(".npy") and replaced:
        os._exit(17)
    replaced.append(target)
    return real_replace(source, target)

os.replace = dying_replace
arrays = {"nodes": np.full(100, 2.0), "faces": np.full((4, 3), 2), "extra": np.ones(3)}
persistence.write_arrays(sys.argv[2], arrays, {"generation": 2}, tokens={"nodes": "n-1"})
"""


@pytest.mark.parametrize("crash_at", ["second array", "manifest"])
def test_a_writer_killed_mid_save_leaves_the_old_save_readable(tmp_path, crash_at):
    directory = tmp_path / "scene"
    old = {"nodes": np.full(100, 1.0), "faces": np.full((4, 3), 1)}
    write_arrays(directory, old, {"generation": 1}, tokens={"nodes": "n-0"})
    old_files = npy_files(directory)

    result = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, persistence.__file__, str(directory), crash_at],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 17, result.stderr
    assert len(os.listdir(directory)) > len(old_files) + 2, "the crashed write left no files behind"

    metadata, arrays = read_arrays(directory)
    assert metadata == {"generation": 1}
    assert list(arrays) == ["nodes", "faces"]
    np.testing.assert_array_equal(arrays["nodes"], old["nodes"])
    np.testing.assert_array_equal(arrays["faces"], old["faces"])

    write_arrays(directory, {"nodes": np.zeros(3)}, {"generation": 3})
    assert len(npy_files(directory)) == 1
    assert not [name for name in os.listdir(directory) if name.endswith(".tmp")]


def test_opening_sixty_megabytes_is_fast(tmp_path):
    directory = tmp_path / "scene"
    rng = np.random.default_rng(1)
    arrays = {
        "vertices": rng.random((1_000_000, 3), dtype=np.float32),
        "faces": rng.integers(0, 1_000_000, size=(1_000_000, 3), dtype=np.int32),
        "nodes": rng.random((500_000, 8), dtype=np.float32),
        "normals": rng.random((1_000_000, 3), dtype=np.float32),
    }
    write_arrays(directory, arrays, {})
    assert sum(array.nbytes for array in arrays.values()) >= 52_000_000
    start = time.perf_counter()
    _, loaded = read_arrays(directory)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, f"read_arrays took {elapsed:.3f} s"
    np.testing.assert_array_equal(loaded["faces"][-5:], arrays["faces"][-5:])


# Damage: every one is a ValueError naming the directory and the problem.

def damage_message(directory, problem):
    return re.escape(f"scene directory {directory} is damaged: ") + problem


def test_missing_directory(tmp_path):
    with pytest.raises(ValueError, match=re.escape(f"scene directory {tmp_path / 'nope'} does not exist")):
        read_arrays(tmp_path / "nope")


def test_directory_is_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ValueError, match=re.escape(f"scene directory {path} is not a directory")):
        read_arrays(path)
    with pytest.raises(ValueError, match=re.escape(f"scene directory {path} exists and is not a directory")):
        write_arrays(path, {}, {})


def test_missing_manifest(tmp_path):
    with pytest.raises(ValueError, match=re.escape(
            f"scene directory {tmp_path} has no manifest.json (not a saved scene, or its first save did not finish)")):
        read_arrays(tmp_path)


@pytest.mark.parametrize("content, problem", [
    (b"{\"format\": \"bvh-scene\", ", r"manifest.json is not valid JSON: Expecting property name"),
    (b"\xff\xfe garbage", r"manifest.json is not UTF-8 text"),
    (b"[1, 2, 3]", r"manifest.json is not a JSON object"),
    (b'{"format": "bvh-scene", "version": 1, "arrays": {}}', r"manifest.json has no 'metadata'"),
    (b'{"format": "bvh-scene", "version": 1, "metadata": {}, "arrays": []}', r"manifest.json 'arrays' is not a JSON object"),
])
def test_bad_manifest(saved, content, problem):
    (saved / "manifest.json").write_bytes(content)
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved)


def test_wrong_format(saved):
    rewrite_manifest(saved, lambda manifest: manifest.update(format="glTF"))
    with pytest.raises(ValueError, match=re.escape(
            f"scene directory {saved} does not hold a 'bvh-scene' save: manifest.json says format 'glTF'")):
        read_arrays(saved)


def test_newer_version(saved):
    rewrite_manifest(saved, lambda manifest: manifest.update(version=FORMAT_VERSION + 1))
    with pytest.raises(ValueError, match=re.escape(
            f"scene directory {saved} was saved in format version 3, newer than this library reads (version 2)")):
        read_arrays(saved)


@pytest.mark.parametrize("version", [0, "1", None, True, 1.5])
def test_unsupported_version(saved, version):
    rewrite_manifest(saved, lambda manifest: manifest.update(version=version))
    with pytest.raises(ValueError, match=re.escape(
            f"scene directory {saved} has unsupported format version {version!r} (this library reads versions 1 to 2)")):
        read_arrays(saved)


def test_missing_array_file(saved):
    path = array_file(saved, "faces")
    path.unlink()
    with pytest.raises(ValueError, match=damage_message(saved, re.escape(f"array 'faces' file {path.name} is missing"))):
        read_arrays(saved)


def test_truncated_array_file(saved):
    path = array_file(saved, "nodes")
    size = path.stat().st_size
    with open(path, "r+b") as stream:
        stream.truncate(size - 10)
    problem = re.escape(f"array 'nodes' file {path.name} is {size - 10} bytes, manifest says {size}")
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved)
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved, verify=False)


def test_flipped_byte_fails_the_checksum_and_only_with_verify(saved):
    path = array_file(saved, "points")
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x40
    path.write_bytes(bytes(data))
    problem = re.escape(f"array 'points' file {path.name} fails its checksum (crc32 0x") + r"[0-9a-f]{8}, manifest says 0x"
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved)
    _, arrays = read_arrays(saved, verify=False)
    assert not np.array_equal(arrays["points"], sample_arrays()["points"])


def test_shape_mismatch_with_the_file_header(saved):
    rewrite_manifest(saved, lambda manifest: manifest["arrays"]["nodes"].update(shape=[8, 17]))
    path = array_file(saved, "nodes")
    problem = re.escape(f"array 'nodes' file {path.name} holds dtype '<f4' shape (17, 8), "
                        "manifest says dtype '<f4' shape (8, 17)")
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved)


def test_dtype_mismatch_with_the_file_header(saved):
    rewrite_manifest(saved, lambda manifest: manifest["arrays"]["nodes"].update(dtype="<i4"))
    with pytest.raises(ValueError, match=damage_message(saved, r"array 'nodes' file .* holds dtype '<f4' shape \(17, 8\), "
                                                               r"manifest says dtype '<i4' shape \(17, 8\)")):
        read_arrays(saved)


def test_garbage_npy_header(saved):
    path = array_file(saved, "points")
    data = bytearray(path.read_bytes())
    data[:6] = b"NOTNPY"
    path.write_bytes(bytes(data))
    problem = re.escape(f"array 'points' file {path.name} is not a readable .npy file (")
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved)


@pytest.mark.parametrize("file_name", ["../outside.npy", "sub/nodes.npy", "..", "/etc/passwd", "a\\b.npy"])
def test_file_names_that_escape_the_directory(saved, file_name):
    (saved.parent / "outside.npy").write_bytes((saved / manifest_of(saved)["arrays"]["nodes"]["file"]).read_bytes())
    rewrite_manifest(saved, lambda manifest: manifest["arrays"]["nodes"].update(file=file_name))
    problem = re.escape(f"array 'nodes' file name {file_name!r} is not a plain file name in the directory")
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved)


@pytest.mark.parametrize("field, value, problem", [
    ("crc32", None, r"array 'nodes' has an invalid crc32 None"),
    ("crc32", 2**32, r"array 'nodes' has an invalid crc32 4294967296"),
    ("shape", [17, -8], r"array 'nodes' has an invalid shape \[17, -8\]"),
    ("shape", "17x8", r"array 'nodes' has an invalid shape '17x8'"),
    ("bytes", -1, r"array 'nodes' has an invalid size -1"),
    ("dtype", "<nonsense", r"array 'nodes' has an unknown dtype '<nonsense'"),
    ("dtype", "|O", r"array 'nodes' has an unsupported dtype '\|O'"),
    ("dtype", ">f4", r"array 'nodes' has an unsupported dtype '>f4'"),
    ("token", 5, r"array 'nodes' has an invalid token 5"),
])
def test_invalid_manifest_entries(saved, field, value, problem):
    rewrite_manifest(saved, lambda manifest: manifest["arrays"]["nodes"].update({field: value}))
    with pytest.raises(ValueError, match=damage_message(saved, problem)):
        read_arrays(saved)


def test_entry_missing_a_key(saved):
    rewrite_manifest(saved, lambda manifest: manifest["arrays"]["nodes"].pop("bytes"))
    with pytest.raises(ValueError, match=damage_message(saved, r"array 'nodes' entry has no 'bytes'")):
        read_arrays(saved)


def test_unsafe_array_name_in_the_manifest(saved):
    rewrite_manifest(saved, lambda manifest: manifest["arrays"].update({"../x": manifest["arrays"]["points"]}))
    with pytest.raises(ValueError, match=damage_message(saved, r"array name '\.\./x' is not letters")):
        read_arrays(saved)


# Refusals on write: checked before anything touches the disk.

@pytest.mark.parametrize("name", ["", "a-b", "../x", "a/b", "a.b", "é", "a b", 3])
def test_bad_array_names_are_refused(tmp_path, name):
    with pytest.raises(ValueError, match=re.escape(f"array name {name!r} must be letters, digits and underscores only")):
        write_arrays(tmp_path / "scene", {name: np.zeros(3)}, {})
    assert not (tmp_path / "scene").exists()


@pytest.mark.parametrize("value, dtype", [
    (np.array([object(), 1], dtype=object), "object"),
    (np.array(["a", "b"]), "<U1"),
    (np.zeros(2, dtype=[("x", "<f4")]), r"\[\('x', '<f4'\)\]"),
    (np.array([1, 2], dtype="datetime64[s]"), r"datetime64\[s\]"),
])
def test_non_numeric_arrays_are_refused(tmp_path, value, dtype):
    with pytest.raises(ValueError, match=f"array 'bad' must hold bool or numbers, got dtype {dtype}"):
        write_arrays(tmp_path / "scene", {"bad": value}, {})
    assert not (tmp_path / "scene").exists()


def test_bad_metadata_and_tokens_are_refused(tmp_path):
    directory = tmp_path / "scene"
    with pytest.raises(ValueError, match="metadata must be JSON-serialisable: Object of type ndarray"):
        write_arrays(directory, {}, {"bad": np.zeros(2)})
    with pytest.raises(ValueError, match="metadata must be a dict, got list"):
        write_arrays(directory, {}, [])
    with pytest.raises(ValueError, match="token of array 'a' must be a string or None, got int"):
        write_arrays(directory, {"a": np.zeros(2)}, {}, tokens={"a": 7})
    with pytest.raises(ValueError, match="arrays must be a dict of name to array, got list"):
        write_arrays(directory, [np.zeros(2)], {})
    assert not directory.exists()
