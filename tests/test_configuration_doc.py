"""docs/configuration.md's table of settings is generated from the settings (issue 54 point
1), as docs/capabilities.md is from the capabilities: it fails here when the two differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from strongroom.settings import AREAS, Settings
from strongroom.settings.docs import BEGIN, END, settings_table, shown_default, with_table

DOC = Path(__file__).parents[1] / "docs" / "configuration.md"


def test_the_settings_table_is_current():
    text = DOC.read_text()
    assert text == with_table(text), "regenerate with: .venv/bin/python -m strongroom.settings.docs"


def test_the_table_is_one_table_with_every_setting_once_and_prose_around_it():
    text = DOC.read_text()
    before, rest = text.split(BEGIN)
    table, after = rest.split(END)
    assert before.startswith("# Configuration") and "## Secrets" in after
    rows = [line for line in table.strip().splitlines() if line.startswith("| ")][1:]
    names = [row.split(" | ")[1].strip("`") for row in rows]
    assert sorted(names) == sorted(f"STRONGROOM_{n.upper()}" for n in Settings.model_fields)


def test_rows_follow_the_areas():
    table = settings_table()
    areas = [row.split(" | ")[0].removeprefix("| ") for row in table.splitlines()[2:]]
    assert list(dict.fromkeys(areas)) == list(AREAS)


def _shown(name: str) -> str:
    return shown_default(name, Settings.model_fields[name])


def test_defaults_are_shown_as_a_person_reads_them():
    assert _shown("upload_max_bytes") == "`104857600` (100 MiB)"
    assert _shown("idempotency_max_body_bytes") == "`65536` (64 KiB)"
    assert _shown("job_memory_limit_bytes") == "`1073741824` (1 GiB)"
    assert _shown("chat_openai_max_tokens") == "`1024`"  # tokens, not bytes
    assert _shown("redis_url") == "unset"
    assert _shown("job_warm_children_at_start") == "`true`"
    assert _shown("webhooks_timeout_seconds") == "`10`"
    assert _shown("embeddings_openai_answer_floor") == "`0.72`"
    assert _shown("data_dir") == "`.strongroom`"
    assert _shown("key_pepper") == "generated (SQLite only)"  # worked out at start


def test_a_doc_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="markers"):
        with_table("# Configuration\n\nno markers\n")
