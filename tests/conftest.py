"""Settings shared by every test directory.

Property tests check behaviour, not speed: Hypothesis' default 200 ms
deadline per example fails them on a busy 2-core machine for no fault of
the code, so no test runs with a deadline (timed checks live in `bench/`).
"""

from hypothesis import settings

settings.register_profile("p4mcc", deadline=None)
settings.load_profile("p4mcc")
