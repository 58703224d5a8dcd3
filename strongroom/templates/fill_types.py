"""What the template-fill service needs of strongroom/templates/docx_fill.py without
importing python-docx (issue 29: its import cost every start of the app): the fill's
errors, limits and placeholders. The fill itself runs in a child process, which imports
docx_fill there."""

from __future__ import annotations

from dataclasses import dataclass


class TemplateError(Exception):
    """The file is not a readable DOCX (not a zip, corrupt, not Word)."""


class TemplateTooLarge(TemplateError):
    """The DOCX is readable but would cost more than TemplateLimits allow to read."""


class InstructionTooLong(TemplateError):
    """A placeholder's instruction is longer than a chat question may be (issue 28: a 96 KB
    DOCX held a 28 MB instruction, stored in the fill's fields and returned by every poll)."""


# As chat's `query` (strongroom/chat/schemas.py): an instruction is asked as a question.
MAX_INSTRUCTION_CHARS = 8_000


@dataclass(frozen=True)
class TemplateLimits:
    """What reading one template may cost (`STRONGROOM_TEMPLATE_MAX_*`): its inflated size,
    its XML parts' inflated size, and their tags (`<`: one for `<w:p/>`, two for an element
    with content), a bound on the elements python-docx would build."""

    max_unzipped_bytes: int = 64 * 1024 * 1024
    max_xml_bytes: int = 32 * 1024 * 1024
    max_xml_tags: int = 500_000


@dataclass(frozen=True)
class Placeholder:
    name: str
    instruction: str | None


@dataclass(frozen=True)
class FillReport:
    replaced: dict[str, int]  # name: occurrences replaced, for names that had a value
    missing: list[str]  # names present in the template without a value, in document order
