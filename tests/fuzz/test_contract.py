"""Contract fuzzing (issue 10, item 1) against the served OpenAPI document:

- every operation, fed schemathesis-generated input, valid (positive) and invalid
  (negative), with a test key that has every scope and with no key at all;
- schemathesis's coverage cases per operation: each constraint just met and just broken, a
  required part missing, a wrong type;
- stateful runs along the links schemathesis infers between operations (create a project,
  then get it; upload, then get the document and its ingestion job; ask, then get the
  conversation ...).

Every response must: not be a 5xx; have a documented status, content type, headers and body
(a stream's events included); reject invalid input with a 4xx and accept valid input unless
the refusal is one the schema cannot express (conftest.py); and, for 4xx/5xx, be an RFC 7807
problem with a catalogued `code` (application/problem+json). Without a key every capability
answers 401 `missing_api_key`.

Runs are reproducible (derandomized Hypothesis); STRONGROOM_FUZZ_EXAMPLES sets the examples
per operation and mode (conftest.py).
"""

from __future__ import annotations

import itertools
import json
import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ensure_resource_availability,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from strongroom.api.capability import Capability
from strongroom.app import AREAS
from strongroom.problems import CATALOGUE, PROBLEM_CONTENT_TYPE
from tests.conftest import BASE_URL, Credential
from tests.fuzz.conftest import EXAMPLES, EXAMPLES_WITHOUT_KEY

CAPABILITIES: dict[str, Capability] = {
    capability.name: capability for routes in AREAS for capability, _ in routes.entries
}
# Operations of the document that are not capabilities: no input, no credential.
PROBES = ("get_healthz", "get_readyz")


def _takes_input(capability: Capability) -> bool:
    """Whether there is input to make invalid (a plain string path parameter cannot be)."""
    return bool(
        "<uuid:" in capability.path or capability.query or capability.body or capability.upload
    )


# Negative data only where there is input to make invalid.
CASES = [
    pytest.param(name, mode, id=f"{name}-{mode.value}")
    for name, capability in CAPABILITIES.items()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or _takes_input(capability)
] + [pytest.param(name, GenerationMode.POSITIVE, id=name) for name in PROBES]

CONFORMANCE = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_acceptance,  # statuses it accepts: conftest.py
]


def _settings(max_examples: int, **extra) -> hypothesis_settings:
    return hypothesis_settings(
        max_examples=max_examples,
        derandomize=True,  # the same examples on every run: CI is reproducible
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        print_blob=False,
        **extra,
    )


def _media_type(response: schemathesis.Response) -> str:
    return (response.headers.get("content-type") or [""])[0].split(";")[0].strip().lower()


def problem_details(ctx, response: schemathesis.Response, case: Case) -> None:
    """Every 4xx and 5xx is an RFC 7807 problem whose `code` is in the catalogue."""
    if response.status_code < 400:
        return
    assert _media_type(response) == PROBLEM_CONTENT_TYPE, (
        f"{response.status_code} answered as {_media_type(response)!r}, not a problem"
    )
    body = json.loads(response.content)
    code = body.get("code")
    assert code in CATALOGUE, f"problem without a catalogued code: {body}"
    assert body.get("status") == response.status_code == CATALOGUE[code][0], body
    assert body.get("type") == f"{BASE_URL}/errors/{code}", body


def event_data_conformance(ctx, response: schemathesis.Response, case: Case) -> None:
    """Each Server-Sent Event's `data` is the JSON its event's model documents (the
    document's `contentSchema`, which schema validation treats as an annotation)."""
    if _media_type(response) != "text/event-stream":
        return
    capability = CAPABILITIES[case.operation.definition.raw["operationId"]]
    assert capability.events, f"{capability.name} streams undeclared events"
    for block in response.content.decode().split("\n\n"):
        lines = [line for line in block.splitlines() if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        model = capability.events.get(fields.get("event", "message"))
        assert model is not None, f"undeclared event {fields.get('event')!r}"
        model.model_validate_json(fields["data"])


def refused_without_key(ctx, response: schemathesis.Response, case: Case) -> None:
    """Without a credential, a capability answers 401 `missing_api_key` with a challenge,
    whatever its input (D7, D10), unless the path itself names no route (a path parameter
    that is not a UUID): that is 404 before anything else."""
    if case.operation.definition.raw["operationId"] not in CAPABILITIES:
        return
    body = json.loads(response.content)
    if response.status_code == 404 and case.meta.generation.mode.is_negative:
        assert body["detail"] == "No resource at this path.", body
        return
    assert response.status_code == 401, response.status_code
    assert body["code"] == "missing_api_key", body
    assert response.headers.get("www-authenticate"), "401 without WWW-Authenticate"


def _with_project(case: Case, project_id: str) -> None:
    """Point the case's `project_id` (query, JSON body or form) at a project of the caller:
    a generated one is never the caller's, and only answers 404."""
    for container in (case.query, case.body):
        if isinstance(container, dict) and "project_id" in container:
            container["project_id"] = project_id


def _fuzz(
    schema: schemathesis.BaseSchema,
    operation_id: str,
    mode: GenerationMode,
    headers: dict[str, str],
    checks: list,
    examples: int,
    project_id: str | None = None,
) -> None:
    operation = schema.find_operation_by_id(operation_id)

    @given(case=operation.as_strategy(generation_mode=mode), choice=st.integers(0, 3))
    @_settings(examples)
    def run(case: Case, choice: int) -> None:
        if project_id and choice and mode is GenerationMode.POSITIVE:  # 3 times in 4
            _with_project(case, project_id)
        case.call_and_validate(headers=headers, checks=checks)

    run()


@pytest.mark.parametrize(("operation_id", "mode"), CASES)
def test_with_key(
    fuzz_schema,
    fuzz_credential: Credential,
    fuzz_project: str,
    operation_id: str,
    mode: GenerationMode,
) -> None:
    _fuzz(
        fuzz_schema,
        operation_id,
        mode,
        fuzz_credential.headers,
        [*CONFORMANCE, problem_details, event_data_conformance],
        EXAMPLES,
        project_id=fuzz_project,
    )


@pytest.mark.parametrize(("operation_id", "mode"), CASES)
def test_without_key(fuzz_schema, operation_id: str, mode: GenerationMode) -> None:
    checks = [*CONFORMANCE, problem_details, refused_without_key]
    _fuzz(fuzz_schema, operation_id, mode, {}, checks, EXAMPLES_WITHOUT_KEY)


@pytest.mark.parametrize("operation_id", [*CAPABILITIES, *PROBES])
def test_coverage_cases(fuzz_schema, fuzz_credential: Credential, operation_id: str) -> None:
    """Schemathesis's coverage phase: a fixed set of boundary values and invalid inputs per
    operation (each constraint just met and just broken, a required part missing, a wrong
    type), valid and invalid, with the key."""
    operation = fuzz_schema.find_operation_by_id(operation_id)
    config = fuzz_schema.config.generation_for(operation=operation, phase="coverage")
    checks = [*CONFORMANCE, problem_details, event_data_conformance]
    for case in fuzz_schema.iter_coverage_cases(
        operation, generation_modes=list(GenerationMode), generation_config=config
    ):
        case.call_and_validate(headers=fuzz_credential.headers, checks=checks)


def test_stateful(fuzz_schema, fuzz_credentials: list[Credential]) -> None:
    """Sequences of calls along the links schemathesis infers from the document; each step
    gets the conformance checks, and a 404 for what a successful create just answered with is
    a failure (`ensure_resource_availability`)."""
    keys = itertools.cycle(credential.headers for credential in fuzz_credentials)
    reached: set[str] = set()

    class Scenario(fuzz_schema.as_state_machine()):
        # Each scenario on a key of its own, and a fresh Idempotency-Key per call: a replayed
        # scenario must get the answers it got the first time (not a 429, nor a 422 for a key
        # generated twice for different bodies), or Hypothesis cannot replay it.
        def setup(self) -> None:
            self.headers = next(keys)

        def get_call_kwargs(self, case: Case) -> dict:
            return {"headers": {**self.headers, "Idempotency-Key": str(uuid.uuid4())}}

        def after_call(self, response, case: Case) -> None:
            super().after_call(response, case)
            if response.status_code < 300:
                reached.add(case.operation.definition.raw["operationId"])

        def validate_response(self, response, case: Case, additional_checks=None, **kwargs):
            case.validate_response(
                response,
                checks=[
                    # Positive data only (conftest.py); negative_data_rejection is left to the
                    # stateless tests, as it misreads some of these cases as negative.
                    *(check for check in CONFORMANCE if check is not negative_data_rejection),
                    problem_details,
                    event_data_conformance,
                    ensure_resource_availability,
                ],
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    # 15 steps: with routines and deletions among its links, 10 left a create's links unfollowed.
    Scenario.run(settings=_settings(EXAMPLES, stateful_step_count=15))
    # An operation whose path takes an id can only succeed with an id an earlier call answered
    # with: a link was followed (which ones is the state machine's draw, and the API has grown:
    # a project's get, a conversation's, a fill's...).
    followed = {name for name in reached if name in CAPABILITIES and "<" in CAPABILITIES[name].path}
    assert "vault.create_project" in reached, " ".join(sorted(reached))
    assert followed, " ".join(sorted(reached))
