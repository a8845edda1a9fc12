"""The dequantizer's kept values against plain definitions: dequantize_block (which scales each
distinct code once per sub-block) against element * 2^(E - tau_j) (* s_t) computed here with
Fractions, on blocks that repeat codes within and across sub-blocks; a refused code after an
accepted equal one (True after 1) is still refused; output_format's kept names give the same
formats, refuse what output_name refuses and stay bounded."""

from __future__ import annotations

import importlib
import random
from fractions import Fraction

import pytest

from mxsim.formats import get_format
from mxsim.ref.stored_block import QuantizedBlock, dequantize_block
from mxsim.ref.decode import decode
from mxsim.ref.exact import Exact

dequant_module = importlib.import_module("mxsim.ref.dequant")


def _defined(block: QuantizedBlock, fmt, tensor_scale) -> list[Exact]:
    """Contract 3.1 / 2: element value times 2^(E - tau_j) (E8M0: E = code - 127, 0xFF NaN), or times the
    UE4M3 scale and s_t (NVFP4); NaN scale: NaN everywhere; NaN, Inf and zeros keep their sign."""
    if fmt.scale.name == "e8m0":
        if block.scale == 0xFF:
            return [Exact.nan() for _ in block.codes]
        factor = Fraction(2) ** (block.scale - 127)
    else:
        scale = decode(block.scale, fmt.scale)
        if scale.is_nan:
            return [Exact.nan() for _ in block.codes]
        factor = scale.magnitude * tensor_scale
    out = []
    for i, code in enumerate(block.codes):
        tau = block.subscales[i // fmt.subblock_size] if fmt.subblocks else 0
        x = decode(code, fmt.element)
        out.append(x if not x.is_finite else Exact(x.sign, x.magnitude * factor / Fraction(2) ** tau))
    return out


@pytest.mark.parametrize("name", ["mx9", "mx4", "mxfp4_e2m1", "mxfp8_e4m3", "mxint8", "nvfp4"])
def test_dequantize_block_is_the_definition_with_repeated_codes(name):
    fmt = get_format(name, kind="block")
    rng = random.Random(name)
    crossing = 0  # blocks where one code sits in two sub-blocks of different tau (a cache keyed by code alone fails)
    for _ in range(300):
        palette = [rng.getrandbits(fmt.element.width) for _ in range(3)]  # few codes: they repeat
        codes = tuple(rng.choice(palette) for _ in range(fmt.block_size))
        subscales = tuple(rng.getrandbits(fmt.subscale_bits) for _ in range(fmt.subblocks))
        scale = rng.choice([0, 1, 100, 127, 200, 254, 255]) if fmt.scale.name == "e8m0" else rng.getrandbits(8) & 0x7F
        tensor_scale = Fraction(rng.getrandbits(24) | 1 << 23, 1 << rng.randrange(10, 40)) if fmt.tensor_scale else None
        block = QuantizedBlock(scale, subscales, codes)
        assert dequantize_block(block, fmt, tensor_scale) == _defined(block, fmt, tensor_scale)
        if fmt.subblocks:
            size = fmt.subblock_size
            where = {}
            for i, code in enumerate(codes):
                where.setdefault(code, set()).add(subscales[i // size])
            crossing += any(len(taus) > 1 for taus in where.values())
    assert crossing > 100 or not fmt.subblocks


def test_a_bool_code_after_an_equal_int_is_refused():
    fmt = get_format("mxfp4_e2m1", kind="block")
    codes = (1,) * 5 + (True,) + (1,) * 26
    with pytest.raises(ValueError, match="code True is out of range"):
        dequantize_block(QuantizedBlock(127, (), codes), fmt)


def test_output_format_keeps_names_bounded_and_refuses_the_rest():
    spellings = [prefix + case + suffix for case in ("float16", "FLOAT16", "Float16", "fp16", "FP16", "half", "HALF")
                 for prefix in ("", " ", "  ", "\t") for suffix in ("", " ", "  ", "\n")]
    fp16 = get_format("fp16", kind="float")
    for spelling in spellings:
        assert dequant_module.output_format(spelling) is fp16
        assert dequant_module.output_format(spelling) is fp16  # the kept one
        assert len(dequant_module._OUTPUT_FORMATS) <= 64
    assert len(spellings) > 64
    assert dequant_module.output_format("bfloat16") is get_format("bf16", kind="float")
    for refused in ("float17", True, 1, ""):
        with pytest.raises(ValueError, match="is not allowed"):
            dequant_module.output_format(refused)
