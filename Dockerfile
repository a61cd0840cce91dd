# syntax=docker/dockerfile:1
# Stage 1: build a wheel and install it with its dependencies into a virtual environment.
FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY cogs ./cogs
COPY prompts ./prompts
RUN python -m venv /opt/venv && /opt/venv/bin/pip install .

# Stage 2: the runtime: the venv only, a non-root user, the database on a volume.
FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    RUNSCRIBE_DB=/data/runscribe.db \
    RUNSCRIBE_CONFIG=/config/runscribe.toml \
    WANDB_DIR=/data/wandb \
    WANDB_CACHE_DIR=/data/wandb/cache \
    WANDB_CONFIG_DIR=/data/wandb/config \
    MPLCONFIGDIR=/tmp/matplotlib \
    RUNSCRIBE_WEB_HOST=0.0.0.0
RUN useradd --create-home --uid 10001 runscribe && mkdir -p /data /config \
    && chown runscribe:runscribe /data
COPY --from=build /opt/venv /opt/venv
USER runscribe
WORKDIR /home/runscribe
# matplotlib's font cache built once here: each chart process (started when a chart is due and
# ended when idle) then starts in about half a second instead of rebuilding it.
RUN python -c "import matplotlib.font_manager"
VOLUME ["/data"]
# The status page and /healthz, served when RUNSCRIBE_WEB_PORT is set (e.g. to 8080). Without it
# there is nothing to probe and the check passes; with it, a failing source or a stuck poll loop
# (503) marks the container unhealthy.
EXPOSE 8080
HEALTHCHECK --interval=60s --timeout=10s --start-period=120s --retries=3 CMD \
    python -c "import os, urllib.request; port = os.environ.get('RUNSCRIBE_WEB_PORT'); \
port and urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=8)"
CMD ["python", "-m", "bot", "run"]
