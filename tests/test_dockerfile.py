"""The Dockerfile, .dockerignore and compose.yaml: read, and their commands run.

No Docker engine runs here, so :func:`test_dockerfile_commands_install_warm_up_and_serve`
plays the Dockerfile instead: a copy of the source tree filtered by
``.dockerignore`` is the build context, a fresh virtualenv stands in for the
image's Python, a directory of ``tmp_path`` for its root file system. Each
instruction is carried out in order (``WORKDIR``, ``COPY``, ``ENV``, ``RUN``;
commands that need root, such as ``useradd`` and ``chown``, are left out),
then ``CMD`` starts the service and ``HEALTHCHECK`` checks it.
"""

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = ROOT / "compose.yaml"

#: Commands of a RUN step that need root (or change nothing a test can see).
ROOT_ONLY = {"groupadd", "useradd", "chown", "chmod", "apt-get"}

#: pip output that means the package index could not be reached.
NETWORK_ERRORS = ("NewConnectionError", "Failed to establish a new connection", "Temporary failure in name resolution",
                  "Network is unreachable", "ConnectTimeoutError", "ReadTimeoutError", "ProxyError",
                  "Max retries exceeded", "Name or service not known")

#: Time for /health to answer after the start command (the issue's bound).
HEALTH_TIMEOUT = 120.0

#: Time for /ready (saved scenes open, kernels loaded) after the start command:
#: well under the minutes numba needs to compile the kernels, so passing it
#: shows that they came from the cache the build step filled.
READY_TIMEOUT = 60.0


# ------------------------------------------------------------------ parsing
def instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile: continuations joined, comments dropped."""
    result, pending = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        result.append((keyword.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return result


def exec_form(arguments: str) -> list[str]:
    """A JSON (exec form) argument list, or a shell form as ``sh -c``."""
    if arguments.startswith("["):
        return json.loads(arguments)
    return ["/bin/sh", "-c", arguments]


def env_pairs(arguments: str) -> dict[str, str]:
    """``ENV A=1 B="two words"`` (and the legacy ``ENV A 1``) as a dict."""
    words = shlex.split(arguments)
    if words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    return dict(word.split("=", 1) for word in words)


def healthcheck_command(arguments: str) -> list[str]:
    """The command of ``HEALTHCHECK [--options] CMD ...``."""
    options, _, command = arguments.partition("CMD ")
    assert command, f"HEALTHCHECK without CMD: {arguments!r}"
    assert all(word.startswith("--") for word in options.split()), options
    return exec_form(command.strip())


def final_env(steps) -> dict[str, str]:
    env = {}
    for keyword, arguments in steps:
        if keyword == "ENV":
            env.update(env_pairs(arguments))
    return env


def ignore_patterns(path: Path = DOCKERIGNORE) -> list[tuple[bool, re.Pattern]]:
    """``.dockerignore`` as ``(exception, regex)`` pairs, Docker's way: paths
    relative to the context root, ``*`` and ``?`` within one path segment,
    ``**`` across any number of them, ``!`` re-including, the last match winning."""
    patterns = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        line = line.lstrip("!").strip("/")
        parts = []
        for segment in line.split("/"):
            if segment == "**":
                parts.append("(?:[^/]+/)*")
                continue
            regex = ""
            i = 0
            while i < len(segment):
                char = segment[i]
                if char == "*":
                    regex += "[^/]*"
                elif char == "?":
                    regex += "[^/]"
                elif char == "[":
                    end = segment.index("]", i)
                    regex += "[" + segment[i + 1:end].replace("!", "^", 1) + "]"
                    i = end
                else:
                    regex += re.escape(char)
                i += 1
            parts.append(regex + "/")
        patterns.append((exception, re.compile("".join(parts)[:-1] + "$")))
    return patterns


def ignored(relative: str, patterns) -> bool:
    """Whether ``.dockerignore`` leaves a path (or a directory above it) out of the context."""
    pieces = relative.split("/")
    for depth in range(1, len(pieces) + 1):
        prefix = "/".join(pieces[:depth])
        verdict = None
        for exception, regex in patterns:
            if regex.match(prefix):
                verdict = not exception
        if verdict:
            return True
    return False


def build_context(target: Path) -> Path:
    """A copy of the source tree as Docker would send it: filtered by .dockerignore."""
    patterns = ignore_patterns()
    for directory, subdirectories, files in os.walk(ROOT):
        relative = Path(directory).relative_to(ROOT)
        subdirectories[:] = [d for d in subdirectories if not ignored((relative / d).as_posix(), patterns)]
        for name in files:
            if not ignored((relative / name).as_posix(), patterns):
                (target / relative).mkdir(parents=True, exist_ok=True)
                shutil.copy2(Path(directory) / name, target / relative / name)
    return target


# ------------------------------------------------------- what the files say
def test_dockerfile_base_user_volume_port_healthcheck_and_cmd():
    steps = instructions()
    keywords = [keyword for keyword, _ in steps]
    # The base image is a build argument (a base made from Debian's packages where no registry
    # answers), python:3.11-slim or a later slim Python by default.
    assert steps[0][0] == "ARG" and re.fullmatch(r"BASE_IMAGE=python:3\.1[1-9]-slim(-\w+)?", steps[0][1]), steps[0]
    assert steps[1] == ("FROM", "${BASE_IMAGE}") and keywords.count("FROM") == 1

    users = [arguments for keyword, arguments in steps if keyword == "USER"]
    assert users, "no USER: the service would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    created = " ".join(arguments for keyword, arguments in steps if keyword == "RUN" and "useradd" in arguments)
    pattern = rf"--uid\s+{user}\b" if user.isdigit() else rf"\buseradd\b[^&]*\s{re.escape(user)}\s*($|&)"
    assert re.search(pattern, created), f"USER {user} is never created by useradd"

    env = final_env(steps)
    assert env["PICK_DATA_DIR"] == "/data"
    assert env["PICK_HOST"] == "0.0.0.0", "CMD must bind all interfaces, through PICK_HOST"
    # Safe by default: the image sets no key and does not opt out of needing one, so a container
    # started without PICK_API_KEY refuses to serve; the header says how to start it.
    assert "PICK_API_KEY" not in env and env.get("PICK_ALLOW_OPEN", "false").lower() in ("false", "0")
    header = DOCKERFILE.read_text().split("\nFROM ")[0]
    assert re.search(r"docker run .*-e PICK_API_KEY=", header) and "PICK_ALLOW_OPEN=true" in header
    assert env.get("PICK_PORT", "8000") == "8000"
    (volume,) = [arguments for keyword, arguments in steps if keyword == "VOLUME"]
    assert (json.loads(volume) if volume.startswith("[") else volume.split()) == ["/data"]
    assert [arguments for keyword, arguments in steps if keyword == "EXPOSE"] == ["8000"]

    (healthcheck,) = [arguments for keyword, arguments in steps if keyword == "HEALTHCHECK"]
    command = healthcheck_command(healthcheck)
    assert command[0] == "python" and "urllib" in command[-1] and "/health" in command[-1]
    assert not {"curl", "wget"} & set(" ".join(command).split()), "python:*-slim has neither curl nor wget"

    commands = [exec_form(arguments) for keyword, arguments in steps if keyword == "CMD"]
    assert commands[-1] == ["python", "-m", "service"]
    assert keywords.index("CMD") == len(keywords) - 1 or "ENTRYPOINT" not in keywords


def test_dockerfile_caches_dependencies_and_compiled_kernels():
    steps = instructions()
    copies = [(i, arguments) for i, (keyword, arguments) in enumerate(steps) if keyword in ("COPY", "ADD")]
    installs = [i for i, (keyword, arguments) in enumerate(steps) if keyword == "RUN" and "pip install" in arguments]
    assert installs, "nothing is installed"
    # The dependencies are installed before any source is copied in ...
    before = [arguments for i, arguments in copies if i < installs[0]]
    assert before and all(arguments.split()[-2:-1] == ["pyproject.toml"] for arguments in before), before
    # ... and the source is installed after, without reinstalling them.
    sources = [i for i, arguments in copies if re.match(r"(--\S+\s+)*bvh\b", arguments)]
    assert sources and sources[0] > installs[0]
    later = [steps[i][1] for i in installs if i > sources[0]]
    assert later and all("--no-deps" in arguments for arguments in later)

    # numba's cache: in the image, filled at build time by the service's user.
    env = final_env(steps)
    cache = env.get("NUMBA_CACHE_DIR", "")
    assert cache.startswith("/") and not cache.startswith("/tmp"), cache
    user_at = max(i for i, (keyword, _) in enumerate(steps) if keyword == "USER")
    warm = [i for i, (keyword, arguments) in enumerate(steps) if keyword == "RUN" and "warmup.py" in arguments]
    assert warm and min(warm) > user_at and min(warm) > sources[0]
    assert "--require-cached" in " ".join(steps[i][1] for i in warm)
    owner = [arguments for keyword, arguments in steps if keyword == "RUN" and "chown" in arguments]
    assert any("$NUMBA_CACHE_DIR" in arguments or cache in arguments for arguments in owner)
    assert any("$PICK_DATA_DIR" in arguments or "/data" in arguments for arguments in owner)
    assert (ROOT / "docker" / "warmup.py").is_file()


def test_dockerignore_keeps_the_context_to_the_source():
    patterns = ignore_patterns()
    for path in (".venv/bin/python", ".git/HEAD", "data/scenes/manifest.json", "bvh/__pycache__/x.cpython-311.pyc",
                 "bvh/__pycache__/numba-0/kernels.f-80.py311.nbi", "bvh/kernels.f-80.py311.nbc", "service/x.pyc",
                 ".pytest_cache/v/cache", ".hypothesis/examples/x", "bvh_pick.egg-info/PKG-INFO"):
        assert ignored(path, patterns), path
    for path in ("pyproject.toml", "README.md", "bvh/scene/scene.py", "bvh/primitives/rays.py", "service/app.py",
                 "service/api/routes/picks.py", "sample_meshes/city_block.glb", "sample_meshes/terrain.obj",
                 "docker/warmup.py"):
        assert not ignored(path, patterns), path
    # Everything the Dockerfile copies is in the context.
    for keyword, arguments in instructions():
        if keyword in ("COPY", "ADD"):
            for source in [word for word in shlex.split(arguments) if not word.startswith("--")][:-1]:
                assert (ROOT / source).exists() and not ignored(source, patterns), source


def test_compose_file_mounts_the_volume_and_checks_health():
    text = COMPOSE.read_text()
    assert re.search(r"^services:\s*$", text, re.M) and re.search(r"^\s+build:\s*\n\s+context:\s*\.\s*$", text, re.M)
    # The base image as the Dockerfile's argument, its default unless the caller's environment sets one.
    (default,) = [arguments.split("=", 1)[1] for keyword, arguments in instructions()
                  if keyword == "ARG" and arguments.startswith("BASE_IMAGE=")]
    assert re.search(rf"^\s+BASE_IMAGE:\s*\$\{{BASE_IMAGE:-{re.escape(default)}\}}\s*$", text, re.M)
    assert re.search(r"""^\s+-\s*["']?8000:8000["']?\s*$""", text, re.M)
    volume = re.search(r"""^\s+-\s*["']?([\w.-]+):/data["']?\s*$""", text, re.M)
    assert volume, "no named volume mounted at /data"
    assert re.search(rf"^volumes:\s*\n\s+{re.escape(volume.group(1))}:", text, re.M), "the volume is not declared"
    # The key comes from the caller's environment; without it the service refuses to start.
    assert re.search(r"^\s+PICK_API_KEY:\s*\$\{PICK_API_KEY:-\}\s*$", text, re.M)
    assert re.search(r"^\s+PICK_ALLOW_OPEN:\s*\$\{PICK_ALLOW_OPEN:-false\}\s*$", text, re.M)
    assert re.search(r"^# PICK_API_KEY=.* docker compose up", text, re.M)
    test_line = re.search(r"^\s+test:\s*(\[.*\])\s*$", text, re.M)
    assert test_line and "healthcheck:" in text
    (healthcheck,) = [arguments for keyword, arguments in instructions() if keyword == "HEALTHCHECK"]
    assert json.loads(test_line.group(1)) == ["CMD"] + healthcheck_command(healthcheck)

# ------------------------------------------------------------ running them
def _index_reachable() -> str | None:
    """None when the package index answers, else why not."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/") + "/pip/"
    try:
        with urllib.request.urlopen(index, timeout=15) as response:
            response.read(1)
        return None
    except (urllib.error.URLError, OSError) as exc:
        return f"{index}: {exc}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError):
        return None


class _Image:
    """A root file system in a directory, and a virtualenv for its Python."""

    def __init__(self, tmp_path: Path, steps):
        self.root = tmp_path / "rootfs"
        self.venv = tmp_path / "venv"
        self.context = build_context(tmp_path / "context")
        self.log = tmp_path / "build.log"
        # Top-level directories the Dockerfile names: their absolute paths move under self.root.
        tops = set()
        for keyword, arguments in steps:
            words = list(env_pairs(arguments).values()) if keyword == "ENV" else shlex.split(arguments)
            if keyword in ("WORKDIR", "COPY", "ADD", "ENV", "VOLUME"):
                tops |= {word.split("/")[1] for word in words if word.startswith("/") and len(word) > 1}
        self._absolute = re.compile(r"(?<![\w./$-])/(%s)(?=[/\s\"':]|$)" % "|".join(map(re.escape, sorted(tops))))
        self.cwd = self.root
        self.env = {}
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True, timeout=300)

    def path(self, text: str) -> str:
        """Container paths in a command or value, moved under the root directory."""
        return self._absolute.sub(lambda m: f"{self.root}/{m.group(1)}", text)

    def environ(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        env.update(self.env)
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        # The image keeps no pip cache; here the machine's warm one saves the downloads.
        env.pop("PIP_NO_CACHE_DIR", None)
        return env

    def workdir(self, arguments: str) -> None:
        target = Path(self.path(arguments))
        self.cwd = target if target.is_absolute() else self.cwd / target
        self.cwd.mkdir(parents=True, exist_ok=True)

    def copy(self, arguments: str) -> None:
        words = [word for word in shlex.split(arguments) if not word.startswith("--")]
        *sources, destination = words
        target = Path(self.path(destination))
        target = target if target.is_absolute() else self.cwd / target
        for source in sources:
            origin = self.context / source
            assert origin.exists(), f"COPY {source}: not in the build context"
            if origin.is_dir():
                shutil.copytree(origin, target, dirs_exist_ok=True)
            elif destination.endswith("/") or len(sources) > 1:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target / origin.name)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target)

    def run(self, arguments: str) -> None:
        assert not arguments.startswith("["), "RUN steps are expected in shell form"
        commands = [command.strip() for command in arguments.split("&&")]
        kept = [self.path(command) for command in commands if shlex.split(command)[0] not in ROOT_ONLY]
        if not kept:
            return
        script = " && ".join(kept)
        started = time.perf_counter()
        done = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.environ(), capture_output=True,
                              text=True, timeout=1200)
        with open(self.log, "a") as log:
            log.write(f"$ {script}\n# {time.perf_counter() - started:.1f} s, exit {done.returncode}\n"
                      f"{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            output = done.stdout + done.stderr
            if "pip" in script and any(error in output for error in NETWORK_ERRORS):
                pytest.skip(f"the package index is unreachable, so the image's dependencies cannot be "
                            f"installed: {output[-500:]}")
            pytest.fail(f"RUN {script}\nexited {done.returncode}:\n{output[-4000:]}")


@pytest.mark.slow
def test_dockerfile_commands_install_warm_up_and_serve(tmp_path):
    if not (ROOT / "service" / "app.py").exists():
        pytest.skip("service/app.py does not exist yet: there is no service to start")
    unreachable = _index_reachable()
    if unreachable:
        pytest.skip(f"the package index is unreachable, so the image's dependencies cannot be installed: "
                    f"{unreachable}")
    steps = instructions()
    image = _Image(tmp_path, steps)
    timings = {}
    try:
        started = time.perf_counter()
        for keyword, arguments in steps:
            if keyword == "WORKDIR":
                image.workdir(arguments)
            elif keyword in ("COPY", "ADD"):
                image.copy(arguments)
            elif keyword == "ENV":
                image.env.update({name: image.path(value) for name, value in env_pairs(arguments).items()})
            elif keyword == "RUN":
                run_started = time.perf_counter()
                image.run(arguments)
                timings[arguments[:40]] = time.perf_counter() - run_started
        timings["build"] = time.perf_counter() - started
        env = image.environ()

        # The project is installed, not run from a source tree beside it.
        where = subprocess.run(["python", "-c", "import bvh, service, sample_meshes as s; "
                                "print(bvh.__file__); print(s.path('city_block.glb').is_file())"],
                               cwd=image.cwd, env=env, capture_output=True, text=True, timeout=120)
        assert where.returncode == 0, where.stderr
        assert where.stdout.split() == [str(next((image.venv / "lib").glob("python3*/site-packages"))
                                            / "bvh" / "__init__.py"), "True"], where.stdout
        cache = Path(env["NUMBA_CACHE_DIR"])
        assert cache.is_relative_to(image.root) and any(cache.rglob("*.nbi")), "the build left numba's cache empty"

        # CMD as the container runs it, on every interface: without a key it refuses to start.
        (command,) = [exec_form(arguments) for keyword, arguments in steps if keyword == "CMD"][-1:]
        port = _free_port()
        env.update(PICK_PORT=str(port))
        env.pop("PICK_API_KEY", None)
        env.pop("PICK_ALLOW_OPEN", None)
        refused = subprocess.run(command, cwd=image.cwd, env=env, capture_output=True, text=True, timeout=120)
        assert refused.returncode != 0 and "PICK_API_KEY is not set" in refused.stderr, refused.stderr[-3000:]
        assert "PICK_ALLOW_OPEN=true" in refused.stderr
        # With a key it serves (on loopback here, and a free port); /health answers without the key.
        env.update(PICK_HOST="127.0.0.1", PICK_API_KEY="test-key")
        data = Path(env["PICK_DATA_DIR"])
        assert data.is_dir() and data.is_relative_to(image.root)
        base = f"http://127.0.0.1:{port}"
        with open(tmp_path / "service.log", "w") as log:
            started = time.perf_counter()
            server = subprocess.Popen(command, cwd=image.cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                while _get(base + "/health") != 200:
                    assert server.poll() is None, \
                        f"the service exited {server.returncode}:\n{(tmp_path / 'service.log').read_text()[-3000:]}"
                    assert time.perf_counter() - started < HEALTH_TIMEOUT, \
                        f"no /health within {HEALTH_TIMEOUT:.0f} s:\n{(tmp_path / 'service.log').read_text()[-3000:]}"
                    time.sleep(0.2)
                timings["health"] = time.perf_counter() - started
                ready = _get(base + "/ready")
                while ready == 503 and time.perf_counter() - started < READY_TIMEOUT:
                    time.sleep(0.2)
                    ready = _get(base + "/ready")
                timings["ready"] = time.perf_counter() - started
                assert ready in (200, 404), \
                    (f"/ready answered {ready} {timings['ready']:.0f} s after the start: are the kernels the service "
                     f"warms up at start-up missing from docker/warmup.py?\n"
                     f"{(tmp_path / 'service.log').read_text()[-3000:]}")

                (healthcheck,) = [arguments for keyword, arguments in steps if keyword == "HEALTHCHECK"]
                probe = subprocess.run(healthcheck_command(healthcheck), cwd=image.cwd, env=env,
                                       capture_output=True, text=True, timeout=30)
                assert probe.returncode == 0, f"HEALTHCHECK failed against a healthy service: {probe.stderr}"
            finally:
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
        assert server.returncode in (0, -signal.SIGTERM), server.returncode
        # And a HEALTHCHECK against no service fails.
        probe = subprocess.run(healthcheck_command(healthcheck), cwd=image.cwd, env=env, capture_output=True,
                               text=True, timeout=30)
        assert probe.returncode != 0
        print("timings (s): " + ", ".join(f"{name}: {seconds:.1f}" for name, seconds in timings.items()))
    finally:
        # The virtualenv is most of a gigabyte; keep the logs and the context.
        shutil.rmtree(image.venv, ignore_errors=True)
