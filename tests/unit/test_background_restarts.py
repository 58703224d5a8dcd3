"""The supervisor's back-off counts restarts only since a task last did well
(strongroom/background.py): a task killed once long ago, that has run good rounds since,
waits its period after a later failure, not the cap. Lifetime restarts still show."""

from __future__ import annotations

from tests.unit.test_background import flood, fresh, rounds, supervisor, task, until

__all__ = ["flood", "fresh"]  # the round named below, and the autouse fixture that clears it


async def test_a_good_round_after_restarts_sets_the_back_off_back_to_the_period():
    watched = supervisor(task("flood", round=f"{__name__}:flood"))
    watched.start("flood")
    await until(lambda: rounds.get("flood", 0) >= 1)
    first = watched._watched["flood"].running
    first.cancel()  # killed from outside
    await until(lambda: watched._watched["flood"].running is not first)
    assert watched.state()["flood"]["restarts"] == 1
    held = watched._watched["flood"]
    held.restarts_in_a_row = 5  # as after five restarts with no good round between
    held.state.failures = 1
    assert watched._backoff(held) == 0.16
    counted = rounds["flood"]
    # A round runs whole in one step of the loop: one counted after this point also ended here.
    await until(lambda: rounds["flood"] > counted)
    assert held.restarts_in_a_row == 0
    held.state.failures = 1  # a later failure
    assert watched._backoff(held) == 0.01  # the period, not 0.16
    assert watched.state()["flood"]["restarts"] == 1  # /readyz still shows every restart
    await watched.stop()


async def test_restarts_in_a_row_double_the_wait():
    watched = supervisor(task("flood", round=f"{__name__}:flood"))
    watched.start("flood")
    held = watched._watched["flood"]
    delays = []
    for in_a_row in (1, 2, 3, 50):
        held.restarts_in_a_row = in_a_row
        delays.append(watched._backoff(held))
    assert delays == [0.01, 0.02, 0.04, 10.0]
    await watched.stop()
