"""Settings of background jobs: slots, retries, bounds, parsing children, worker liveness."""

from __future__ import annotations

from pydantic import BaseModel, Field


class JobSettings(BaseModel):
    """Background jobs: how many run at once, their retries and bounds, the child processes
    that parse files, and the workers' liveness."""

    worker_concurrency: int = Field(
        default=2,
        ge=1,
        description=(
            "Jobs one `strongroom worker` runs at once (the embedded default: jobs its process "
            "runs at once). A worker's queue connection pool holds up to this plus one."
        ),
    )
    job_slots_kept_for_other_tenants: int = Field(
        default=1,
        ge=0,
        description=(
            "Of a process's `STRONGROOM_WORKER_CONCURRENCY` job slots (a worker's, or the embedded"
            " default's), how many one tenant's jobs leave to other tenants; a tenant holds at "
            "least one. Its next job is not started but queued again a second later (still "
            "`pending`, no attempt counted), so one tenant's slow documents cannot hold up "
            "another's (issue 28). A tenant alone borrows the kept slots (issue 41: while no other"
            " tenant's job is `pending`), and gives a borrowed slot back as soon as one is: the "
            "borrowing job's parse is stopped (its child killed) and the job queued again, its "
            "attempt not counted. Set `0` for no share. Helm: `worker.slotsKeptForOtherTenants`."
        ),
    )
    job_max_attempts: int = Field(
        default=3,
        ge=1,
        description=(
            "Attempts at a job before it is failed (D46): `internal_error` after that many errors,"
            " `job_abandoned` after that many starts that never ended (a killed worker). A problem"
            " in the input itself (`unreadable_document`) fails at once."
        ),
    )
    job_timeout_seconds: float = Field(
        default=1800.0,
        gt=0,
        description=(
            "A job (ingestion, template fill, workflow run) still running after this long is "
            "failed with `job_timeout` and not retried. Work it runs in a bounded child process "
            "(reading a document or a template) is killed with it; work already handed to a thread"
            " (a workflow's analyses) runs on to its end in the background, its result dropped."
        ),
    )
    job_memory_limit_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=64 * 1024 * 1024,
        description=(
            "Address space (RLIMIT_AS) of the child process a job parses its file in "
            "(`strongroom/jobs/bounded.py`: ingestion's reading, chunking and indexing of every "
            "document, and the template fill's reading and writing of the DOCX). Past it the job "
            "fails with `job_resource_limit` and is not retried; the worker is untouched. At least"
            " 64 MiB; a Python with the parsers imported takes about 230 MiB of address space (100"
            " MiB resident) before any work."
        ),
    )
    job_cpu_limit_seconds: float = Field(
        default=300.0,
        gt=0,
        description=(
            "CPU seconds (RLIMIT_CPU, rounded up) of each call in that child process: a warm child"
            " serves many calls, and before each one its limit is set to the CPU time it has used "
            "plus this; past it the job fails with `job_resource_limit`. Wall-clock time stays "
            "bounded by `JOB_TIMEOUT_SECONDS`."
        ),
    )
    job_warm_children_at_start: bool = Field(
        default=True,
        description=(
            "Issue 41: a process that runs jobs (`strongroom worker`, the embedded default) starts"
            " `STRONGROOM_WORKER_CONCURRENCY` parsing children when it starts, the parsers "
            "imported, and keeps that many ready, so that a document pays no interpreter start-up "
            "(about 1 CPU second each; 30 small documents took 25 times their text as one). At "
            'rest each child holds about 100 MiB resident (measured: bench/RESULTS.md, "issue '
            '41"): 2 children, about 200 MiB, at the default concurrency. `false`: a child is '
            "started at a job's first need and kept for the next (the test suite's setting)."
        ),
    )
    job_child_memory_mark_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1,
        description=(
            "A warm child whose resident memory has grown this far past its size at start is "
            "replaced after its call, so that what one document left in memory is not carried into"
            " the next; so is a child whose call raised, died or was stopped."
        ),
    )
    job_child_max_calls: int = Field(
        default=500,
        ge=1,
        description="Calls one warm child serves before it is replaced.",
    )
    job_shutdown_grace_seconds: float = Field(
        default=10.0,
        ge=0,
        description=(
            "How long stopping (SIGTERM) waits for the jobs in progress to finish before "
            "cancelling them (their bounded child processes killed with them). The embedded "
            "default starts a cancelled job again at its next start; `strongroom worker` queues it"
            " again for another worker (issue 28: a worker parsing a hostile PDF did not stop "
            "within 40 s). The Helm chart sets it to `worker.terminationGracePeriodSeconds` less "
            "15."
        ),
    )
    worker_heartbeat_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How often a worker records in PostgreSQL that it is alive.",
    )
    worker_stalled_seconds: float = Field(
        default=60.0,
        gt=0,
        description=(
            "A worker silent this long is taken for dead and its running jobs are retried; a job "
            "still `pending` this long after it was accepted with nothing queued for it is queued "
            "again. Keep it well above the heartbeat."
        ),
    )
    worker_sweep_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How often each worker looks for the stalled and lost jobs above.",
    )
    worker_metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description=(
            "Port of `strongroom worker`'s Prometheus `/metrics` "
            "(`strongroom_jobs_finished_total{kind,status}`, "
            "`strongroom_jobs_retried_total{reason}`, `strongroom_ingested_pages_total`), on every"
            " interface; unset: none. The chart sets 9090 (`worker.metricsPort`). A port already "
            "taken stops the worker at start."
        ),
    )
