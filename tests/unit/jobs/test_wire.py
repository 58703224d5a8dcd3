"""Issue 52: a parsing child's answer is data only (strongroom/jobs/wire.py). Every type an
answer may hold comes back equal; anything else is refused, and nothing of it runs."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from pathlib import Path

import pytest

from strongroom.ingest.chunking import Chunk, Row
from strongroom.ingest.limits import DocumentTooLarge, UnreadableDocument
from strongroom.ingest.passages import IndexedPassages, Passages, Unrecognised
from strongroom.ingest.recognition import ReadPage, ToRecognise
from strongroom.jobs import wire
from strongroom.jobs.bounded import BoundedWorkDied
from strongroom.jobs.wire import ANSWER_TYPES, AnswerRefused
from strongroom.templates.fill_types import (
    FillReport,
    InstructionTooLong,
    Placeholder,
    TemplateError,
    TemplateTooLarge,
)

LONG = "Clause 8.1 — the tenant shall pay rent quarterly in advance, déjà vu. " * 40


def round_trip(value, outcome="ok", keep=True):
    return wire.loads(b"".join(wire.dumps(outcome, value, keep)))


def frame(structure, text=b"") -> bytes:
    data = json.dumps(structure).encode()
    return len(data).to_bytes(8, "big") + data + text


PASSAGES = Passages(
    page_count=3,
    chunks=[Chunk(1, LONG), Chunk(2, "short"), Chunk(3, "")],
    scanned_pages=1,
    ocr_pages=1,
    unread_pages=0,
)
ALLOWED = [
    None,
    True,
    False,
    0,
    -(2**80),
    1.5,
    float("inf"),
    "",
    "short",
    LONG,
    "a lone surrogate \udc80 " * 10,
    "\x00 control \n\t and 中文 and emoji 🙂 " * 5,
    b"\x00\xffbytes",
    [],
    [1, 2.5, None, True],
    ["a", LONG, "", "é"],
    [LONG, 1, "mixed", None],
    [["nested", LONG], [], [1]],
    (1, "two", (3, LONG)),
    {"key": "value", "long": LONG},
    {1: "one", (2, "two"): [3], None: {"inner": b"x"}},
    Chunk(7, LONG),
    [Chunk(1, "a"), Chunk(2, LONG), Chunk(3, "\udc80")],
    PASSAGES,
    IndexedPassages(PASSAGES, ["term one", LONG, ""]),
    IndexedPassages(Passages(0, []), []),
    Unrecognised(
        ["page one", ["block", Row("a | b", header=True), Row("c | d")], ToRecognise(2, "x")]
    ),
    Unrecognised([ToRecognise(0), ToRecognise(1, LONG)]),
    Row("cell | cell"),
    [Row("h", True), Row("r")],
    ReadPage(["block one", LONG], turned=90, gave_up=False),
    ReadPage([]),
    [Placeholder("name", None), Placeholder("date", "When was it signed?")],
    FillReport(replaced={"name": 2}, missing=["date"]),
    [[sentence for sentence in ("One.", "Two.", LONG)] for _ in range(3)],
]


@pytest.mark.parametrize("value", ALLOWED, ids=lambda value: type(value).__name__)
def test_every_allowed_type_comes_back_equal(value):
    assert round_trip(value) == ("ok", value, True)
    assert type(round_trip(value)[1]) is type(value)


def test_nan_comes_back():
    assert math.isnan(round_trip(float("nan"))[1])


def test_a_large_answer_comes_back_equal_and_carries_its_text_after_the_json():
    chunks = [Chunk(1 + i // 4, f"{i} {LONG}") for i in range(2000)]
    value = IndexedPassages(Passages(500, chunks), [chunk.content.lower() for chunk in chunks])
    pieces = wire.dumps("ok", value, True)
    assert len(pieces[1]) < 50_000  # the JSON: structure and lengths, not the text
    assert wire.loads(b"".join(pieces)) == ("ok", value, True)


ERRORS = [
    ValueError("bad input"),
    KeyError("page"),
    FileNotFoundError(2, "No such file or directory", "/spool/blob"),
    RecursionError("too deep"),
    UnreadableDocument("The file is encrypted."),
    DocumentTooLarge("more than 20000 passages"),
    TemplateError("not a DOCX"),
    TemplateTooLarge("too large"),
    InstructionTooLong("too long"),
    BoundedWorkDied("crashed"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda error: type(error).__name__)
def test_every_allowed_exception_comes_back_with_its_class_and_message(error):
    outcome, back, keep = round_trip(wire.sendable_error(error), "error", False)
    assert (outcome, keep) == ("error", False)
    assert type(back) is type(error) and str(back) == str(error)
    if isinstance(error, OSError):
        assert back.filename == error.filename and back.errno == error.errno


class _ReaderQuirk(UnreadableDocument):
    """An exception class no list names, below one that is."""


class _Unlisted(Exception):
    pass


def test_an_unlisted_exception_is_sent_as_its_nearest_listed_class_or_as_a_crash():
    sent = wire.sendable_error(_ReaderQuirk("odd file"))
    assert type(sent) is UnreadableDocument and str(sent) == "odd file"
    sent = wire.sendable_error(_Unlisted("parser bug"))
    assert type(sent) is BoundedWorkDied and "_Unlisted: parser bug" in str(sent)
    sent = wire.sendable_error(ValueError(lambda: None))  # args that are not data
    assert type(sent) is ValueError and "lambda" in str(sent)


class Evil:
    """Unpickling it creates a file: what a compromised parser would return."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


class SneakyStr(str):
    def __reduce__(self):
        return (Path.touch, (Path(str(self)),))


@dataclasses.dataclass
class Unlisted:
    value: int


def _function():
    return None


@pytest.mark.parametrize(
    "make",
    [
        lambda path: _function,
        lambda path: lambda: None,
        lambda path: object(),
        lambda path: Evil(path),
        lambda path: [1, "two", Evil(path)],
        lambda path: {"key": Evil(path)},
        lambda path: SneakyStr(path),
        lambda path: [SneakyStr(path), SneakyStr(path)],
        lambda path: Unlisted(1),
        lambda path: Chunk(1, Evil(path)),
        lambda path: [Chunk(1, "a"), Chunk(2, Evil(path))],
        lambda path: Path(path),
        lambda path: {1, 2},
        lambda path: bytearray(b"x"),
        lambda path: ValueError,  # a class, not an instance
    ],
)
def test_a_disallowed_type_is_refused_when_encoded_and_nothing_of_it_runs(make, tmp_path):
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(Evil(marker)))  # noqa: S301 (the test's own: the payload is live)
    assert marker.exists()
    marker.unlink()
    with pytest.raises(AnswerRefused, match="may not"):
        wire.dumps("ok", make(marker), True)
    assert not marker.exists()


def test_a_pickle_as_the_answer_is_refused_and_nothing_of_it_runs(tmp_path):
    marker = tmp_path / "ran"
    payload = pickle.dumps(("ok", Evil(marker), True))
    for answer in (payload, len(payload).to_bytes(8, "big") + payload, b""):
        with pytest.raises(AnswerRefused):
            wire.loads(answer)
    assert not marker.exists()


@pytest.mark.parametrize(
    "structure",
    [
        ["ok", True, {"@": "os:system", "command": "touch /tmp/x"}],
        ["ok", True, {"@": "Unlisted", "value": 1}],
        ["ok", True, {"@": "Chunk", "page_number": 1, "content": "x", "extra": 1}],
        ["ok", True, {"@": "Chunk", "page_number": 1}],  # a field missing
        ["ok", True, {"@": "ValueError"}],  # an exception is no dataclass
        ["ok", True, {"@": ["Chunk"], "page_number": 1, "content": "x"}],
        ["ok", True, {"#C": "Chunk", "#n": 2, "page_number": [1], "content": ["a", "b"]}],
        ["ok", True, {"#C": "Chunk", "#n": 1, "page_number": [1]}],
        ["ok", True, {"#C": "Evil", "#n": 0}],
        ["ok", True, {"plain": "object"}],
        ["ok", True, {"#t": [1], "extra": 2}],
        ["ok", True, {"#d": ["ab", "cd"]}],
        ["ok", True, {"#d": [[[1], 2]]}],  # an unhashable key
        ["ok", True, {"#b": "not base64!"}],
        ["ok", True, {"#s": [0, 10]}],  # text past the end
        ["ok", True, {"#s": [-1, 1]}],
        ["ok", True, {"#S": [0, [5, 6]]}],
        ["ok", True, {"#S": [0, [-1]]}],
        ["error", False, {"!": "SystemExit", "a": [0]}],  # not an Exception
        ["error", False, {"!": "KeyboardInterrupt", "a": []}],
        ["error", False, {"!": "Exception", "a": []}],
        ["error", False, {"!": "Evil", "a": []}],
        ["error", False, {"!": "Chunk", "a": [1, "x"]}],
        ["error", False, "not an exception"],
        ["ok", "yes", 1],  # keep not a bool
        ["maybe", True, 1],
        ["ok", True],
        {"outcome": "ok"},
    ],
)
def test_an_answer_not_in_the_format_or_naming_an_unlisted_class_is_refused(structure):
    with pytest.raises(AnswerRefused):
        wire.loads(frame(structure))


def test_an_answer_nested_too_deep_is_refused():
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(AnswerRefused, match="RecursionError"):
        wire.loads(len(deep).to_bytes(8, "big") + deep)


@pytest.mark.parametrize("path", ANSWER_TYPES)
def test_every_listed_type_is_a_dataclass_or_an_exception(path):
    cls = wire._class(path.rpartition(":")[2])
    assert cls is not None and f"{cls.__module__}:{cls.__name__}" == path
    assert dataclasses.is_dataclass(cls) != issubclass(cls, BaseException)


@dataclasses.dataclass(frozen=True)
class Added:
    """A type a future job returns: listed, it needs nothing else (fields read by
    dataclasses.fields, one keyword-only, one not taken by __init__)."""

    name: str
    pages: list[int]
    kind: str = dataclasses.field(default="x", kw_only=True)
    derived: int = dataclasses.field(init=False, default=0)


def test_a_new_type_needs_only_its_line_in_the_list(monkeypatch):
    value = Added("n", [1, 2], kind="k")
    with pytest.raises(AnswerRefused):
        wire.dumps("ok", value, True)
    for cache in ("_PATHS", "_CLASSES", "_NAMES", "_FIELDS", "_INIT", "_POSITIONAL"):
        monkeypatch.setattr(wire, cache, getattr(wire, cache).copy())  # forgotten after
    wire._PATHS["Added"] = f"{__name__}:Added"
    assert round_trip(value) == ("ok", value, True)
    both = [value, Added("m", [], kind="j")]
    assert round_trip(both) == ("ok", both, True)
