"""Every kind of job's work, each registered with the runner (strongroom.jobs.runner.job_kind)
as its module is imported. The processes that run jobs import this module: `strongroom worker`
and the app, which runs them itself in the embedded default."""

import strongroom.routines.fire  # runs of routines whose trigger is a document becoming ready
import strongroom.routines.runner  # routine runs
import strongroom.templates.service  # template fills
import strongroom.vault.ingestion  # documents into passages
import strongroom.vault.project_deletion  # a deleted project's documents, then it
import strongroom.vault.reembedding  # passage vectors of a new model
import strongroom.webhooks.events  # the events of their ends, recorded in the outbox
import strongroom.workflows.runner  # noqa: F401  workflow runs
