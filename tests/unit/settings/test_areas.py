"""Issue 54 point 1: the settings are declared by area, and splitting them changed nothing a
deployment sees: the same `STRONGROOM_*` names, defaults, types, bounds, validators and
sources (the environment only; no `.env` file) as before the split (captured in
before_areas.json from the one flat class at 104b170)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from strongroom.settings import AREAS, Settings

BEFORE = json.loads((Path(__file__).parent / "before_areas.json").read_text())


def _now() -> dict[str, dict]:
    schema = Settings.model_json_schema()
    fields = {}
    for name, info in Settings.model_fields.items():
        prop = {
            key: value
            for key, value in schema["properties"][name].items()
            if key not in {"description", "x-shown-default"}  # the words may change
        }
        fields["STRONGROOM_" + name.upper()] = {
            "attribute": name,
            "default": repr(info.default),
            "annotation": repr(info.annotation),
            "constraints": [repr(bound) for bound in info.metadata],
            "schema": prop,
        }
    return fields


def test_the_environment_names_are_those_before_the_split():
    assert sorted(_now()) == sorted(BEFORE["settings"])


def test_each_setting_keeps_its_default_type_and_bounds():
    now = _now()
    changed = {
        name: now[name] for name in BEFORE["settings"] if now[name] != BEFORE["settings"][name]
    }
    assert not changed, json.dumps(changed, indent=1)
    assert Settings.model_json_schema().get("required", []) == BEFORE["required"]


def test_the_sources_are_configured_as_before():
    config = {key: Settings.model_config.get(key) for key in BEFORE["config"]}
    assert config == BEFORE["config"]
    assert config["env_file"] is None  # no `.env` is read, as before


def test_the_same_validators_run():
    decorators = Settings.__pydantic_decorators__
    assert sorted(decorators.field_validators) == BEFORE["validators"]["field"]
    assert sorted(decorators.model_validators) == BEFORE["validators"]["model"]


def test_every_setting_belongs_to_exactly_one_area():
    seen: dict[str, str] = {}
    for title, area in AREAS.items():
        assert area.model_fields, title
        assert area.__doc__, f"{title}: say what the area is for"
        for name in area.model_fields:
            assert name not in seen, f"{name} in {seen.get(name)} and {title}"
            seen[name] = title
    assert sorted(seen) == sorted(Settings.model_fields)


def test_every_area_is_composed_into_settings():
    for area in AREAS.values():
        assert issubclass(Settings, area)


def test_values_come_from_the_environment_whatever_their_case(monkeypatch):
    monkeypatch.setenv("STRONGROOM_WORKER_CONCURRENCY", "5")
    monkeypatch.setenv("strongroom_webhooks_concurrency", "7")
    monkeypatch.setenv("STRONGROOM_RATE_LIMIT_TIERS", '{"free": [1, 2]}')
    monkeypatch.setenv("STRONGROOM_OCR", "off")
    settings = Settings()
    assert settings.worker_concurrency == 5
    assert settings.webhooks_concurrency == 7
    assert settings.rate_limit_tiers == {"free": (1, 2)}
    assert settings.ocr == "off"


def test_a_dotenv_file_is_not_read(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("STRONGROOM_WORKER_CONCURRENCY=9\n")
    monkeypatch.delenv("STRONGROOM_WORKER_CONCURRENCY", raising=False)
    assert Settings().worker_concurrency == 2


def test_arguments_win_over_the_environment_and_unknown_ones_are_ignored(monkeypatch):
    monkeypatch.setenv("STRONGROOM_JOB_MAX_ATTEMPTS", "4")
    settings = Settings(job_max_attempts=6, no_such_setting=1)
    assert settings.job_max_attempts == 6
    assert not hasattr(settings, "no_such_setting")


def test_bounds_declared_in_an_area_still_refuse(monkeypatch):
    monkeypatch.setenv("STRONGROOM_OCR_DPI", "20")
    with pytest.raises(ValidationError, match="ocr_dpi"):
        Settings()


def test_the_base_url_loses_its_trailing_slash():
    assert Settings(base_url="https://api.example.com/").base_url == "https://api.example.com"


def test_a_plain_postgresql_url_runs_on_psycopg():
    settings = Settings(database_url="postgresql://u@db/x")
    assert settings.database_url == "postgresql+psycopg://u@db/x"
    assert settings.postgres_conninfo == "postgresql://u@db/x"
    assert not settings.is_embedded


def test_the_embedded_default_derives_its_paths_from_the_data_dir(tmp_path):
    settings = Settings(data_dir=tmp_path)
    assert settings.resolved_database_url == f"sqlite+aiosqlite:///{tmp_path / 'strongroom.db'}"
    assert settings.blob_location == str(tmp_path / "blobs")
    assert settings.is_embedded


def test_the_upstream_sign_in_settings_go_together():
    with pytest.raises(ValidationError, match="OIDC_ISSUER"):
        Settings(oidc_issuer="https://id.example.com")


def test_the_openai_embeddings_need_their_url_and_model():
    with pytest.raises(ValidationError, match="EMBEDDINGS_OPENAI_BASE_URL"):
        Settings(embeddings_provider="openai", embeddings_openai_model="m")
