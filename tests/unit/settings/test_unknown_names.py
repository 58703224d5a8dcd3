"""Issue 54 point 1: a `STRONGROOM_*` name that is no setting is named at start, with the
closest real name, and its value (perhaps a secret) is never shown."""

from __future__ import annotations

import logging

from click.testing import CliRunner

from strongroom.cli import main
from strongroom.settings.unknown import unknown_names, warn_unknown_names


def test_a_misspelt_name_gets_the_closest_setting():
    found = unknown_names({"STRONGROOM_EMBEDING_PROVIDER": "none"})
    assert found == [("STRONGROOM_EMBEDING_PROVIDER", "STRONGROOM_EMBEDDINGS_PROVIDER")]


def test_settings_and_other_programs_names_are_not_reported():
    environ = {
        "STRONGROOM_EMBEDDINGS_PROVIDER": "none",
        "strongroom_worker_concurrency": "3",  # names are read whatever their case
        "PATH": "/usr/bin",
        "EMBEDING_PROVIDER": "x",
        "STRONGROOM_API_KEY": "ak_test_x",  # a client's key (README, docs/webhooks.md)
        "STRONGROOM_TEST_POSTGRES_URL": "postgresql://x",  # the test suite's own
        "STRONGROOM_E2E_UPGRADE": "true",
        "STRONGROOM_FUZZ_EXAMPLES": "5",
    }
    assert unknown_names(environ) == []


def test_a_name_like_no_setting_gets_no_suggestion():
    assert unknown_names({"STRONGROOM_QWXZ": "1"}) == [("STRONGROOM_QWXZ", None)]


def test_a_name_in_lower_case_is_suggested_in_the_case_it_is_read():
    assert unknown_names({"strongroom_ocr_dpis": "1"}) == [
        ("strongroom_ocr_dpis", "STRONGROOM_OCR_DPI")
    ]


def test_the_warning_names_the_variable_and_the_suggestion_never_the_value(caplog):
    caplog.set_level(logging.WARNING, logger="strongroom.settings")
    warn_unknown_names({"STRONGROOM_CHAT_OPENAI_APIKEY": "sk-very-secret", "HOME": "/root"})
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "STRONGROOM_CHAT_OPENAI_APIKEY" in message
    assert "did you mean STRONGROOM_CHAT_OPENAI_API_KEY?" in message
    assert "sk-very-secret" not in message
    assert "sk-very-secret" not in str(vars(record))


def test_every_command_warns_at_start(caplog):
    """The `strongroom` group runs before each command (serve, worker, dev, operator and the
    admin commands), so the warning is given once, before any of them builds its settings."""
    caplog.set_level(logging.WARNING, logger="strongroom.settings")
    result = CliRunner().invoke(
        main, ["config"], env={"STRONGROOM_EMBEDING_PROVIDER": "hunter2-secret"}
    )
    assert result.exit_code == 0, result.output
    messages = [record.getMessage() for record in caplog.records]
    assert any("did you mean STRONGROOM_EMBEDDINGS_PROVIDER?" in m for m in messages), messages
    assert "hunter2-secret" not in result.output
    assert not any("hunter2-secret" in m for m in messages)
