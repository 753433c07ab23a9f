"""The operator's tools for a data directory: ``python -m service verify`` and ``python -m service repair``.

``verify DATA_DIR`` checks every scene as opening it would, without
serving it: ``service.json``, the checkpoint's manifest and every array
against its checksum, the journal's records against the checkpoint
(:func:`service.store.integrity.scan_journal`). It prints one line per
scene and says whether any is damaged.

``repair DATA_DIR SCENE_ID --accept-loss`` makes a scene with a damaged
journal writable again by keeping the records before the damage: the
journal is rewritten with them (under the scene's edit lock, so a running
service notices the new file and reopens the scene whole), and every byte
from the damage on is written aside first, to
``scenes/<id>/journal.discarded-<UTC time>``, for whoever wants to dig in
it. A damaged checkpoint cannot be repaired this way (restore it from a
backup, or delete the scene).
"""

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bvh.io.persistence import fsync_directory, read_saved

from . import edits, journal
from .files import file_lock
from .integrity import JournalScan, new_journal_id, read_journal, scan_journal, write_sync_mark
from .journal import JOURNAL_FILE
from .scenes import EDIT_LOCK, JOURNAL_SEQ, SCENE_DIR, SCENE_ID, SERVICE_FILE


@dataclass
class SceneReport:
    """What :func:`check_scene` found.

    Attributes
    ----------
    scene_id : str
    name : str or None
    damage : str or None
        Why the scene is damaged (None: it is whole).
    checkpoint_seq : int
        The last record its checkpoint holds (-1: unreadable).
    scan : JournalScan or None
        Its journal judged against the checkpoint (None: not read).
    """

    scene_id: str
    name: str | None = None
    damage: str | None = None
    checkpoint_seq: int = -1
    scan: JournalScan | None = None

    def line(self) -> str:
        """The report's line for this scene."""
        if self.damage is not None:
            return f"DAMAGED {self.scene_id} ({self.name or 'no name'}): {self.damage}"
        records = len(self.scan.records) - 1 if self.scan.records else 0
        torn = f"; a torn last record of {self.scan.torn} bytes (never acknowledged)" if self.scan.torn else ""
        return (f"ok      {self.scene_id} ({self.name or 'no name'}): checkpoint holds records up to "
                f"{self.checkpoint_seq}; journal of {self.scan.size} bytes, {records} records{torn}")


def scenes_dir_of(data_dir: Path) -> Path:
    """``DATA_DIR/scenes`` (or ``DATA_DIR`` itself when it is that folder)."""
    data_dir = Path(data_dir)
    if (data_dir / "scenes").is_dir():
        return data_dir / "scenes"
    if data_dir.name == "scenes" and data_dir.is_dir():
        return data_dir
    raise FileNotFoundError(f"{data_dir} holds no scenes/ folder: not a data directory of the service")


def check_scene(directory: Path) -> SceneReport:
    """Check one scene directory: metadata, checkpoint arrays against their checksums, journal."""
    report = SceneReport(directory.name)
    try:
        metadata = json.loads((directory / SERVICE_FILE).read_text())
        if not isinstance(metadata, dict) or metadata.get("id") != directory.name:
            raise ValueError(f"{SERVICE_FILE} does not describe scene {directory.name}")
        report.name = metadata.get("name")
    except (OSError, ValueError) as error:
        report.damage = f"{SERVICE_FILE} is unreadable: {error}"
        return report
    try:
        saved = read_saved(directory / SCENE_DIR, verify=True)
    except (OSError, ValueError) as error:
        report.damage = f"its checkpoint is damaged (the scene is refused whole): {error}"
        return report
    report.checkpoint_seq = int(saved.metadata.get("annotations", {}).get(JOURNAL_SEQ, 0))
    report.scan = scan_journal(read_journal(str(directory / JOURNAL_FILE)), report.checkpoint_seq)
    if report.scan.damage is not None:
        report.damage = (f"its journal is damaged (the scene is served read-only): "
                         f"{report.scan.damage.describe()}; {report.scan.damage.records_before} records before it")
    return report


def verify(data_dir: Path) -> tuple[list[str], bool]:
    """Check every scene of a data directory; returns the report's lines and whether any is damaged."""
    scenes_dir = scenes_dir_of(data_dir)
    lines, damaged = [], False
    for entry in sorted(os.scandir(scenes_dir), key=lambda e: e.name):
        if not SCENE_ID.fullmatch(entry.name) or not entry.is_dir():
            lines.append(f"ignored {entry.name}: not a scene id")
            continue
        report = check_scene(Path(entry.path))
        damaged |= report.damage is not None
        lines.append(report.line())
    count = sum(line.startswith(("ok", "DAMAGED")) for line in lines)
    bad = sum(line.startswith("DAMAGED") for line in lines)
    lines.append(f"{count} scenes checked in {scenes_dir}: {bad} damaged" if bad else
                 f"{count} scenes checked in {scenes_dir}: all whole")
    return lines, damaged


def repair(data_dir: Path, scene_id: str, accept_loss: bool) -> tuple[list[str], int]:
    """Keep the records before a damaged journal's damage (see the module notes).

    Returns
    -------
    (lines, exit code)
        0: repaired, or nothing to repair; 1: cannot be repaired this way;
        2: damaged, and ``accept_loss`` was not given (nothing changed).
    """
    if not SCENE_ID.fullmatch(scene_id):
        return [f"{scene_id!r} is not a scene id (32 lowercase hex digits)"], 1
    directory = scenes_dir_of(data_dir) / scene_id
    if not directory.is_dir():
        return [f"no scene {scene_id} in {directory.parent}"], 1
    with file_lock(directory / EDIT_LOCK):
        report = check_scene(directory)
        if report.scan is None:
            return [report.line(), "not repaired: only a damaged journal can be repaired by keeping what is "
                                   "before the damage; restore the scene from a backup, or delete it"], 1
        damage = report.scan.damage
        if damage is None:
            return [report.line(), "nothing to repair"], 0
        kept = report.scan.records[1:]
        plan = (f"keeps the checkpoint (records up to {report.checkpoint_seq}) and {len(kept)} journal records "
                f"before byte {damage.offset}; discards the {damage.records_after} valid records after the damage")
        if not accept_loss:
            return [report.line(), f"not repaired: repairing {plan}. Run again with --accept-loss to do it."], 2
        found = read_journal(str(directory / JOURNAL_FILE))
        aside = _set_aside(directory, found.data[damage.offset:] if found.data is not None else b"")
        # A journal continuing a newer checkpoint than the one on disk keeps nothing: it restarts after it.
        base = min(report.scan.records[0].seq, report.checkpoint_seq) if report.scan.records else report.checkpoint_seq
        journal_id = new_journal_id()
        path = str(directory / JOURNAL_FILE)
        journal.write_new(path, [journal.encode(base, edits.BASE, {"id": journal_id})]
                          + [journal.encode(r.seq, r.kind, r.fields, r.arrays) for r in kept])
        write_sync_mark(path, journal_id, os.path.getsize(path))
    return [report.line(), f"repaired: the scene {plan}; the bytes from the damage on are in {aside}"], 0


def _set_aside(directory: Path, data: bytes) -> Path:
    """Write the discarded bytes beside the journal, synced, before the journal is rewritten."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    aside = directory / f"{JOURNAL_FILE}.discarded-{stamp}"
    with open(aside, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    fsync_directory(directory)
    return aside
