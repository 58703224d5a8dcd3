"""A question read once for everything that answers it (issue 26): the terms search ranks by
and the answer engines weigh (strongroom.text.analysis), and the value it wants, read strictly
for a chat answer and loosely for a template field (strongroom.text.values). Chat and template
fill read it when it arrives and pass it down to the search and the engine."""

from __future__ import annotations

from dataclasses import dataclass

from strongroom.text import analysis
from strongroom.text.values import Wanted, value_wanted


@dataclass(frozen=True)
class Question:
    text: str
    query: analysis.Query
    wanted: Wanted | None  # the value it asks for, strictly (a chat answer)
    asked: Wanted | None  # the value it asks for, loosely (a template field always wants one)

    @classmethod
    def read(cls, text: str) -> Question:
        return cls(
            text,
            analysis.query(text),
            value_wanted(text, strict=True),
            value_wanted(text, strict=False),
        )

    @property
    def terms(self) -> tuple[str, ...]:
        return self.query.terms
