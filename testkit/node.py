"""Node and npm for the TypeScript client's tests (``clients/typescript``).

``npm ci`` installs exactly what ``package-lock.json`` pins, from the npm registry, into
``clients/typescript/node_modules`` (gitignored); it runs again only when the lock file changed
since the last install (a stamp beside the modules), so the suite does not download the same
packages every run.
"""

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

#: The TypeScript client's package.
PACKAGE = Path(__file__).resolve().parents[1] / "clients" / "typescript"

#: The oldest Node the client supports (its package.json's engines).
NODE_MAJOR = 20

#: The stamp ``npm ci`` leaves: the sha256 of the package-lock.json it installed.
STAMP = PACKAGE / "node_modules" / ".bvh-pick-lock-sha256"


def missing_node() -> str | None:
    """Why the TypeScript client's tests cannot run here, or None when node and npm can."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        absent = " and ".join(name for name, path in (("node", node), ("npm", npm)) if path is None)
        return (f"{absent} not installed: the TypeScript client's tests need Node >= {NODE_MAJOR} and npm "
                "(apt-get install nodejs npm)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    found = re.match(r"v(\d+)\.", version)
    if found is None or int(found.group(1)) < NODE_MAJOR:
        return f"node {version or '(no version)'} is too old: the TypeScript client needs Node >= {NODE_MAJOR}"
    return None


def npm(*arguments: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """``npm <arguments>`` in the package's directory; its output captured (stdout and stderr together)."""
    return subprocess.run(["npm", *arguments], cwd=PACKAGE, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


def install() -> None:
    """``npm ci`` from the package's lock file, unless node_modules already holds that install."""
    lock = hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == lock:
        return
    done = npm("ci", "--no-audit", "--no-fund")
    if done.returncode != 0:
        raise RuntimeError(f"npm ci failed ({done.returncode}):\n{done.stdout}")
    STAMP.write_text(lock)


def run_script(name: str, env: dict[str, str] | None = None) -> str:
    """``npm run <name>``; its output, or a RuntimeError with it."""
    done = npm("run", name, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"npm run {name} failed ({done.returncode}):\n{done.stdout}")
    return done.stdout
