"""cocotb test of rtl/mx_dot.v with mxsim's reference datapath as the scoreboard.

Random blocks (any code, saturating runs, subnormals, cancellation, zeros; scales including
0x00, 0xFE and 0xFF) are driven into the combinational mx_dot; every output (acc, lsb, anchor,
result) is compared with ``mxsim.ref.dot.dot`` under the same Accumulator.

The configuration comes from environment variables set by the runner (``run.py`` or
tests/rtl/test_rtl_reproduces_golden.py): MXDOT_FORMAT (mxfp8_e4m3 | mxfp4_e2m1), MXDOT_K, MXDOT_F, MXDOT_W,
MXDOT_ROUNDING (truncate | rne), MXDOT_OVERFLOW (saturate | wrap), MXDOT_COUNT, MXDOT_SEED.
They must match the HDL parameters the design was built with.
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.triggers import Timer

from mxsim.options.accumulate import Accumulator
from mxsim.ref.block import QuantizedBlock
from mxsim.ref.dot import dot

ELEMENT_BITS = {"mxfp8_e4m3": 8, "mxfp4_e2m1": 4}


def random_codes(rng: random.Random, ew: int, k: int, kind: int) -> list[int]:
    sign_bit = 1 << (ew - 1)
    if kind == 0:  # any code (E4M3 NaN included)
        return [rng.randrange(1 << ew) for _ in range(k)]
    if kind == 1:  # large, one sign: saturation / wrap
        sign = rng.choice((0, sign_bit))
        low = 0x70 if ew == 8 else 4
        return [sign | rng.randrange(low, sign_bit - 1 if ew == 8 else sign_bit) for _ in range(k)]
    if kind == 2:  # small: subnormals and zeros
        return [rng.choice((0, sign_bit)) | rng.randrange(0x10 if ew == 8 else 2) for _ in range(k)]
    if kind == 3:  # exact cancellation
        half = [rng.randrange(sign_bit - 1 if ew == 8 else sign_bit) for _ in range(k // 2)]
        return (half + [c ^ sign_bit for c in half] + [0] * k)[:k]
    if kind == 4:  # finite, wide exponent spread
        return [rng.choice((0, sign_bit)) | rng.randrange(sign_bit - 1 if ew == 8 else sign_bit) for _ in range(k)]
    return [0] * k


@cocotb.test()
async def mx_dot_matches_reference(dut):
    fmt = os.environ.get("MXDOT_FORMAT", "mxfp8_e4m3")
    k = int(os.environ.get("MXDOT_K", "32"))
    f_bits = int(os.environ.get("MXDOT_F", "8"))
    width = int(os.environ.get("MXDOT_W", "14"))
    rounding = os.environ.get("MXDOT_ROUNDING", "truncate")
    overflow = os.environ.get("MXDOT_OVERFLOW", "saturate")
    count = int(os.environ.get("MXDOT_COUNT", "200"))
    rng = random.Random(int(os.environ.get("MXDOT_SEED", "1")))
    ew = ELEMENT_BITS[fmt]
    accumulator = Accumulator(mode="aligned", frac_bits=f_bits, width=width, shift_rounding=rounding, overflow=overflow)
    scales = (0x00, 0x01, 0x7F, 0xFE, 0xFF)
    mismatches = []
    for n in range(count):
        kind = rng.randrange(6)  # both operands of one kind 40% of the time (large x large saturates)
        a = random_codes(rng, ew, k, kind)
        b = random_codes(rng, ew, k, kind if rng.random() < 0.4 else rng.randrange(6))
        sa = rng.choice(scales) if rng.random() < 0.3 else rng.randrange(100, 160)
        sb = rng.choice(scales) if rng.random() < 0.3 else rng.randrange(256)
        dut.a_elems.value = sum(c << (i * ew) for i, c in enumerate(a))
        dut.b_elems.value = sum(c << (i * ew) for i, c in enumerate(b))
        dut.a_scale.value = sa
        dut.b_scale.value = sb
        await Timer(1, unit="ns")
        pad = (0,) * (32 - k)
        ref = dot(
            QuantizedBlock(sa, (), tuple(a) + pad), QuantizedBlock(sb, (), tuple(b) + pad), fmt, accumulator=accumulator
        )
        got = {
            "acc": dut.acc.value.to_signed(),
            "lsb": dut.lsb.value.to_signed(),
            "anchor": dut.anchor.value.to_signed(),
            "result": dut.result.value.to_unsigned(),
        }
        want = {"acc": ref.accumulator, "lsb": ref.lsb_exponent, "anchor": ref.anchor, "result": ref.code}
        for field, expected in want.items():
            if got[field] != expected:
                mismatches.append((n, field, expected, got[field]))
                if len(mismatches) <= 10:
                    dut._log.error(
                        "vector %d field %s: expected %s got %s (a_scale %02x b_scale %02x)",
                        n,
                        field,
                        expected,
                        got[field],
                        sa,
                        sb,
                    )
    dut._log.info("%d passed, %d failed", count - len({m[0] for m in mismatches}), len({m[0] for m in mismatches}))
    assert not mismatches, f"{len(mismatches)} mismatching fields, first: {mismatches[:3]}"
