"""D9: key shape, display prefix, keyed hash."""

from __future__ import annotations

import pytest

from strongroom.auth.keys import display_prefix, generate_key, hash_key, parse_key
from strongroom.auth.scopes import ALL_SCOPES, parse_scopes
from strongroom.tenants.partition import Environment


@pytest.mark.parametrize("environment", list(Environment))
def test_generated_keys_have_the_d9_shape(environment):
    key = generate_key(environment)
    assert len(key) == 60
    assert key.startswith(f"ak_{environment.value}_")
    parsed = parse_key(key)
    assert parsed is not None and parsed.environment is environment


def test_generated_keys_differ():
    assert len({generate_key(Environment.TEST) for _ in range(100)}) == 100


def test_display_prefix_is_environment_prefix_plus_four():
    key = generate_key(Environment.LIVE)
    assert display_prefix(key) == key[:12]
    assert len(display_prefix(key)) == len("ak_live_") + 4


def test_hash_depends_on_the_pepper_and_hides_the_key():
    key = generate_key(Environment.TEST)
    assert hash_key(key, b"one") == hash_key(key, b"one")
    assert hash_key(key, b"one") != hash_key(key, b"two")
    assert key[8:] not in hash_key(key, b"one")


@pytest.mark.parametrize("candidate", ["", "ak_test_", "AK_TEST_" + "A" * 52, " " + "A" * 59])
def test_parse_refuses_other_shapes(candidate):
    assert parse_key(candidate) is None


def test_parse_scopes_accepts_spaces_and_commas_and_orders_them():
    assert parse_scopes("vault:write, vault:read  vault:read") == ["vault:read", "vault:write"]
    assert parse_scopes(" ".join(ALL_SCOPES)) == list(ALL_SCOPES)


def test_parse_scopes_refuses_unknown():
    with pytest.raises(ValueError, match="vault:admin"):
        parse_scopes("vault:read vault:admin")
