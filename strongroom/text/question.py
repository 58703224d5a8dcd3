"""A question read once for everything that answers it (issue 26): the terms search ranks by
and the answer engines weigh (strongroom.text.analysis), and the value it wants, read strictly
for a chat answer and loosely for a template field (strongroom.text.values). Chat and template
fill read it when it arrives and pass it down to the search and the engine."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from strongroom.text import analysis
from strongroom.text.values import Wanted, value_wanted


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
        """The value it asks for, strictly (a chat answer); read when first asked for."""
        return value_wanted(self.text, strict=True)

    @cached_property
    def asked(self) -> Wanted | None:
        """The value it asks for, loosely (a template field always wants one); read when
        first asked for."""
        return value_wanted(self.text, strict=False)
