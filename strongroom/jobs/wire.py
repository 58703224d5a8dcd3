"""The answers of parsing children (strongroom/jobs/child.py) in a data-only format (issue 52).

A child parses hostile bytes: a parser it runs may be compromised by the file it reads, and
then everything the child writes is the attacker's. The parent (a worker, or the embedded
default's server) holds the secrets the child was stripped of, so it must never run code an
answer names: the answer is JSON and UTF-8 text, and decoding it builds only plain values and
the classes named in ANSWER_TYPES, from their fields, by their own constructors. Nothing an
answer says is imported, looked up by its own name outside that list, or called.

The call (parent to child: the function and its arguments) stays pickle: the child trusts its
parent.

What an answer may hold:
- None, bool, int, float, str, lists: as JSON has them;
- tuples, dicts (keys of any type allowed here) and bytes: `{"#t": [...]}`,
  `{"#d": [[key, value], ...]}`, `{"#b": "<base64>"}`;
- an instance of a dataclass named in ANSWER_TYPES: `{"@": "Chunk", "page_number": 1, ...}`,
  one key for each of its fields that `__init__` takes (dataclasses.fields), rebuilt by
  calling the class with them, so a field added to a class needs nothing here;
- an exception (the work's error) of a class named in ANSWER_TYPES or a built-in one (a
  subclass of Exception in `builtins`, not Exception itself): `{"!": "ValueError", "a":
  [args]}`, rebuilt as `cls(*args)`. The child sends an exception of any other class as the
  nearest of these in its class's MRO (an unlisted subclass of UnreadableDocument as
  UnreadableDocument), or else as BoundedWorkDied naming its class and message.
Anything else is refused: the child answers BoundedWorkDied ("the answer held a type it may
not") instead, and the parent, reading an answer that is not this format or names a class
not listed (a child that is not our code any more), raises AnswerRefused, which the pool
turns into BoundedWorkDied, killing the child.

Large answers (a document's 20,000 passages and their index terms, 50 MB) cost no more than
pickle's (bench/RESULTS.md, the retired wire_bench): JSON's escaping of text is slow in
CPython, and a Python walk of every object too, so text goes after the JSON as UTF-8, and
lists go whole where they can:
- a list of str only: `{"#S": [start, [size, ...]]}`, its texts one after the other from
  byte `start` of the text after the JSON, each `size` bytes of UTF-8;
- a str of at least LONG_TEXT characters elsewhere: `{"#s": [start, bytes]}`;
- a list of instances of one listed dataclass: its columns, `{"#C": "Chunk", "#n": count,
  "page_number": [...], "content": {"#S": ...}}`.
The frame's payload: the JSON's length (8 bytes, big-endian), the JSON `[outcome, keep,
value]`, the text.

To let an answer hold a new type: add "module:ClassName" to ANSWER_TYPES below (a dataclass
whose fields hold allowed values, or an exception class whose args do). The names after the
colon must be unique and differ from the built-in exceptions' (checked at import). A module
is imported when an answer first needs one of its classes, not when this one is.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import importlib
import itertools
import json
import operator
from collections.abc import Callable
from typing import Any

# Every class, other than built-in exceptions, that an answer may hold: "module:ClassName".
ANSWER_TYPES: tuple[str, ...] = (
    # ingestion (strongroom/vault/ingestion.py): read_indexed_passages, read_page, index_pages
    "strongroom.ingest.passages:IndexedPassages",
    "strongroom.ingest.passages:Passages",
    "strongroom.ingest.passages:Unrecognised",
    "strongroom.ingest.chunking:Chunk",
    "strongroom.ingest.chunking:Row",
    "strongroom.ingest.recognition:ToRecognise",
    "strongroom.ingest.recognition:ReadPage",
    "strongroom.ingest.limits:UnreadableDocument",
    "strongroom.ingest.limits:DocumentTooLarge",
    # template fill (strongroom/templates/service.py): find_placeholders, fill_docx
    "strongroom.templates.fill_types:Placeholder",
    "strongroom.templates.fill_types:FillReport",
    "strongroom.templates.fill_types:TemplateError",
    "strongroom.templates.fill_types:TemplateTooLarge",
    "strongroom.templates.fill_types:InstructionTooLong",
    # the pool's own (an answer that could not be sent)
    "strongroom.jobs.bounded:BoundedWorkDied",
)


class AnswerRefused(Exception):
    """The answer is not in the format, or holds a type it may not."""


_PATHS: dict[str, str] = {}
for _path in ANSWER_TYPES:
    _name = _path.rpartition(":")[2]
    if _name in _PATHS or isinstance(getattr(builtins, _name, None), type):
        raise RuntimeError(f"ANSWER_TYPES names {_name} twice (or a built-in's name)")
    _PATHS[_name] = _path
_BUILTIN_ERRORS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception) and value is not Exception
}
# Filled as answers need the listed classes: name -> class, class -> name, and a
# dataclass's fields that __init__ takes.
_CLASSES: dict[str, type] = dict(_BUILTIN_ERRORS)
_NAMES: dict[type, str] = {cls: name for name, cls in _BUILTIN_ERRORS.items()}
_FIELDS: dict[type, tuple[str, ...]] = {}
_INIT: dict[type, frozenset[str]] = {}
_POSITIONAL: set[type] = set()  # dataclasses whose __init__ takes every field by position


def _class(name: str) -> type | None:
    """The listed class of that name, imported the first time it is needed; None for a
    name not listed."""
    cls = _CLASSES.get(name)
    if cls is None and name in _PATHS:
        module, _, attribute = _PATHS[name].partition(":")
        cls = getattr(importlib.import_module(module), attribute)
        if not isinstance(cls, type):
            raise RuntimeError(f"{_PATHS[name]} is not a class")
        if issubclass(cls, BaseException) == dataclasses.is_dataclass(cls):
            raise RuntimeError(f"{_PATHS[name]} is neither a dataclass nor an exception")
        if dataclasses.is_dataclass(cls):
            fields = [field for field in dataclasses.fields(cls) if field.init]
            _FIELDS[cls] = tuple(field.name for field in fields)
            _INIT[cls] = frozenset(_FIELDS[cls])
            if not any(field.kw_only for field in fields):
                _POSITIONAL.add(cls)
        _CLASSES[name], _NAMES[cls] = cls, name
    return cls


def _name_of(cls: type) -> str | None:
    """The name an instance of `cls` is sent by, if it is listed (without importing any
    module: a class is looked for by its own module and name, then checked to be the one
    listed)."""
    name = _NAMES.get(cls)
    if name is None and _PATHS.get(cls.__name__) == f"{cls.__module__}:{cls.__name__}":
        if _class(cls.__name__) is cls:
            name = cls.__name__
    return name


# ---- encoding (in the child) -------------------------------------------------------------

LONG_TEXT = 64  # a str this long, alone, goes after the JSON
_LENGTH = 8  # the JSON's length in bytes, big-endian, before it
_PLAIN = frozenset({int, float, bool, type(None)})  # a list of only these is JSON as it is


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate: sent as pickle sends it
        return text.encode("utf-8", "surrogatepass")


def _encoder() -> tuple[Callable[[Any], Any], list[bytes]]:
    """A function encoding a value, and the text it has put aside for after the JSON."""
    texts: list[bytes] = []
    size = 0

    def text(pieces: list[bytes], length: int) -> int:
        nonlocal size
        texts.extend(pieces)
        start, size = size, size + length
        return start

    def encode(value: Any) -> Any:
        kind = type(value)
        if kind is str:
            if len(value) < LONG_TEXT:
                return value
            data = _utf8(value)
            return {"#s": [text([data], len(data)), len(data)]}
        if kind in _PLAIN:
            return value
        if kind is list:
            return encode_list(value)
        fields = _FIELDS.get(kind)
        if fields is None and _name_of(kind) is not None:  # a listed class, met first now
            fields = _FIELDS.get(kind)
        if fields is not None:
            encoded = {"@": _NAMES[kind]}
            for field in fields:
                encoded[field] = encode(getattr(value, field))
            return encoded
        if kind is tuple:
            return {"#t": encode_list(list(value))}
        if kind is dict:
            return {"#d": [[encode(key), encode(item)] for key, item in value.items()]}
        if kind is bytes:
            return {"#b": base64.b64encode(value).decode("ascii")}
        name = _NAMES.get(kind)
        if name is not None:  # an exception (a listed one: _name_of above resolved it)
            return {"!": name, "a": encode_list(list(_error_args(value)))}
        what = f"{kind.__module__}.{kind.__qualname__}"
        raise AnswerRefused(f"the answer held a type it may not: {what}")

    def encode_list(value: list[Any]) -> Any:
        kinds = set(map(type, value))
        if len(kinds) != 1:
            return [encode(item) for item in value]
        (kind,) = kinds
        if kind is str:
            try:
                pieces = list(map(str.encode, value))
            except UnicodeEncodeError:
                pieces = list(map(_utf8, value))
            sizes = list(map(len, pieces))
            return {"#S": [text(pieces, sum(sizes)), sizes]}
        if kind in _PLAIN:
            return value
        fields = _FIELDS.get(kind)
        if fields is None and _name_of(kind) is not None:
            fields = _FIELDS.get(kind)
        if fields is None:
            return [encode(item) for item in value]
        columns: dict[str, Any] = {"#C": _NAMES[kind], "#n": len(value)}
        for field in fields:
            columns[field] = encode_list(list(map(operator.attrgetter(field), value)))
        return columns

    return encode, texts


def _error_args(error: BaseException) -> tuple[Any, ...]:
    if isinstance(error, OSError) and error.filename is not None:
        return (error.errno, error.strerror, error.filename)  # its args alone drop the file
    return error.args


def sendable_error(error: BaseException) -> BaseException:
    """`error`, or what the child sends for it: the nearest class in its MRO that an answer
    may hold, with its args if they are data and its message if not; BoundedWorkDied naming
    its class and message when there is none."""
    for cls in type(error).__mro__:
        if cls is Exception:
            break
        if _name_of(cls) is None:
            continue
        if cls is type(error):
            try:
                _encoder()[0](list(_error_args(error)))
                return error
            except AnswerRefused:
                pass
        try:
            return cls(str(error))
        except Exception:  # noqa: S112 (a constructor that wants more: try a base)
            continue
    died = _class("BoundedWorkDied")
    assert died is not None
    kind = type(error)
    return died(f"{kind.__module__}.{kind.__qualname__}: {error}")


def dumps(outcome: str, value: Any, keep: bool) -> list[bytes]:
    """An answer frame's payload, in pieces to write one after the other. Raises
    AnswerRefused if `value` holds a type it may not: nothing of it is called (no
    `__reduce__`, no `__getstate__`), only the listed dataclasses' fields are read."""
    encode, texts = _encoder()
    answer = [outcome, keep, encode(value)]
    data = _utf8(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))
    return [len(data).to_bytes(_LENGTH, "big"), data, *texts]


# ---- decoding (in the parent) ------------------------------------------------------------


def _decoder(texts: memoryview) -> Callable[[dict[str, Any]], Any]:
    """json's object_hook: every JSON object of an answer is one of the tagged forms; their
    contents are decoded already (json calls it innermost first)."""
    end = len(texts)

    def text(start: Any, size: Any) -> str:
        if type(start) is int and type(size) is int and 0 <= start <= start + size <= end:
            return str(texts[start : start + size], "utf-8", "surrogatepass")
        raise AnswerRefused("the answer's text is out of its bounds")

    def texts_of(start: Any, sizes: list[Any]) -> list[str]:
        if type(start) is not int or not all(type(size) is int and size >= 0 for size in sizes):
            raise AnswerRefused("the answer's texts are not where texts can be")
        ends = list(itertools.accumulate(sizes, initial=start))
        if start < 0 or ends[-1] > end:
            raise AnswerRefused("the answer's text is out of its bounds")
        slices = map(texts.__getitem__, map(slice, ends, ends[1:]))
        return list(map(str, slices, itertools.repeat("utf-8"), itertools.repeat("surrogatepass")))

    def dataclass(name: Any) -> type:
        cls = _class(name) if type(name) is str else None
        if cls is None or cls not in _FIELDS:
            raise AnswerRefused(f"the answer held a type it may not: {name!r}")
        return cls

    def decoded(encoded: dict[str, Any]) -> Any:
        if "@" in encoded:
            cls = dataclass(encoded.pop("@"))
            if not encoded.keys() <= _INIT[cls]:
                raise AnswerRefused(f"the answer's {cls.__name__} held fields it has not")
            return cls(**encoded)
        if "#C" in encoded:
            cls, count = dataclass(encoded.pop("#C")), encoded.pop("#n", None)
            names = _FIELDS[cls]
            if encoded.keys() != _INIT[cls] or type(count) is not int:
                raise AnswerRefused(f"the answer's {cls.__name__}s lack or add fields")
            columns = [encoded[name] for name in names]
            if any(type(column) is not list or len(column) != count for column in columns):
                raise AnswerRefused(f"the answer's {cls.__name__}s' columns differ in length")
            if not names:
                return [cls() for _ in range(count)]
            if cls in _POSITIONAL:
                return list(map(cls, *columns))
            return [cls(**dict(zip(names, row, strict=True))) for row in zip(*columns, strict=True)]
        if len(encoded) == 1:
            ((tag, content),) = encoded.items()
            if type(content) is list:
                if tag == "#S" and len(content) == 2 and type(content[1]) is list:
                    return texts_of(*content)
                if tag == "#s" and len(content) == 2:
                    return text(*content)
                if tag == "#t":
                    return tuple(content)
                if tag == "#d" and all(type(pair) is list and len(pair) == 2 for pair in content):
                    return dict(content)
            elif tag == "#b" and type(content) is str:
                return base64.b64decode(content, validate=True)
        if len(encoded) == 2 and "!" in encoded and type(encoded.get("a")) is list:
            name = encoded["!"]
            cls = _class(name) if type(name) is str else None
            if cls is None or cls in _FIELDS:
                raise AnswerRefused(f"the answer held an exception it may not: {name!r}")
            return cls(*encoded["a"])
        raise AnswerRefused(f"the answer held an object of no allowed form: {sorted(encoded)[:5]}")

    return decoded


def loads(payload: bytes) -> tuple[str, Any, bool]:
    """`(outcome, value, keep)` of an answer frame's payload; raises AnswerRefused for
    anything but an answer in this format holding allowed types only."""
    try:
        whole = memoryview(payload)
        size = int.from_bytes(whole[:_LENGTH], "big")
        if len(whole) < _LENGTH + size:
            raise AnswerRefused("the answer is shorter than its JSON")
        structure = str(whole[_LENGTH : _LENGTH + size], "utf-8", "surrogatepass")
        answer = json.loads(structure, object_hook=_decoder(whole[_LENGTH + size :]))
    except AnswerRefused:
        raise
    except Exception as error:  # not JSON, too deep, a constructor refusing its fields ...
        raise AnswerRefused(f"the answer is not data: {type(error).__name__}: {error}") from None
    if type(answer) is not list or len(answer) != 3:
        raise AnswerRefused("the answer is not [outcome, keep, value]")
    outcome, keep, value = answer
    if type(keep) is not bool or outcome not in ("ok", "error"):
        raise AnswerRefused("the answer's outcome or keep is not one of its values")
    if outcome == "error" and not isinstance(value, Exception):
        raise AnswerRefused("the answer's error is not an exception")
    return outcome, value, keep
