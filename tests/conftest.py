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

# The tests live in folders that mirror the package (tests/formats, ref, fast, golden, cli, ...); their
# shared helpers (forged_suites, library_oracles, library_stimulus, oracle_formats, doc_examples) stay here,
# importable from every folder.
import sys
from pathlib import Path

# A few test files share checks with another (the fused oracle, the dot checks): every test folder is on
# sys.path too, so ``from test_fused_steps_fast import ...`` works whichever file pytest collects first.
_HERE = Path(__file__).resolve().parent
for _folder in [_HERE, *sorted(p for p in _HERE.iterdir() if p.is_dir() and list(p.glob("test_*.py")))]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))
