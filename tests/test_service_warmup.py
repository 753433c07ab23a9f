"""The warm-up's pick path: what it costs a start before ``/ready``."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PICK_PATH_ALONE = """
import sys
import numpy as np
from service.ops import warmup
pick_path, rest = warmup.stages(np.random.default_rng(0))
warmup.cache_counts()
for step in pick_path:
    step.run()
print(sorted(name for name in ("trimesh", "bvh.trimesh") if name in sys.modules))
"""


def test_the_pick_path_imports_no_trimesh():
    # trimesh's import alone is some 0.4 s of a restart after a crash; the
    # sample files are read by the first background step instead.
    done = subprocess.run([sys.executable, "-c", PICK_PATH_ALONE], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_background_starts_with_the_sample_files():
    from service.ops import warmup

    _, rest = warmup.stages(None)
    assert rest[0].name == "reading the sample files"
