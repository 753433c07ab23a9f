# The picking service in a container.
#
#   docker build -t bvh-pick .
#   docker run --rm -p 8000:8000 -v bvh-pick-data:/data -e PICK_API_KEY="$(openssl rand -hex 32)" bvh-pick
#   curl localhost:8000/health
#
# or `PICK_API_KEY=... docker compose up --build` (compose.yaml). The container
# listens on every interface (PICK_HOST=0.0.0.0), so the service refuses to start
# without PICK_API_KEY (clients send "Authorization: Bearer <key>"); to serve
# without a key on purpose (behind a proxy that authenticates), pass
# -e PICK_ALLOW_OPEN=true. Saved scenes live in the /data volume; PICK_*
# variables configure the service (see service/settings.py), e.g. -e PICK_WORKERS=4.
#
# The base image is a build argument: where no image registry answers,
# docker/debian-base-image.sh makes one from Debian's packages (python3 in a
# virtualenv first on PATH, this machine's pip configuration) and
#   docker build --network host --build-arg BASE_IMAGE=bvh-pick-base:bookworm -t bvh-pick .
# builds on it. tests/test_container.py (`make test-container`) builds this
# file with a Docker engine and runs the container: /ready, a pick through the
# port, `docker kill -s KILL` and the scene found again from the volume, uid
# 10001, and the refusal to start open without a key.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# numba runs the batch kernels on a threading layer, and the service calls them from
# several threads at once: its built-in "workqueue" layer is not threadsafe (two
# uploads side by side gave wrong vertices), so the image carries GNU OpenMP and
# bvh asks numba for a threadsafe layer.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --system --gid 10001 pick \
 && useradd --system --uid 10001 --gid pick --create-home --home-dir /home/pick --shell /usr/sbin/nologin pick

WORKDIR /build

# Dependencies first, from pyproject.toml alone: this layer is rebuilt only
# when pyproject.toml changes, not on every change to the source. The
# packages are empty stand-ins here, and the project itself is uninstalled
# again, leaving only its dependencies.
COPY pyproject.toml ./
RUN mkdir -p bvh service sample_meshes \
 && touch README.md bvh/__init__.py service/__init__.py sample_meshes/__init__.py \
 && pip install . \
 && pip uninstall --yes bvh-pick \
 && rm -rf bvh service sample_meshes build README.md bvh_pick.egg-info

# The project itself, without touching the dependencies.
COPY pyproject.toml README.md ./
COPY bvh ./bvh
COPY service ./service
COPY sample_meshes ./sample_meshes
RUN pip install --no-deps . \
 && rm -rf /build/bvh /build/service /build/sample_meshes /build/build /build/bvh_pick.egg-info

ENV PICK_HOST=0.0.0.0 \
    PICK_PORT=8000 \
    PICK_DATA_DIR=/data \
    NUMBA_CACHE_DIR=/opt/bvh-pick/numba-cache

RUN mkdir -p "$PICK_DATA_DIR" "$NUMBA_CACHE_DIR" \
 && chown pick:pick "$PICK_DATA_DIR" "$NUMBA_CACHE_DIR"
COPY docker/warmup.py /opt/bvh-pick/warmup.py

# By number, so that Kubernetes' runAsNonRoot can tell it is not root.
USER 10001:10001
WORKDIR /home/pick

# numba's kernels compiled now, as the service's user, into NUMBA_CACHE_DIR,
# so that a container answers within seconds of starting; the second run
# fails the build unless every kernel now loads from that cache. They are
# compiled for the build machine's CPU: on another CPU model numba compiles
# them again on first use (the cache stays writable), once per container.
RUN python /opt/bvh-pick/warmup.py \
 && python /opt/bvh-pick/warmup.py --require-cached

VOLUME /data
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PICK_PORT', '8000'), timeout=4)"]

CMD ["python", "-m", "service"]
