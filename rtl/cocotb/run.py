"""Build rtl/mx_dot.v with Icarus Verilog and run the cocotb scoreboard test against mxsim.

    python rtl/cocotb/run.py [--format mxfp4_e2m1 --f 4 --w 10 --rounding rne --overflow wrap ...]

Also driven from tests/rtl/test_rtl_reproduces_golden.py (skipped when cocotb is not installed). Needs cocotb >= 2.0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RTL = HERE.parent


def run(
    fmt="mxfp8_e4m3",
    k=32,
    f_bits=8,
    width=14,
    rounding="truncate",
    overflow="saturate",
    count=200,
    seed=1,
    build_dir=None,
    defines=(),
) -> tuple[int, int]:
    """Build and run; returns (tests, failed tests) from cocotb's results file."""
    from cocotb_tools.runner import get_results, get_runner

    build_dir = Path(build_dir or tempfile.mkdtemp(prefix="mx_dot_cocotb_"))
    params = {
        "FMT": 0 if fmt == "mxfp8_e4m3" else 1,
        "K": k,
        "F": f_bits,
        "W": width,
        "SHIFT_RNE": int(rounding == "rne"),
        "WRAP": int(overflow == "wrap"),
    }
    runner = get_runner("icarus")
    runner.build(
        sources=[RTL / "mx_dot.v"],
        hdl_toplevel="mx_dot",
        parameters=params,
        defines={d: 1 for d in defines},
        build_args=["-g2005"],
        build_dir=build_dir,
        always=True,
        timescale=("1ns", "1ps"),
    )
    env = {
        "MXDOT_FORMAT": fmt,
        "MXDOT_K": str(k),
        "MXDOT_F": str(f_bits),
        "MXDOT_W": str(width),
        "MXDOT_ROUNDING": rounding,
        "MXDOT_OVERFLOW": overflow,
        "MXDOT_COUNT": str(count),
        "MXDOT_SEED": str(seed),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    results = runner.test(
        test_module="mx_dot_cocotb",
        hdl_toplevel="mx_dot",
        test_dir=HERE,
        build_dir=build_dir,
        extra_env=env,
        results_xml=str(build_dir / "results.xml"),
    )
    return get_results(results)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--format", default="mxfp8_e4m3", choices=["mxfp8_e4m3", "mxfp4_e2m1"])
    p.add_argument("--k", type=int, default=32)
    p.add_argument("--f", type=int, default=8)
    p.add_argument("--w", type=int, default=14)
    p.add_argument("--rounding", default="truncate", choices=["truncate", "rne"])
    p.add_argument("--overflow", default="saturate", choices=["saturate", "wrap"])
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--define", action="append", default=[], help="e.g. MUTATE_SHIFT")
    a = p.parse_args(argv)
    tests, failed = run(a.format, a.k, a.f, a.w, a.rounding, a.overflow, a.count, a.seed, defines=a.define)
    print(f"cocotb: {tests} tests, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
