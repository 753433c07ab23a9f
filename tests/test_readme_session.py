"""The curl sessions of README.md and docs/http-api.md, run with real ``curl``
against a real ``python -m service`` (an empty data directory, a free port),
each answer compared with what the page shows.

A session is a fenced ``sh`` block whose first line starts with ``$ curl``.
A line starting with ``$ `` is a command (continued while its quotes are
open or it ends with a backslash); the lines after it, up to the next
command, are what it prints. An answer wrapped over several lines continues
on lines that start with one space; the wrap may stand where the answer has
a space or where it has none. In what the page shows:

- ``...`` stands for anything (a wildcard, as few characters as possible);
- a scene id (32 hex digits) is the id the session's upload got: the first
  time an id appears in an answer it is learnt, and later commands and
  answers use the id the server gave;
- a timestamp (``2026-11-24T03:03:25.677Z``) and a duration (any number
  after a key ending in ``_ms``) match any of their kind;
- an integer matches exactly; a number with a fraction or an exponent to a
  relative 1e-9 (the last digits of a float64 are the CPU's rounding, which
  no test depends on); everything else character for character.

``localhost:8000`` becomes the test server's address. Files the sessions
name are made here as the pages describe them: ``sample_meshes/torus.ply``
is the sample file, ``torus-1.5x.f32`` the torus's 1,152 vertices scaled by
1.5 and ``ten-vertices.f32`` its first ten, as little-endian float32 (the
page fetches ``torus.f32`` from the service, and the torus scaled by 1.5
must be what it fetched, scaled).
"""

import gzip
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import sample_meshes
from testkit.meshes import sample_mesh
from testkit.servers import free_port, start_server

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", ROOT / "docs" / "http-api.md")

#: The commands a session may use; anything else is a mistake in the page.
PROGRAMS = {"curl", "printf"}

ID = r"[0-9a-f]{32}"
TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"
NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
TOKENS = re.compile(rf"(?P<id>(?<![0-9a-zA-Z]){ID}(?![0-9a-zA-Z]))|(?P<time>{TIMESTAMP})|(?P<any>\.\.\.)"
                    rf"|(?P<duration>(?<=_ms\":){NUMBER})|(?P<number>(?<![\w.]){NUMBER}(?![\w]))|(?P<wrap>\n )")


@dataclass
class Step:
    command: str      # as the page writes it, without the "$ "
    shown: str        # what the page shows it prints, its lines as written
    line: int         # where the command starts in the page (1-based)


def sessions(page: Path) -> list[tuple[int, list[Step]]]:
    """The page's sessions: (line of the block, its steps)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```sh" and i + 1 < len(lines) and lines[i + 1].startswith("$ curl"):
            start, i = i + 1, i + 1
            block = []
            while lines[i].strip() != "```":
                block.append((i + 1, lines[i]))
                i += 1
            found.append((start, steps(block)))
        i += 1
    return found


def _complete(command: str) -> bool:
    if command.endswith("\\"):
        return False
    try:
        shlex.split(command)
    except ValueError:          # a quote still open
        return False
    return True


def steps(block: list[tuple[int, str]]) -> list[Step]:
    result, k = [], 0
    while k < len(block):
        number, text = block[k]
        assert text.startswith("$ "), f"line {number}: a session line that is neither a command nor its answer"
        command = text[2:]
        k += 1
        while not _complete(command):
            command += "\n" + block[k][1]
            k += 1
        shown = []
        while k < len(block) and not block[k][1].startswith("$ "):
            shown.append(block[k][1])
            k += 1
        result.append(Step(command, "\n".join(shown), number))
    return result


class Session:
    """Runs one session's steps in ``workdir`` against ``address`` (host:port)."""

    def __init__(self, address: str, workdir: Path):
        self.address = address
        self.workdir = workdir
        self.ids: dict[str, str] = {}       # the page's scene id -> the server's
        self.variables: dict[str, str] = {}
        self.outputs: list[tuple[Step, str]] = []

    def substitute(self, text: str) -> str:
        text = text.replace("localhost:8000", self.address)
        for shown, real in self.ids.items():
            text = text.replace(shown, real)
        return text

    def run(self, step: Step) -> str:
        command = self.substitute(step.command)
        assignment = re.fullmatch(r"([A-Z]\w*)=(\S+)", command)
        if assignment:
            self.variables[assignment.group(1)] = assignment.group(2)
            return ""
        program = shlex.split(command)[0]
        assert program in PROGRAMS, f"line {step.line}: the session runs {program!r}, which this test does not know"
        # Nothing of the caller's environment but PATH: no proxy variables, no ~/.curlrc (CURL_HOME).
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CURL_HOME": str(self.workdir),
                       **self.variables}
        done = subprocess.run(["bash", "-c", command], cwd=self.workdir, capture_output=True, timeout=600,
                              env=environment)
        assert done.returncode == 0, f"line {step.line}: {command}\nexit {done.returncode}: {done.stderr.decode()}"
        out = done.stdout.decode().replace("\r\n", "\n")
        self.outputs.append((step, out))
        return out

    def compare(self, step: Step, actual: str) -> None:
        """``actual`` against what the page shows (rules in the module's docstring)."""
        shown = step.shown.rstrip()
        actual = actual.rstrip()
        pattern, expected = [], []
        position = 0
        for match in TOKENS.finditer(shown):
            pattern.append(re.escape(shown[position:match.start()]))
            position = match.end()
            kind = match.lastgroup
            if kind == "id":
                pattern.append(f"({ID})")
                expected.append(("id", match.group()))
            elif kind == "time":
                pattern.append(TIMESTAMP)
            elif kind == "any":
                pattern.append(".*?")
            elif kind == "duration":
                pattern.append(NUMBER)
            elif kind == "number":
                pattern.append(f"({NUMBER})")
                expected.append(("number", match.group()))
            else:                                   # a wrapped answer: a space or nothing
                pattern.append(" ?")
        pattern.append(re.escape(shown[position:]))
        found = re.fullmatch("".join(pattern), actual, re.DOTALL)
        assert found, (f"line {step.line}: {step.command}\nthe page shows:\n{shown}\nthe server answered:\n{actual}")
        for (kind, want), got in zip(expected, found.groups()):
            where = f"line {step.line}: {step.command}\nthe page shows {want}, the server answered {got} in:\n{actual}"
            if kind == "id":
                assert self.ids.setdefault(want, got) == got, where
            elif re.fullmatch(r"-?\d+", want):
                assert got == want, where
            else:
                assert math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-12), where


def _write_inputs(workdir: Path) -> None:
    (workdir / "sample_meshes").mkdir()
    shutil.copy(sample_meshes.path("torus.ply"), workdir / "sample_meshes" / "torus.ply")
    vertices, _ = sample_mesh("torus.ply")
    assert len(vertices) == 1152
    (workdir / "torus-1.5x.f32").write_bytes((vertices * 1.5).astype("<f4").tobytes())
    (workdir / "ten-vertices.f32").write_bytes(vertices[:10].astype("<f4").tobytes())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed (apt-get install curl): the sessions are curl command lines")
    data_dir = tmp_path_factory.mktemp("readme-data")
    port = free_port()
    process = start_server(data_dir, port)
    yield f"127.0.0.1:{port}"
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_the_pages_hold_sessions():
    assert sessions(PAGES[0]), "README.md has no curl session (a ```sh block starting with $ curl)"
    assert sessions(PAGES[1]), "docs/http-api.md has no curl session"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_answer_is_what_the_page_shows(page, server, tmp_path):
    for block_line, block in sessions(page):
        workdir = tmp_path / f"block-{block_line}"
        workdir.mkdir()
        _write_inputs(workdir)
        session = Session(server, workdir)
        for step in block:
            session.compare(step, session.run(step))
        _check_what_the_page_says_of_it(page, session, workdir)


def _check_what_the_page_says_of_it(page: Path, session: Session, workdir: Path) -> None:
    """The figures the page's prose draws from its session, where the session holds them."""
    text = " ".join(page.read_text(encoding="utf-8").split())
    idbuffer = workdir / "idbuffer.gz"
    if idbuffer.exists():
        planes = np.frombuffer(gzip.decompress(idbuffer.read_bytes()), np.uint8)
        assert planes.size == 640 * 480 * 12            # object int32, triangle int32, depth float32
        objects = planes[:640 * 480 * 4].view("<i4")
        seen = int((objects >= 0).sum())
        assert f"{seen:,} pixels show the torus" in text, f"{seen:,} pixels show the torus"
    fetched = workdir / "torus.f32"
    if fetched.exists():
        # torus-1.5x.f32 is what the page says: the vertices the service gave, scaled by 1.5.
        scaled = (np.fromfile(fetched, "<f4") * 1.5).astype("<f4")
        assert scaled.tobytes() == (workdir / "torus-1.5x.f32").read_bytes()
    lassos = [json.loads(out) for step, out in session.outputs if '"polygon"' in step.command]
    if lassos:
        counts = [len(answer["objects"][0]["triangles"]) for answer in lassos]
        assert f"The lasso selects {counts[0]:,} triangles; `visible_only` keeps the {counts[1]:,}" in text, counts
