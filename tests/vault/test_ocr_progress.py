"""A long scan reports its progress page by page in the ingestion job (issue 51, item 2),
each page read by a call of its own to the parsing children: the job's progress is written
once a page, rising, before the passages are stored."""

from __future__ import annotations

from pathlib import Path

from strongroom.corpus.kinds import DocumentType
from strongroom.ingest.limits import IngestLimits
from strongroom.ingest.passages import Unrecognised, read_indexed_passages
from strongroom.ingest.recognition import OcrLimits
from strongroom.jobs import runner
from strongroom.vault.ingestion import _read_by_ocr
from tests.jobs.test_job_timeout import new_job, reloaded
from tests.scans import image_pdf, page_image


class RecordedProgress(runner.JobContext):
    """The job's own context, its progress also kept in order (the test counts the writes)."""

    def __init__(self, services, job) -> None:
        super().__init__(services, job)
        self.written: list[float] = []

    async def progress(self, fraction: float) -> None:
        await super().progress(fraction)
        self.written.append((await reloaded(self.services, self.job)).progress)


async def test_a_scans_progress_is_written_once_a_page_rising(runtime, tmp_path):
    pages = [page_image(f"Inspection report {n}: formwork passed.") for n in range(1, 5)]
    path = tmp_path / "scan.pdf"
    path.write_bytes(image_pdf(pages))
    unrecognised = read_indexed_passages(
        Path(path), DocumentType.PDF, limits=IngestLimits(), ocr=OcrLimits()
    )
    assert isinstance(unrecognised, Unrecognised)
    job = await new_job(runtime, "ingestion")
    claimed = await runner._claim(runtime, job.id)
    assert claimed is not None
    context = RecordedProgress(runtime, claimed)
    try:
        read = await _read_by_ocr(
            context, path, DocumentType.PDF, unrecognised, IngestLimits(), OcrLimits()
        )
    finally:
        runner._HELD.discard(job.id)
    assert len(context.written) == 4  # one write a page
    assert context.written == sorted(context.written) and len(set(context.written)) == 4
    assert 0 < context.written[0] < context.written[-1] < 0.6  # storing the passages follows
    assert read.passages.ocr_pages == 4
    assert "Inspection report 3" in " ".join(c.content for c in read.passages.chunks)
