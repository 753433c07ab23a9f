"""The Dockerfile, .dockerignore and compose.yaml, read: what they promise on paper.

tests/test_container.py builds the image with a Docker engine and runs it; these
checks need no engine and take no time, so they run with every ``make test``.
"""

import json
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = ROOT / "compose.yaml"


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
