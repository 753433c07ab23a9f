"""Is the server still answering while a large scene uploads? ``/health`` and picks meanwhile.

    python -m bench.responsive                    # 300,000 nodes
    python -m bench.responsive --nodes 30000 --every-ms 20

A GLB of ``--nodes`` nodes, each placing the same box (one mesh, so the
file is small: the work is the scene graph), is made here and POSTed as
``/scenes`` to a ``python -m service`` started here (one worker, a
temporary data directory). Meanwhile two threads, each on a kept-alive
connection of its own, send ``GET /health`` and a pick on another (small)
scene every ``--every-ms`` milliseconds, from before the upload starts until
it is answered. Reported: the upload's time, status and the server's peak
RSS, and for ``/health`` and the picks their count, median, p99 and max
latency; and first the same for ``--idle-seconds`` with nothing uploading
(the machine's own noise: on a shared 2-core machine it has its spikes too).

The bars (issue 36): while a 300,000-node glTF uploads, ``/health`` max
latency at most 100 ms, a pick on another scene p99 at most 20 ms.
"""

import argparse
import http.client
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.http import Server, free_port
from bench.upload_bombs import multipart
from testkit.bombs import many_nodes_glb, memory, reset_peak

MEBIBYTE = 1 << 20


class Poller(threading.Thread):
    """One request every ``every`` seconds on a kept-alive connection, its latencies kept."""

    def __init__(self, url: str, method: str, path: str, body: bytes, every: float):
        super().__init__(daemon=True)
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=600)
        self.method, self.path, self.body, self.every = method, path, body, every
        self.latencies: list[float] = []
        self.failures = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        headers = {"Content-Type": "application/json"} if self.body else {}
        while not self.stopping.is_set():
            start = time.perf_counter()
            self.connection.request(self.method, self.path, body=self.body or None, headers=headers)
            response = self.connection.getresponse()
            response.read()
            self.latencies.append(time.perf_counter() - start)
            self.failures += response.status != 200
            time.sleep(max(0.0, self.every - (time.perf_counter() - start)))

    def summary(self) -> str:
        ms = sorted(1e3 * value for value in self.latencies)
        if not ms:
            return "no answers"
        p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
        return (f"{len(ms)} answers ({self.failures} not 200): median {statistics.median(ms):.1f} ms, "
                f"p99 {p99:.1f} ms, max {ms[-1]:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300_000)
    parser.add_argument("--every-ms", type=float, default=20.0)
    parser.add_argument("--idle-seconds", type=float, default=10.0,
                        help="poll this long with nothing uploading first, for the machine's own noise (0: not)")
    args = parser.parse_args()
    made = time.perf_counter()
    glb = many_nodes_glb(args.nodes)
    print(f"{args.nodes} nodes: a {len(glb) / MEBIBYTE:.1f} MB GLB, made in {time.perf_counter() - made:.1f} s")
    with tempfile.TemporaryDirectory() as data_dir:
        server = Server(Path(data_dir), free_port())
        server.start()
        try:
            body, headers = multipart("box.glb", many_nodes_glb(1))
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
            connection.request("POST", "/scenes/upload", body=body, headers=headers)
            answer = connection.getresponse()
            other = json.loads(answer.read())["id"]
            assert answer.status == 201
            pick = json.dumps({"origin": [0.1, 0.2, 5.0], "direction": [0, 0, -1]}).encode()
            if args.idle_seconds:
                # The machine's own noise: the same polling with nothing uploading.
                idle = [Poller(server.url, "GET", "/health", b"", args.every_ms / 1e3),
                        Poller(server.url, "POST", f"/scenes/{other}/pick", pick, args.every_ms / 1e3)]
                for poller in idle:
                    poller.start()
                time.sleep(args.idle_seconds)
                for poller in idle:
                    poller.stopping.set()
                    poller.join()
                print(f"idle, /health: {idle[0].summary()}")
                print(f"idle, pick: {idle[1].summary()}")
            pollers = [Poller(server.url, "GET", "/health", b"", args.every_ms / 1e3),
                       Poller(server.url, "POST", f"/scenes/{other}/pick", pick, args.every_ms / 1e3)]
            for poller in pollers:
                poller.start()
            time.sleep(0.5)
            peak_reset = reset_peak(server.process.pid)
            before = memory(server.process.pid)["VmRSS"]
            body, headers = multipart("many_nodes.glb", glb)
            # A connection of its own: uvicorn closes one idle past its keep-alive timeout (5 s).
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
            start = time.perf_counter()
            connection.request("POST", "/scenes/upload", body=body, headers=headers)
            answer = connection.getresponse()
            text = answer.read()
            seconds = time.perf_counter() - start
            time.sleep(0.5)
            for poller in pollers:
                poller.stopping.set()
            for poller in pollers:
                poller.join()
            after = memory(server.process.pid)
            growth = (after["VmHWM"] if peak_reset else after["VmRSS"]) - before
            print(f"upload: {answer.status} in {seconds:.1f} s, server RSS growth {growth / MEBIBYTE:.0f} MB"
                  + ("" if answer.status == 201 else f": {text[:200]!r}"))
            print(f"/health meanwhile: {pollers[0].summary()}")
            print(f"pick on another scene meanwhile: {pollers[1].summary()}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
