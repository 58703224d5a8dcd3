# One image for every process: strongroom serve | worker | operator | migrate | dev.
# Multi-stage: dependencies from uv.lock in a build stage, a slim runtime as a non-root user.
# No HEALTHCHECK: the Helm chart's probes use /healthz and /readyz.

FROM python:3.11-slim-bookworm AS build
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv
RUN pip install --no-cache-dir uv==0.9.5
# Optional extras, space-separated: `minilm` and/or `wordllama` for the offline embeddings
# providers (docs/embeddings.md); none by default (search by words, or an `openai` upstream).
ARG EXTRAS=""
WORKDIR /src
COPY pyproject.toml uv.lock README.md ./
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN read -ra extras <<< "$EXTRAS" \
    && uv sync --frozen --no-dev --no-install-project "${extras[@]/#/--extra=}"
COPY strongroom ./strongroom
RUN read -ra extras <<< "$EXTRAS" \
    && uv sync --frozen --no-dev --no-editable "${extras[@]/#/--extra=}"

FROM python:3.11-slim-bookworm
RUN groupadd --system --gid 10001 strongroom \
    && useradd --system --uid 10001 --gid strongroom --no-create-home --shell /usr/sbin/nologin strongroom
COPY --from=build /app/.venv /app/.venv
# Read-only root file system friendly: nothing is written outside /tmp (an emptyDir in the
# chart), bytecode is compiled at build time. The `minilm` provider keeps its int8 model
# (built at its first load) in $XDG_CACHE_HOME/strongroom.
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    STRONGROOM_DATA_DIR=/tmp/strongroom \
    XDG_CACHE_HOME=/tmp/.cache
WORKDIR /tmp
USER 10001:10001
EXPOSE 8080 9090
ENTRYPOINT ["strongroom"]
CMD ["serve", "--port", "8080", "--metrics-port", "9090"]
