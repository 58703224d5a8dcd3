"""Issue 52: what a parsing child answers is data only (strongroom/jobs/wire.py). The parent
holds the secrets the child was stripped of, and a parser compromised by a hostile file writes
what it likes: an answer of a type it may not hold is BoundedWorkDied, and nothing of it runs
in the parent (or the child)."""

from __future__ import annotations

import pytest

from strongroom.ingest.chunking import Chunk, Row
from strongroom.ingest.limits import DocumentTooLarge, UnreadableDocument
from strongroom.ingest.passages import IndexedPassages, Passages, Unrecognised
from strongroom.ingest.recognition import ReadPage, ToRecognise
from strongroom.jobs.bounded import BoundedWorkDied, WorkPool
from strongroom.templates.fill_types import FillReport, Placeholder, TemplateTooLarge
from tests.jobs.answer_work import (
    a_function,
    answer_with_a_pickle,
    echo,
    evil,
    raise_,
    reader_quirk,
    unlisted_error,
)
from tests.jobs.bounded_work import pid

MiB = 1024 * 1024
LONG = "The tenant shall pay rent quarterly in advance (clause 8.1), déjà. " * 20


@pytest.fixture
async def pool(settings):
    values = {
        "job_memory_limit_bytes": 512 * MiB,
        "job_cpu_limit_seconds": 5.0,
        "worker_concurrency": 1,
        "job_warm_children_at_start": False,
    }
    work = WorkPool(settings.model_copy(update=values))
    yield work
    await work.close()


async def test_every_kind_of_result_a_job_returns_comes_back_from_a_child(pool):
    passages = Passages(2, [Chunk(1, LONG), Chunk(2, "short")], scanned_pages=1, ocr_pages=1)
    results = [
        IndexedPassages(passages, [LONG.lower(), "short"]),
        Unrecognised(["text", ["block", Row("a | b", True)], ToRecognise(1, "layer")]),
        ReadPage([LONG, "block"], turned=180, gave_up=True),
        [Placeholder("name", None), Placeholder("date", "When?")],
        FillReport({"name": 1}, ["date"]),
        [["One.", "Two."], [LONG]],
        {"PATH": "/bin", 1: (2, b"\x00")},
        None,
    ]
    for result in results:
        assert await pool.run(echo, result) == result


@pytest.mark.parametrize(
    "error",
    [
        ValueError("bad input"),
        FileNotFoundError(2, "No such file or directory", "/spool/x"),
        UnreadableDocument("encrypted"),
        DocumentTooLarge("more than 20000 passages"),
        TemplateTooLarge("too large"),
    ],
    ids=lambda error: type(error).__name__,
)
async def test_the_exceptions_callers_catch_come_back_as_themselves(pool, error):
    with pytest.raises(type(error)) as raised:
        await pool.run(raise_, error)
    assert type(raised.value) is type(error) and str(raised.value) == str(error)


async def test_an_unlisted_exception_comes_back_as_its_listed_base_or_as_a_crash(pool):
    with pytest.raises(UnreadableDocument, match="odd") as raised:
        await pool.run(reader_quirk, "odd")
    assert type(raised.value) is UnreadableDocument
    with pytest.raises(BoundedWorkDied, match="ParserBug: a parser's own bug"):
        await pool.run(unlisted_error, "a parser's own bug")


async def test_a_result_of_a_type_it_may_not_hold_is_refused_and_nothing_of_it_runs(pool, tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(BoundedWorkDied, match=r"may not.*Evil"):
        await pool.run(evil, str(marker))
    with pytest.raises(BoundedWorkDied, match=r"may not.*function"):
        await pool.run(a_function)
    assert not marker.exists()
    assert await pool.run(echo, "next") == "next"


async def test_a_child_that_answers_with_a_pickle_is_refused_killed_and_nothing_runs(
    pool, tmp_path
):
    """A parser compromised by its file writes its own answer frame: a pickle whose loading
    would create a file in the parent (the old pool unpickled every answer)."""
    marker = tmp_path / "ran"
    first = await pool.run(pid)
    with pytest.raises(BoundedWorkDied, match="may not"):
        await pool.run(answer_with_a_pickle, str(marker))
    assert not marker.exists()
    assert await pool.run(pid) != first  # that child was killed, not reused
