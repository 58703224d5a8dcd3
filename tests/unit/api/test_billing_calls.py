"""D21, whoever makes the call (a request or a routine's step, strongroom/api/billing.py):
live calls only are debited, under what made them, and a balance that reaches zero is
announced so every replica refuses the tenant's next live call."""

from __future__ import annotations

import uuid

from strongroom.api.billing import settled, write_debit
from strongroom.api.capability import Capability
from strongroom.auth.principal import Principal
from strongroom.billing.credits import WriteDebit
from strongroom.metrics import CREDITS_BILLED
from strongroom.tenants.partition import Environment

ASK = Capability(
    name="chat.ask", method="POST", path="/api/v2/chat", summary="Ask", tag="chat", cost=10
)


def principal(environment: Environment) -> Principal:
    return Principal(
        auth_method="api_key",
        user_id=uuid.uuid4(),
        tenant_id=uuid.uuid4(),
        email="pm@example.com",
        environment=environment,
        rate_limit_tier="standard",
        scopes=frozenset({"chat:write"}),
    )


class Announcer:
    def __init__(self) -> None:
        self.events: list[dict[str, str]] = []

    async def announce(self, event: dict[str, str]) -> None:
        self.events.append(event)


def test_a_test_call_is_free_and_a_live_one_is_debited_its_cost():
    assert write_debit(principal(Environment.TEST), ASK, "req_1") is None
    debit = write_debit(principal(Environment.LIVE), ASK, "req_1")
    assert isinstance(debit, WriteDebit)


async def test_a_balance_that_reaches_zero_is_announced_and_one_above_is_not():
    caller, announcer = principal(Environment.LIVE), Announcer()
    before = CREDITS_BILLED._value.get()
    await settled(announcer, caller, ASK, balance=5)
    assert announcer.events == []
    await settled(announcer, caller, ASK, balance=0)
    assert announcer.events == [{"tenant_id": str(caller.tenant_id)}]
    assert CREDITS_BILLED._value.get() - before == 2 * ASK.cost
