"""How long the readiness loop waits between checks: one schedule for the handler and the estimate.

A target is rarely usable before its kind's typical provisioning time (``provision_s``: EC2 and SSM
registration about 5 minutes, RDS 15, Aurora 20), so the first waits cover what is left of it, at
most 10 polls' worth, and only then does the loop check at the plain poll interval. Checking every
15 s from the start would cost 3 state transitions and a Lambda call per check (20 checks for an EC2
host instead of 3) for a start at most one 10-poll wait later. The readiness handler
(``lifecycle.check_ready``) answers with ``next_wait_s``; the control-plane estimate counts the
checks of a target that becomes ready exactly at ``provision_s`` with ``expected_checks``.
"""

from __future__ import annotations

# The longest early wait, in polls: a host much faster than typical waits at most this long.
MAX_EARLY_POLLS = 10


def next_wait_s(elapsed_s: float, provision_s: int, poll_s: int) -> int:
    """Seconds until the next check, ``elapsed_s`` after the target was provisioned."""
    expected_left = max(0, int(provision_s - elapsed_s))
    return max(poll_s, min(expected_left, MAX_EARLY_POLLS * poll_s))


def expected_checks(provision_s: int, poll_s: int) -> int:
    """Checks (the first, right after provisioning, included) until a target that becomes ready at
    ``provision_s`` is seen ready."""
    poll_s = max(1, poll_s)
    elapsed, checks = 0, 1
    while elapsed < provision_s:
        elapsed += next_wait_s(elapsed, provision_s, poll_s)
        checks += 1
    return checks
