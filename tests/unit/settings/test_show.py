"""`strongroom config`: the effective settings by area, secrets masked (issue 54 point 1)."""

from __future__ import annotations

from click.testing import CliRunner

from strongroom.cli import main
from strongroom.settings import AREAS, Settings
from strongroom.settings.show import MASK, effective_settings, mask_url, render


def _lines(settings: Settings) -> dict[str, str]:
    return {name: value for _, rows in effective_settings(settings) for name, value in rows}


def test_every_setting_is_shown_once_under_its_area_in_order():
    shown = effective_settings(Settings())
    assert [title for title, _ in shown] == list(AREAS)
    names = [name for _, rows in shown for name, _ in rows]
    assert sorted(names) == sorted(f"STRONGROOM_{n.upper()}" for n in Settings.model_fields)


def test_plain_values_are_shown_as_they_are_read():
    values = _lines(Settings(worker_concurrency=3, ocr="off", key_cache_seconds=1.5))
    assert values["STRONGROOM_WORKER_CONCURRENCY"] == "3"
    assert values["STRONGROOM_OCR"] == "off"
    assert values["STRONGROOM_KEY_CACHE_SECONDS"] == "1.5"  # a number, though named 'key'
    assert values["STRONGROOM_CHAT_OPENAI_MAX_TOKENS"] == "1024"
    assert values["STRONGROOM_JOB_WARM_CHILDREN_AT_START"] == "true"
    assert values["STRONGROOM_REDIS_URL"] == "unset"
    assert values["STRONGROOM_RATE_LIMIT_TIERS"].startswith('{"free": [10, 20]')


def test_secrets_are_masked():
    settings = Settings(
        key_pepper="pepper-value-1",
        secret_key="secret-value-2",
        oidc_issuer="https://id.example.com",
        oidc_client_id="client",
        oidc_client_secret="oidc-value-3",
        s3_access_key_id="AKIAVALUE4",
        s3_secret_access_key="s3-value-5",
        chat_openai_api_key="sk-value-6",
        embeddings_openai_api_key="sk-value-7",
    )
    values = _lines(settings)
    for name in (
        "KEY_PEPPER",
        "SECRET_KEY",
        "OIDC_CLIENT_SECRET",
        "S3_ACCESS_KEY_ID",
        "S3_SECRET_ACCESS_KEY",
        "CHAT_OPENAI_API_KEY",
        "EMBEDDINGS_OPENAI_API_KEY",
    ):
        assert values[f"STRONGROOM_{name}"] == MASK, name
    text = render(settings)
    for value in ("pepper-value-1", "secret-value-2", "oidc-value-3", "AKIAVALUE4", "s3-value-5",
                  "sk-value-6", "sk-value-7"):  # fmt: skip
        assert value not in text
    assert values["STRONGROOM_OIDC_CLIENT_ID"] == "client"
    assert _lines(Settings())["STRONGROOM_KEY_PEPPER"] == "unset"


def test_passwords_in_urls_are_masked():
    settings = Settings(
        database_url="postgresql://app:db-pass@db:5432/strongroom",
        redis_url="redis://:redis-pass@cache:6379/0",
    )
    values = _lines(settings)
    assert (
        values["STRONGROOM_DATABASE_URL"] == f"postgresql+psycopg://app:{MASK}@db:5432/strongroom"
    )
    assert values["STRONGROOM_REDIS_URL"] == f"redis://:{MASK}@cache:6379/0"
    assert "pass" not in render(settings)


def test_a_password_in_a_urls_query_is_masked():
    masked = mask_url("postgresql://db/x?sslmode=require&password=q-pass")
    assert masked == f"postgresql://db/x?sslmode=require&password={MASK}"
    assert mask_url("http://tei:8080/v1") == "http://tei:8080/v1"
    assert mask_url("s3://bucket/prefix") == "s3://bucket/prefix"


def test_the_command_prints_the_settings_of_its_environment():
    result = CliRunner().invoke(
        main,
        ["config"],
        env={"STRONGROOM_WORKER_CONCURRENCY": "4", "STRONGROOM_KEY_PEPPER": "pepper-cli-value"},
    )
    assert result.exit_code == 0, result.output
    assert "Jobs" in result.output
    assert "STRONGROOM_WORKER_CONCURRENCY" in result.output
    line = next(line for line in result.output.splitlines() if "WORKER_CONCURRENCY" in line)
    assert line.split()[-1] == "4"
    assert "pepper-cli-value" not in result.output


def test_the_command_names_a_bad_setting_without_its_value():
    result = CliRunner().invoke(main, ["config"], env={"STRONGROOM_OCR_DPI": "secret-ish-text"})
    assert result.exit_code != 0
    assert "STRONGROOM_OCR_DPI" in result.output
    assert "secret-ish-text" not in result.output
