"""The outbox (issue 30): events recorded in the caller's own transaction, and their delivery
to the tenants' webhook endpoints. A part below the capability areas, so that any area
(vault, chat, templates, workflows) records an event in the transaction of the change it
reports; the webhooks area (strongroom/webhooks/) is only the API over the endpoints.

What is here, and why it is here rather than in strongroom/webhooks/:

- record.py: `record_event` (the event row and one delivery per subscribed endpoint, in the
  caller's session) and the wake-up on commit. What areas call.
- enums.py: the event types and the states of endpoints and deliveries: what `record_event`
  takes and what the tables hold (the webhooks area's schemas name them too).
- models.py: the three tables. `record_event` reads the endpoints to fan out and the
  dispatcher reads and disables them, so the endpoint table is the machinery's as well; the
  webhooks area manages its rows.
- dispatch.py (claim, attempt, back off, disable), fairness.py (who gets the slots),
  sender.py (one pinned HTTP attempt; httpx), attempt.py (its outcome, apart from httpx),
  signing.py (Standard Webhooks signatures, sealed secrets), addresses.py (public addresses
  only): what delivers, imported only by the processes that deliver (strongroom.runtime's
  `deliver_webhooks`). The webhooks area uses signing.py and addresses.py too, to seal a new
  endpoint's secret and to refuse its URL.

What stays in strongroom/webhooks/: routes.py, schemas.py, endpoints.py (the endpoints API),
and events.py (the events of job ends), which knows the areas' views of their resources.
"""
