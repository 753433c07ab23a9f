"""bvh asks numba for a threadsafe threading layer: the service runs parallel kernels from
several threads at once, and numba's built-in workqueue layer is not threadsafe."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import threading
import numpy as np
import numba
import bvh
assert numba.config.THREADING_LAYER == "threadsafe", numba.config.THREADING_LAYER
vertices = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
mesh = bvh.build(vertices, np.array([[0, 1, 2]]))
origins = np.tile([[0.25, 0.25, 1.0]], (5000, 1))
directions = np.tile([[0.0, 0.0, -1.0]], (5000, 1))
answers = []
def pick():
    for _ in range(20):
        answers.append(mesh.intersect(origins, directions).t)
threads = [threading.Thread(target=pick) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert len(answers) == 80 and all((t == 1.0).all() for t in answers)
print(numba.threading_layer())
"""


def test_parallel_kernels_called_from_several_threads_run_on_a_threadsafe_layer_and_agree():
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_THREADING_LAYER"}
    environment["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", PROGRAM], env=environment, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] in ("tbb", "omp")
