"""Test-wide Hypothesis settings: every property test is derandomized (its examples are a fixed
function of the test, not of the run), keeps no example database, and has no deadline (a slow
moment on a shared machine must not fail a test). So the suite gives the same verdict on every
run, locally and in CI. Tests that set their own ``@settings`` inherit these and override only
what they name."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "mxsim",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("mxsim")
