"""Chat's answer engine: extractive, offline, or an OpenAI-compatible upstream (D44)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, Field, SecretStr, model_validator


class AnswerSettings(BaseModel):
    """Chat's answer engine: extractive, offline, or an OpenAI-compatible upstream (D44)."""

    chat_engine: Literal["extractive", "openai"] = Field(
        default="extractive",
        description=(
            "Answer engine of chat (D44): `extractive` answers offline with the retrieved "
            "passages' own sentences; `openai` calls an OpenAI-compatible chat-completions "
            "endpoint with the passages as grounding. Any other value stops every command at "
            "start. See docs/operations.md."
        ),
    )
    chat_openai_base_url: str | None = Field(
        default=None,
        description=(
            "With `openai`: the API root, e.g. `https://api.openai.com/v1` (`/chat/completions` is"
            " added). Required with `openai`: without it every command stops at start."
        ),
    )
    chat_openai_model: str | None = Field(
        default=None,
        description=(
            "With `openai`: the model name sent upstream. Required with `openai`, as above."
        ),
    )
    chat_openai_api_key: SecretStr | None = Field(
        default=None,
        description=(
            "With `openai`: the key sent upstream as `Authorization: Bearer` (never logged). "
            "Unset: no `Authorization` header (a server that needs none)."
        ),
    )
    chat_openai_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Longest wait to connect, to send, and for each next piece of the upstream's answer "
            "(not for the whole answer); past it the attempt fails, and is retried if no text has "
            "arrived yet, else the answer fails with `upstream_timeout`. Above 0."
        ),
    )
    chat_openai_max_retries: int = Field(
        default=2,
        ge=0,
        description=(
            "Retries of an upstream call that failed (connection, timeout, 429, 5xx, an answer "
            "that ended unfinished) before any of the answer's text arrived, after 0.2 s, 0.4 s, "
            "... (at most 2 s). 0: no retry."
        ),
    )
    chat_openai_max_tokens: int = Field(
        default=1024,
        ge=1,
        description=(
            "`max_tokens` sent with every chat-completions request: the most the model is asked to"
            " write."
        ),
    )
    chat_max_answer_chars: int = Field(
        default=32_000,
        ge=100,
        description=(
            "An answer from the upstream is cut at this many characters, whatever the upstream "
            "sends: the engine stops reading, hangs up, and ends the answer with a line saying it "
            "was cut short (streamed, returned and stored alike). An event line longer than six "
            "times this (plus 64 KiB) ends the answer the same way without being read whole. At "
            "least 100."
        ),
    )

    @model_validator(mode="after")
    def _openai_engine_complete(self) -> Self:
        if self.chat_engine == "openai" and not (
            self.chat_openai_base_url and self.chat_openai_model
        ):
            raise ValueError(
                "STRONGROOM_CHAT_ENGINE=openai needs STRONGROOM_CHAT_OPENAI_BASE_URL and _MODEL"
            )
        return self
