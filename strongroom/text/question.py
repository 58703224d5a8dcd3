"""A question read once for everything that answers it (issue 26): the terms search ranks by
and the answer engines weigh (strongroom.text.analysis), and the value it wants: the value its
words name, for a chat answer, and the value any of its cues points to, for a template field
(strongroom.text.wanted). Chat and template fill read it when it arrives and pass it down to
the search and the engine."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from strongroom.text import analysis
from strongroom.text.values import Wanted
from strongroom.text.wanted import value_cued, value_named


@dataclass(frozen=True)
class Question:
    text: str
    query: analysis.Query

    @classmethod
    def read(cls, text: str) -> Question:
        return cls(text, analysis.query(text))

    @property
    def terms(self) -> tuple[str, ...]:
        return self.query.terms

    @cached_property
    def wanted(self) -> Wanted | None:
        """The value its words name, for a chat answer (`value_named`); read when first
        asked for."""
        return value_named(self.text)

    @cached_property
    def asked(self) -> Wanted | None:
        """The value any of its cues points to, for a template field, which always wants
        one (`value_cued`); read when first asked for."""
        return value_cued(self.text)
