"""Kinds of job of the tests' own, registered with the runner as the composition root
registers the product's (strongroom/job_kinds.py)."""

from __future__ import annotations

from strongroom.jobs.runner import JobWork, KindOfJob, register


def kind(name: str, **declared):
    """Register the decorated work as the kind `name` (with `finished`, `runs_jobs_inside`,
    ... as KindOfJob takes them)."""

    def register_work(work: JobWork) -> JobWork:
        register(KindOfJob(name, work, **declared))
        return work

    return register_work
