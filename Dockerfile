# deblur in a container: `docker build -t deblur .`, then `docker run --rm -v "$PWD:/work" deblur predict photo.jpg`.
#
# BASE_IMAGE is any Debian-like image with python3 and its venv module (the default: the official Python image).
# CI builds this same file on a base made from Debian's own packages (tests/container/). The GPU variant:
#   docker build --build-arg TENSORFLOW="tensorflow[and-cuda]==2.21.*" -t deblur:gpu .
# (TensorFlow's CUDA wheels; run with --gpus all). Everything is installed into a virtual environment, so the
# same steps work on either base.
ARG BASE_IMAGE=python:3.11-slim-bookworm

# === Build: the virtual environment, with pip's cache and the sources left behind ===
FROM ${BASE_IMAGE} AS build
ARG TENSORFLOW="tensorflow==2.21.*"
RUN python3 -m venv /opt/deblur
ENV PATH=/opt/deblur/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY deblur ./deblur
COPY configs ./configs
# TensorFlow first, as asked (the GPU variant's extra), then deblur itself (this folder: nothing to pin); no test
# or docs extras.
# hadolint ignore=DL3013
RUN pip install --no-cache-dir "${TENSORFLOW}" && pip install --no-cache-dir . \
    && find /opt/deblur -name "__pycache__" -type d -prune -exec rm -rf {} +

# === Run: the environment and nothing else (no compilers, caches, tests or sources) ===
FROM ${BASE_IMAGE}
COPY --from=build /opt/deblur /opt/deblur
RUN useradd --create-home --uid 1000 deblur
ENV PATH=/opt/deblur/bin:$PATH \
    DEBLUR_HOME=/work/.deblur-cache \
    TF_CPP_MIN_LOG_LEVEL=2 \
    PYTHONUNBUFFERED=1
# Outputs go to the mounted /work; nothing is written inside the image. Run as your own user (--user "$(id -u):$(id
# -g)") so that what it writes there is yours; by default it runs as the unprivileged user 1000.
USER 1000
WORKDIR /work
# deblur serve's port: docker run -p 8000:8000 deblur serve --host 0.0.0.0
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
    CMD ["python3", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["deblur"]
CMD ["--help"]
