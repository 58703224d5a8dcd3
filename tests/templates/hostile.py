"""Hostile templates of issue 18, generated small, and a sampler of this process's memory."""

from __future__ import annotations

import io
import threading
import zipfile

from tests.documents import make_docx_template

MiB = 1024 * 1024
_EMPTY_PARAGRAPH = b"<w:p/>"


def paragraph_bomb(inflated_bytes: int) -> bytes:
    """A valid DOCX template (one `{{ a }}`) whose word/document.xml also holds
    `inflated_bytes` of empty paragraphs `<w:p/>`: a few hundred KB that python-docx would
    turn into an lxml tree of millions of elements. Written in steps: the inflated XML never
    sits whole in this process."""
    template = make_docx_template(["{{ a }}"])
    out = io.BytesIO()
    step = _EMPTY_PARAGRAPH * (MiB // len(_EMPTY_PARAGRAPH))
    with (
        zipfile.ZipFile(io.BytesIO(template)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as copy,
    ):
        for info in source.infolist():
            data = source.read(info)
            if info.filename != "word/document.xml":
                copy.writestr(info.filename, data)
                continue
            body = data.index(b"<w:body>") + len(b"<w:body>")
            with copy.open(info.filename, "w", force_zip64=True) as member:
                member.write(data[:body])
                for _ in range(inflated_bytes // len(step)):
                    member.write(step)
                member.write(data[body:])
    return out.getvalue()


class PeakRss:
    """The highest resident set size of this process while the block runs, sampled every
    few milliseconds from /proc/self/statm (ru_maxrss would keep an earlier test's peak)."""

    def __init__(self) -> None:
        self.start = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss())

    @property
    def growth_mib(self) -> float:
        return (self.peak - self.start) / MiB

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _rss() -> int:
    import os

    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
