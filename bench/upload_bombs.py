"""Compression and texture bombs posted to a real server: answer time, status, RSS growth.

    python -m bench.upload_bombs                  # 2 GiB bombs, default settings
    python -m bench.upload_bombs --gib 8 --runs 3

Each bomb of ``testkit.bombs.upload_bombs`` (bz2, gzip, xz, zip, tar.gz,
3MF, and a glTF whose MASK material reads a 13000 x 13000 PNG) is POSTed as
``/scenes`` to a ``python -m service`` started here (one worker, a temporary
data directory, default limits). Before each request the server's peak RSS
(``VmHWM``) is reset (``/proc/<pid>/clear_refs``), so the growth reported is
the peak over the request less the RSS before it. One small zip is uploaded
first, so that the modules an upload imports are not counted against a bomb.

The bars (issue 36): a 1 KB archive expanding to 2 GiB refused in at most
1 s with the server's RSS growing at most 100 MB; a 13000 x 13000 texture
refused before decoding.
"""

import argparse
import io
import tempfile
import time
import zipfile
from pathlib import Path

import trimesh

from bench.http import Server, free_port, request
from testkit.bombs import GIBIBYTE, memory, reset_peak, upload_bombs

MEBIBYTE = 1 << 20


def multipart(filename: str, content: bytes) -> tuple[bytes, dict]:
    """A ``multipart/form-data`` body of one ``file`` part, and its headers."""
    boundary = "benchboundary7d1f"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def post_file(url: str, filename: str, content: bytes) -> tuple[int, bytes]:
    body, headers = multipart(filename, content)
    return request(url, "POST", "/scenes/upload", body, headers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="what each archive expands to, in GiB")
    parser.add_argument("--runs", type=int, default=1, help="posts of each bomb (the worst is reported)")
    args = parser.parse_args()
    made = time.perf_counter()
    bombs = upload_bombs(int(args.gib * GIBIBYTE))
    print(f"bombs made in {time.perf_counter() - made:.1f} s, each expanding to {args.gib:g} GiB "
          f"(the texture: 13000 x 13000 RGBA = 676 MB decoded)")
    with tempfile.TemporaryDirectory() as data_dir:
        server = Server(Path(data_dir), free_port())
        server.start()
        try:
            warm = io.BytesIO()
            with zipfile.ZipFile(warm, "w") as archive:
                archive.writestr("box.obj", trimesh.creation.box().export(file_type="obj"))
            status, answer = post_file(server.url, "box.zip", warm.getvalue())
            assert status == 201, answer
            pid = server.process.pid
            print(f"{'bomb':<8} {'file':<14} {'bytes':>9} {'status':>6} {'seconds':>8} {'RSS growth MB':>14}")
            for kind, (filename, content) in bombs.items():
                worst_seconds, worst_growth, status = 0.0, 0, None
                for _ in range(args.runs):
                    peak_reset = reset_peak(pid)
                    before = memory(pid)["VmRSS"]
                    start = time.perf_counter()
                    status, answer = post_file(server.url, filename, content)
                    seconds = time.perf_counter() - start
                    after = memory(pid)
                    growth = (after["VmHWM"] if peak_reset else after["VmRSS"]) - before
                    worst_seconds, worst_growth = max(worst_seconds, seconds), max(worst_growth, growth)
                print(f"{kind:<8} {filename:<14} {len(content):>9} {status:>6} {worst_seconds:>8.3f} "
                      f"{worst_growth / MEBIBYTE:>14.1f}")
                print(f"         {answer.decode()[:240]}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
