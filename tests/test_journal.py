"""service.store.journal and journal_writer: records round-trip, a torn or damaged tail is where reading
stops, group commit."""

import os
import threading

import numpy as np
import pytest

from service.store import journal
from service.store.journal_writer import FileSink, JournalWriter


def _records(tmp_path, *records: bytes) -> str:
    path = str(tmp_path / "journal")
    journal.write_new(path, list(records))
    return path


def test_a_record_round_trips_with_its_fields_and_arrays(tmp_path):
    transforms = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    path = _records(tmp_path, journal.encode(0, "base"),
                    journal.encode(1, "objects", {"changes": [{"id": 3, "name": "ü"}]},
                                   {"moved": np.array([4, 5]), "transforms": transforms}))
    records, end, size, inode = journal.read_file(path)
    assert end == size == os.path.getsize(path) and inode == os.stat(path).st_ino
    assert [(r.seq, r.kind) for r in records] == [(0, "base"), (1, "objects")]
    assert records[1].fields == {"changes": [{"id": 3, "name": "ü"}]}
    assert records[1].arrays["moved"].tolist() == [4, 5]
    assert records[1].arrays["transforms"].dtype == np.float32
    assert np.array_equal(records[1].arrays["transforms"], transforms)


def test_reading_stops_before_a_torn_last_record(tmp_path):
    whole = journal.encode(1, "remove", {"ids": [1]})
    second = journal.encode(2, "remove", {"ids": [2]})
    for cut in range(1, len(second)):
        path = _records(tmp_path, whole, second[:cut])
        records, end, size, _ = journal.read_file(path)
        assert [r.seq for r in records] == [1] and end == len(whole) and size == len(whole) + cut


def test_reading_stops_at_a_record_whose_checksum_fails(tmp_path):
    whole = journal.encode(1, "remove", {"ids": [1]})
    damaged = bytearray(journal.encode(2, "remove", {"ids": [2]}))
    damaged[-2] ^= 0x10
    path = _records(tmp_path, whole, bytes(damaged), journal.encode(3, "remove", {"ids": [3]}))
    records, end, _, _ = journal.read_file(path)
    assert [r.seq for r in records] == [1] and end == len(whole)


def test_reading_from_an_offset_gives_only_the_later_records(tmp_path):
    first, second = journal.encode(1, "remove", {"ids": [1]}), journal.encode(2, "remove", {"ids": [2]})
    path = _records(tmp_path, first, second)
    records, end, _, _ = journal.read_file(path, len(first))
    assert [r.seq for r in records] == [2] and end == len(first) + len(second)


def test_a_length_past_the_limit_is_damage_not_a_record():
    frame = (journal.MAX_RECORD_BYTES + 1).to_bytes(4, "little") + bytes(4)
    assert journal.read_records(frame + bytes(64)) == ([], 0)


def test_concurrent_appenders_share_syncs_and_every_record_is_there(tmp_path):
    path = str(tmp_path / "journal")
    writer = JournalWriter(FileSink(path))
    lock = threading.Lock()
    sequence = iter(range(1, 10**6))
    appended = 400

    def append_some():
        for _ in range(appended // 8):
            with lock:
                seq = next(sequence)
                writer.append(journal.encode(seq, "remove", {"ids": [seq]}), seq)
            writer.wait_durable(seq)

    threads = [threading.Thread(target=append_some) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records, end, size, _ = journal.read_file(path)
    assert [r.seq for r in records] == list(range(1, appended + 1)) and end == size
    # Group commit: eight editors waiting at once need fewer syncs than edits.
    assert 1 <= writer.commits < appended


def test_cut_drops_a_torn_tail(tmp_path):
    path = str(tmp_path / "journal")
    whole = journal.encode(1, "remove", {"ids": [1]})
    with open(path, "wb") as stream:
        stream.write(whole + journal.encode(2, "remove", {"ids": [2]})[:7])
    writer = JournalWriter(FileSink(path))
    writer.sink.cut(len(whole))
    writer.append(journal.encode(2, "remove", {"ids": [2]}), 2)
    writer.wait_durable(2)
    assert [r.seq for r in journal.read_file(path)[0]] == [1, 2]


def test_a_replaced_file_is_noticed_by_its_writer(tmp_path):
    path = _records(tmp_path, journal.encode(0, "base"))
    sink = FileSink(path)
    assert sink.follows(sink.inode)
    journal.write_new(path, [journal.encode(5, "base")])
    assert not sink.follows(sink.inode)


@pytest.mark.parametrize("kind", ["base", "objects"])
def test_a_record_without_arrays_has_an_empty_array_map(tmp_path, kind):
    path = _records(tmp_path, journal.encode(7, kind))
    (record,), _, _, _ = journal.read_file(path)
    assert (record.seq, record.kind, record.fields, record.arrays) == (7, kind, {}, {})
