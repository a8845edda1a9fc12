"""The mutants of ``rtl/mutate.py``: per RTL model, its testbench, its canonical suites (with the
testbench parameters of each) and at least 20 single textual patches of the kinds real bugs take.

A :class:`Mutant` replaces the text ``old`` (which must occur exactly once in ``file``) with
``new``. ``equivalent`` is the proof that the patch cannot change any output of the model in the
configurations of its suites (it must then survive every suite); ``gap`` names the configuration
that would exercise the patched code and that no canonical suite takes (the mutant is not
equivalent: its survival is a hole in the canonical collection).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Mutant", "Model", "MODELS"]


@dataclass(frozen=True)
class Mutant:
    model: str
    name: str
    file: str
    old: str
    new: str
    what: str
    equivalent: str = ""
    gap: str = ""


@dataclass(frozen=True)
class Model:
    name: str
    top: str                                   # the testbench module
    sources: tuple[str, ...]                   # its files in rtl/ (testbench first)
    suites: tuple[tuple[str, str, dict], ...]  # (kind, suite name in golden/, testbench parameters)
    mutants: tuple[Mutant, ...]


def _mutants(model: str, file: str, rows) -> tuple[Mutant, ...]:
    out = []
    for row in rows:
        name, old, new, what, *rest = row
        extra = rest[0] if rest else {}
        out.append(Mutant(model, name, extra.get("file", file), old, new, what, extra.get("equivalent", ""),
                          extra.get("gap", "")))
    return tuple(out)


# ---- mx_elem_decode ---------------------------------------------------------------------------

DECODE = Model("decode", "tb_decode", ("tb_decode.v", "mx_elem_decode.v"), (
    ("decode", "fp8_e4m3", {"FMT": 0}),
    ("decode", "fp4_e2m1", {"FMT": 1}),
), _mutants("decode", "mx_elem_decode.v", [
    (
        'nan-or',
        "if (e == 4'hF && m == 3'h7)",
        "if (e == 4'hF || m == 3'h7)",
        'E4M3 NaN test: || for &&',
    ),
    (
        'nan-mant',
        "if (e == 4'hF && m == 3'h7)",
        "if (e == 4'hF && m[2:1] == 2'h3)",
        'E4M3 NaN test ignores the mantissa LSB',
    ),
    (
        'nan-sign',
        "fp32 = {s, 31'h7FC0_0000};",
        "fp32 = {1'b0, 31'h7FC0_0000};",
        'E4M3 NaN loses its sign',
    ),
    (
        'bias-up',
        "{4'b0, e} + 8'd120, m, 20'h0}",
        "{4'b0, e} + 8'd121, m, 20'h0}",
        'E4M3 normal: bias off by one (+)',
    ),
    (
        'bias-down',
        "{4'b0, e} + 8'd120, m, 20'h0}",
        "{4'b0, e} + 8'd119, m, 20'h0}",
        'E4M3 normal: bias off by one (-)',
    ),
    (
        'mant-shift',
        "{4'b0, e} + 8'd120, m, 20'h0}",
        "{4'b0, e} + 8'd120, m[1:0], 21'h0}",
        'E4M3 normal: mantissa shifted one place',
    ),
    (
        'normal-bound',
        "else if (e != 4'h0)\n                fp32 = {s, {4'b0, e} + 8'd120",
        "else if (e > 4'h1)\n                fp32 = {s, {4'b0, e} + 8'd120",
        'E4M3: exponent field 1 taken as subnormal',
    ),
    (
        'sub1-exp',
        "3'd1: fp32 = {s, 8'd118, 23'h000000};",
        "3'd1: fp32 = {s, 8'd117, 23'h000000};",
        'E4M3 2^-9: exponent off by one',
    ),
    (
        'sub2-exp',
        "3'd2: fp32 = {s, 8'd119, 23'h000000};",
        "3'd2: fp32 = {s, 8'd118, 23'h000000};",
        'E4M3 2^-8: exponent off by one',
    ),
    (
        'sub3-mant',
        "3'd3: fp32 = {s, 8'd119, 23'h400000};",
        "3'd3: fp32 = {s, 8'd119, 23'h200000};",
        'E4M3 1.5*2^-8: mantissa bit misplaced',
    ),
    (
        'sub47-exp',
        "default: fp32 = {s, 8'd120, m[1:0], 21'h0};",
        "default: fp32 = {s, 8'd121, m[1:0], 21'h0};",
        'E4M3 subnormals 4..7: exponent off by one',
    ),
    (
        'sub47-mant',
        "default: fp32 = {s, 8'd120, m[1:0], 21'h0};",
        "default: fp32 = {s, 8'd120, m[2:1], 21'h0};",
        'E4M3 subnormals 4..7: wrong mantissa bits',
    ),
    (
        'zero-sign',
        "3'd0: fp32 = {s, 31'h0};",
        "3'd0: fp32 = {1'b0, 31'h0};",
        'E4M3 -0 decodes to +0',
    ),
    (
        'e4m3-sign-bit',
        's = code[7];',
        's = code[6];',
        'E4M3 sign read from the wrong bit',
    ),
    (
        'fp4-bias',
        "fp32 = {s, {4'b0, e} + 8'd126, m[0], 22'h0};",
        "fp32 = {s, {4'b0, e} + 8'd127, m[0], 22'h0};",
        'E2M1 normal: bias off by one',
    ),
    (
        'fp4-sub-exp',
        "fp32 = {s, 8'd126, 23'h0};",
        "fp32 = {s, 8'd125, 23'h0};",
        'E2M1 subnormal 0.5: exponent off by one',
    ),
    (
        'fp4-zero-sign',
        "fp32 = {s, 31'h0};                                  // +-0",
        "fp32 = {1'b0, 31'h0};                               // +-0",
        'E2M1 -0 decodes to +0',
    ),
    (
        'fp4-sign-bit',
        's = code[3];',
        's = code[7];',
        'E2M1 sign read from the wrong bit',
    ),
    (
        'fp4-exp-bits',
        "e = {2'b00, code[2:1]};",
        "e = {2'b00, code[3:2]};",
        'E2M1 exponent field off by one bit',
    ),
    (
        'fp4-mant-bit',
        "m = {2'b00, code[0]};",
        "m = {2'b00, code[1]};",
        'E2M1 mantissa read from the wrong bit',
    ),
    (
        'fp4-sub-test',
        'else if (m[0])',
        'else if (e[0])',
        'E2M1 subnormal test reads the exponent',
    ),
    (
        'default-ones',
        "fp32 = 32'h0000_0000;",
        "fp32 = 32'hFFFF_FFFF;",
        'the default before the branches',
        {
            'equivalent': 'every branch of both formats assigns fp32 (if/else if/else chains and a case with a '
                          'default), so the default value is never visible',
        },
    ),
    (
        'fp4-m-pad',
        "m = {2'b00, code[0]};",
        "m = {2'b11, code[0]};",
        'E2M1: the unused upper mantissa bits',
        {
            'equivalent': 'the E2M1 branch reads m[0] only (m[2:1] are never read), so their value cannot matter',
        },
    ),
]))


# ---- mx_dot ------------------------------------------------------------------------------------

DOT = Model("dot", "tb_dot", ("tb_dot.v", "mx_dot.v"), (
    ("dot", "mxfp8_e4m3-aligned-f8-w14-truncate-saturate", {"FMT": 0, "K": 32, "F": 8, "W": 14}),
    ("dot", "mxfp8_e4m3-aligned-f13-w24-truncate-saturate", {"FMT": 0, "K": 32, "F": 13, "W": 24}),
    ("dot", "mxfp4_e2m1-aligned-f4-w10-truncate-saturate", {"FMT": 1, "K": 32, "F": 4, "W": 10}),
    ("dot", "mxfp8_e4m3-aligned-f8-w14-rne-wrap", {"FMT": 0, "K": 32, "F": 8, "W": 14, "SHIFT_RNE": 1, "WRAP": 1}),
    ("dot", "mxfp8_e4m3-aligned-f24-w32-truncate-saturate", {"FMT": 0, "K": 32, "F": 24, "W": 32}),
), _mutants("dot", "mx_dot.v", [
    (
        'anchor-min',
        'if (!have || e > amax) amax = e;',
        'if (!have || e < amax) amax = e;',
        'anchor: the smallest exponent instead of the largest',
    ),
    (
        'anchor-init',
        'if (!have || e > amax) amax = e;',
        'if (e > amax) amax = e;',
        'anchor: starts at 0, not at the first product (all-negative exponents)',
    ),
    (
        'anchor-zero-prod',
        "else if (elem_sig(ca) != 4'h0 && elem_sig(cb) != 4'h0) begin",
        "else if (elem_sig(ca) != 4'h0 || elem_sig(cb) != 4'h0) begin",
        'anchor: a product with one zero element counts',
    ),
    (
        'nan-neg-only',
        "elem_nan = (FMT == 0) && (c[6:0] == 7'h7F);",
        "elem_nan = (FMT == 0) && (c[7:0] == 8'hFF);",
        'E4M3 NaN: only the negative NaN code',
    ),
    (
        'e4m3-bias',
        "$signed({28'b0, c[6:3]}) - 7;",
        "$signed({28'b0, c[6:3]}) - 6;",
        'E4M3 exponent bias off by one',
    ),
    (
        'e4m3-sub-exp',
        "elem_exp = (c[6:3] == 4'h0) ? -6 :",
        "elem_exp = (c[6:3] == 4'h0) ? -7 :",
        'E4M3 subnormal exponent off by one',
    ),
    (
        'e2m1-sub-exp',
        "elem_exp = (c[2:1] == 2'h0) ?  0 :",
        "elem_exp = (c[2:1] == 2'h0) ? -1 :",
        'E2M1 subnormal exponent off by one',
    ),
    (
        'hidden-bit',
        "if (FMT == 0) elem_sig = {(c[6:3] != 4'h0), c[2:0]};",
        "if (FMT == 0) elem_sig = {1'b1, c[2:0]};",
        'E4M3 hidden bit set for subnormals',
    ),
    (
        'sign-or',
        'if (elem_sign(ca) ^ elem_sign(cb))',
        'if (elem_sign(ca) | elem_sign(cb))',
        'product sign: | for ^',
    ),
    (
        'place-shift',
        'sh   = e - FF - amax + F;',
        'sh   = e - FF - amax + F + 1;',
        'product placed one bit too high',
    ),
    (
        'trunc-shift',
        "q      = {{(QW-PW){1'b0}}, prod >> r};",
        "q      = {{(QW-PW){1'b0}}, prod >> (r - 1)};",
        'truncating right shift one place short',
    ),
    (
        'sat-ge',
        'else if (sum > maxv)',
        'else if (sum >= maxv)',
        'saturation test >= for >',
        {
            'equivalent': 'when sum == maxv the mutant assigns sum = maxv, which it already is',
        },
    ),
    (
        'sat-bound',
        "maxv = {{(SW-W+1){1'b0}}, {(W-1){1'b1}}};",
        "maxv = {{(SW-W+2){1'b0}}, {(W-2){1'b1}}};",
        'saturation bound one bit short',
    ),
    (
        'sat-symmetric',
        'minv = -maxv - 1;',
        'minv = -maxv;',
        'negative saturation at -(2^(W-1) - 1)',
    ),
    (
        'out-tie-away',
        'rs     = half && (sticky || tmp[0]);',
        'rs     = half;',
        'fp32 output rounding: ties away instead of to even',
    ),
    (
        'out-no-sticky',
        'rs     = half && (sticky || tmp[0]);',
        'rs     = half && tmp[0];',
        'fp32 output rounding: sticky bit dropped',
    ),
    (
        'out-sub-clamp',
        'if (u < -149) u = -149;',
        'if (u < -148) u = -148;',
        'fp32 output: subnormal ulp off by one',
    ),
    (
        'out-carry',
        'sig = sig >> 1;\n            u   = u + 1;',
        'u   = u + 1;',
        'fp32 output: rounding carry shifts the exponent, not the significand',
    ),
    (
        'out-ovf',
        'else if (sig[23] && biased >= 255)',
        'else if (sig[23] && biased > 255)',
        'fp32 output overflow test > for >=',
    ),
    (
        'out-zero-sign',
        "else if (mag == {W{1'b0}})\n            result = 32'h0000_0000;",
        "else if (mag == {W{1'b0}})\n            result = {sgn, 31'h0};",
        "exact zero takes the register's sign bit",
        {
            'equivalent': 'mag == 0 only when acc == 0 (|-2^(W-1)| = 2^(W-1) != 0 in W unsigned bits), and then sgn '
                          '= acc[W-1] = 0',
        },
    ),
    (
        'b-scale-nan',
        "if (a_scale == 8'hFF || b_scale == 8'hFF || any_nan)",
        "if (a_scale == 8'hFF || any_nan)",
        'NaN scale of B ignored',
    ),
    (
        'scale-bias',
        'xe  = amax - F + sa + sb - 254;',
        'xe  = amax - F + sa + sb - 253;',
        'scale bias off by one',
    ),
    (
        'mag-sign',
        'mag = sgn ? -acc : acc;',
        'mag = acc;',
        'fp32 output: magnitude of a negative register not negated',
    ),
    (
        'rne-shift-tie',
        'if (RNE && half && (sticky || q[0]))',
        'if (RNE && half)',
        'shift rounding rne: ties away',
    ),
    (
        'wrap-sign',
        'sum = {{(SW-W){sum[W-1]}}, sum[W-1:0]};',
        "sum = {{(SW-W){1'b0}}, sum[W-1:0]};",
        'wrap: sign not extended',
        {
            'equivalent': 'the zero-extended sum differs from the sign-extended one by a multiple of 2^W, the SW-bit '
                          'adder works modulo 2^SW (a multiple of 2^W), and only acc = sum[W-1:0] is read after the '
                          'loop: every later sum and acc are the same modulo 2^W, so acc is unchanged',
        },
    ),
]))


# ---- mx_fused_dot ------------------------------------------------------------------------------

FUSED = Model("fused", "tb_fused_dot", ("tb_fused_dot.v", "mx_fused_dot.v"), (
    ("dot", "mxfp8_e4m3-mxdotp_fp8-steps", {"RM": 0}),
    ("dot", "mxfp8_e4m3-mxdotp_fp8-output_rounding=rtz-steps", {"RM": 1}),
    ("dot", "mxfp8_e4m3-mxdotp_fp8-output_rounding=rdn-steps-no_pairs", {"RM": 2}),
    ("dot", "mxfp8_e4m3-mxdotp_fp8-output_rounding=rup-steps-no_pairs", {"RM": 3}),
    ("dot", "mxfp8_e4m3-mxdotp_fp8-output_rounding=rna-steps-no_pairs", {"RM": 4}),
), _mutants("fused", "mx_fused_dot.v", [
    (
        'bypass-ge',
        'else if (BYP != 0 && lc - g > BYPASS)',
        'else if (BYP != 0 && lc - g >= BYPASS)',
        'bypass threshold >= for >',
    ),
    (
        'c-lsb',
        'lc     = ec - 23;',
        'lc     = ec - 24;',
        "C's LSB exponent off by one",
    ),
    (
        'c-zero-exp',
        'ec     = c_zero ? CZERO :',
        'ec     = c_zero ? -126 :',
        'a zero C counts with exponent -126',
    ),
    (
        'c-sub-exp',
        "(c[30:23] == 8'h00) ? -126 :",
        "(c[30:23] == 8'h00) ? -127 :",
        'subnormal C exponent off by one',
    ),
    (
        'c-hidden',
        "mc     = {(c[30:23] != 8'h00), c[22:0]};",
        "mc     = {1'b1, c[22:0]};",
        'subnormal C gets a hidden bit',
    ),
    (
        'e4m3-sub-exp',
        "elem_exp = (x[6:3] == 4'h0) ? -6 :",
        "elem_exp = (x[6:3] == 4'h0) ? -7 :",
        'E4M3 subnormal exponent off by one',
    ),
    (
        'nan-pos-only',
        "elem_nan = (x[6:0] == 7'h7F);",
        "elem_nan = (x[7:0] == 8'h7F);",
        'E4M3 NaN: only the positive NaN code',
    ),
    (
        'prod-sign',
        's    = (ca[7] ^ cb[7]) ? s - q : s + q;',
        's    = (ca[7] | cb[7]) ? s - q : s + q;',
        'product sign: | for ^',
    ),
    (
        'b-scale-nan',
        "any_nan = (a_scale == 8'hFF) || (b_scale == 8'hFF);",
        "any_nan = (a_scale == 8'hFF);",
        'NaN scale of B ignored',
    ),
    (
        'neg-c-sticky',
        "cs = c[31] ? -$signed(cu + {{(TW-1){1'b0}}, csticky}) : $signed(cu);",
        'cs = c[31] ? -$signed(cu) : $signed(cu);',
        'negative C below the window: truncated toward zero, not floored',
    ),
    (
        'pos-sticky',
        'mag = t;\n                st  = csticky;',
        "mag = t;\n                st  = 1'b0;",
        'sticky bit of C below the window dropped (positive sum)',
    ),
    (
        'neg-sticky-mag',
        "mag  = csticky ? smag - 1'b1 : smag;",
        'mag  = smag;',
        "negative sum: the floored C's unit not given back",
    ),
    (
        'rne-tie-away',
        '0:       inc = rb & (st | sig[0]);',
        '0:       inc = rb;',
        'RNE: ties away',
    ),
    (
        'rne-no-sticky',
        '0:       inc = rb & (st | sig[0]);',
        '0:       inc = rb & sig[0];',
        'RNE: sticky bit dropped',
    ),
    (
        'rtz-rounds',
        "1:       inc = 1'b0;",
        '1:       inc = rb & st;',
        'RTZ rounds up above half',
    ),
    (
        'rdn-sign',
        '2:       inc = sgn & (rb | st);',
        '2:       inc = ~sgn & (rb | st);',
        'RDN: inverted sign',
    ),
    (
        'rup-round-only',
        '3:       inc = ~sgn & (rb | st);',
        '3:       inc = ~sgn & rb;',
        'RUP: sticky bit dropped',
    ),
    (
        'rna-even',
        'default: inc = rb;',
        'default: inc = rb & (st | sig[0]);',
        'RNA: ties to even',
    ),
    (
        'ovf-rtz-inf',
        'if (RM == 1 || (RM == 2 && !sgn) || (RM == 3 && sgn))',
        'if ((RM == 2 && !sgn) || (RM == 3 && sgn))',
        'overflow under RTZ gives Inf, not max',
    ),
    (
        'sub-clamp',
        'if (u < -149) u = -149;',
        'if (u < -148) u = -148;',
        'subnormal ulp off by one',
    ),
    (
        'ovf-gt',
        'if (sig[23] && biased >= 255) begin',
        'if (sig[23] && biased > 255) begin',
        'overflow test > for >=',
    ),
    (
        'carry',
        'sig = sig >> 1;\n                u   = u + 1;',
        'u   = u + 1;',
        'rounding carry shifts the exponent, not the significand',
    ),
    (
        'zero-sum-negzero',
        "d = (c_zero && !(PASS_C != 0 && (PASS_BELOW < 0 || lc - g < -PASS_BELOW)))",
        "d = (c_zero)",
        'zero products with C = -0 give +0 where PASS_C passes C (-0) through',
    ),
    (
        'inf-c-nan',
        'else if (c_inf)\n            d = c;',
        'else if (c_inf)\n            d = NAN_BITS;',
        'an Inf C gives NaN',
    ),
    (
        'lzc-short',
        'for (j = 1 << ($clog2(TW) - 1); j >= 1; j = j / 2)',
        'for (j = 1 << ($clog2(TW) - 1); j > 1; j = j / 2)',
        'leading-one search skips its last step',
    ),
    (
        'c-exact-shift',
        'if (shc >= 0)\n                cu = ',
        'if (shc > 0)\n                cu = ',
        'C placement: > for >=',
        {
            'equivalent': 'at shc == 0 the other branch computes cu = mc >> 0 = mc (the same) and csticky = mc & '
                          '~(ones << 0) = 0 (its default)',
        },
    ),
    (
        'exact-zero-sign',
        "if (mag == {TW{1'b0}} && !st)\n                d = 32'h0000_0000;",
        "if (mag == {TW{1'b0}} && !st)\n                d = {sgn, 31'h0};",
        'an exactly zero sum takes the sign of t',
        {
            'equivalent': 'sgn = 1 means t < 0, so smag = -t >= 1, and mag = smag - csticky is 0 only with csticky = '
                          '1, i.e. st = 1: the branch needs sgn = 0',
        },
    ),
]))


# ---- mx_dequant --------------------------------------------------------------------------------

_IDMA = {"FMT": 1, "SCALE_INT8": 1, "SATURATE": 1, "FTZ": 1, "NAN_CANON": 1}

DEQUANT = Model("dequant", "tb_dequant", ("tb_dequant.v", "mx_dequant.v"), (
    ("dequantize", "mxfp8_e4m3-fp32", {"FMT": 0}),
    ("dequantize", "mxfp8_e5m2-fp32", {"FMT": 1}),
    ("dequantize", "mxfp8_e5m2-fp32-dequant_ftz=True-dequant_nan=canonical-dequant_overflow=saturate-"
                   "scale_encoding=int8_exponent", _IDMA),
    # the outputs that round: nearest even into the subnormal bands of bf16 and fp16 (iDMA's FP16 output)
    ("dequantize", "mxfp8_e4m3-bf16", {"FMT": 0, "OUT": 2}),
    ("dequantize", "mxfp8_e5m2-fp16-dequant_nan=canonical-scale_encoding=int8_exponent",
     {"FMT": 1, "OUT": 1, "SCALE_INT8": 1, "NAN_CANON": 1}),
), _mutants("dequant", "mx_dequant.v", [
    (
        'e4m3-nan-pos',
        "is_nan  = code[6:0] == 7'h7F;",
        "is_nan  = code[7:0] == 8'h7F;",
        'E4M3 NaN: only the positive code',
    ),
    (
        'e5m2-nan-mant',
        "is_nan  = field == 5'h1F && code[1:0] != 2'b00;",
        "is_nan  = field == 5'h1F && code[1:0] == 2'b11;",
        'E5M2 NaN: only mantissa 11',
    ),
    (
        'e5m2-inf-field',
        "is_inf  = field == 5'h1F && code[1:0] == 2'b00;",
        "is_inf  = field == 5'h1F;",
        'E5M2 Inf test ignores the mantissa',
        {
            'equivalent': "is_inf is read only after is_nan (dequant's if chain: snan, is_nan, is_inf), and the "
                          'codes it adds (field 0x1F, mantissa != 0) are exactly the NaN codes',
        },
    ),
    (
        'e4m3-bias',
        "e = $signed({5'b0, field}) - 10'sd7;",
        "e = $signed({5'b0, field}) - 10'sd8;",
        'E4M3 bias off by one',
    ),
    (
        'e4m3-sub-top',
        "e = -10'sd7;  frac = {code[1:0], 1'b0};",
        "e = -10'sd6;  frac = {code[1:0], 1'b0};",
        'E4M3 subnormal 4..7: exponent off by one',
    ),
    (
        'e4m3-sub-mid',
        "e = -10'sd8;  frac = {code[0], 2'b00};",
        "e = -10'sd9;  frac = {code[0], 2'b00};",
        'E4M3 subnormal 2..3: exponent off by one',
    ),
    (
        'e4m3-sub-test',
        'end else if (code[2]) begin',
        'end else if (code[1]) begin',
        'E4M3 subnormal normalisation tests the wrong bit',
    ),
    (
        'e5m2-bias',
        "e = $signed({5'b0, field}) - 10'sd15;",
        "e = $signed({5'b0, field}) - 10'sd16;",
        'E5M2 bias off by one',
    ),
    (
        'e5m2-sub-top',
        "e = -10'sd15;  frac = {code[0], 2'b00};",
        "e = -10'sd14;  frac = {code[0], 2'b00};",
        'E5M2 subnormal 2..3: exponent off by one',
    ),
    (
        'e5m2-sub-test',
        'end else if (code[1]) begin               // subnormal m * 2^-16',
        'end else if (code[0]) begin               // subnormal m * 2^-16',
        'E5M2 subnormal normalisation tests the wrong bit',
    ),
    (
        'out-bias',
        "biased = $signed({e[9], e}) + $signed({xs[9], xs}) + OB;",
        "biased = $signed({e[9], e}) + $signed({xs[9], xs}) + OB - 1;",
        'output bias off by one',
    ),
    (
        'ovf-gt',
        "else if (biased >= (1 << OE) - 1)",
        "else if (biased > (1 << OE) - 1)",
        'overflow test > for >=',
    ),
    (
        'normal-bound',
        "else if (biased >= 11'sd1)",
        "else if (biased >= 11'sd0)",
        'biased exponent 0 taken as normal',
    ),
    (
        'sub-no-hidden',
        "sig    = {1'b1, frac, {(OM - 3){1'b0}}};",
        "sig    = {1'b0, frac, {(OM - 3){1'b0}}};",
        'the hidden bit dropped (read only by the subnormal path: a normal result takes sig[OM-1:0])',
    ),
    (
        'sub-shift',
        "sh     = biased < -OM - 1 ? OM + 2 : 11'sd1 - biased;",
        "sh     = biased < -OM - 1 ? OM + 2 : 11'sd2 - biased;",
        'subnormal result: denormalizing shift one too far',
    ),
    (
        'shift-clamp-lt',
        "sh     = biased < -OM - 1 ? OM + 2 : 11'sd1 - biased;",
        "sh     = biased <= -OM - 1 ? OM + 2 : 11'sd1 - biased;",
        'the shift clamp <= for <',
        {
            'equivalent': 'at biased = -OM - 1 both arms give sh = OM + 2 (1 - biased = OM + 2): the same value',
        },
    ),
    (
        'shift-clamp-early',
        "sh     = biased < -OM - 1 ? OM + 2 : 11'sd1 - biased;",
        "sh     = biased < -OM + 1 ? OM + 2 : 11'sd1 - biased;",
        'the shift clamp one exponent early (values in (u/2, u) lose their guard bit: rounded to 0)',
    ),
    (
        'guard-pos',
        "guard  = (sig >> (sh - 1)) & 1'b1;",
        "guard  = (sig >> sh) & 1'b1;",
        'guard bit read one position too high',
    ),
    (
        'sticky-drop',
        "sticky = (sig & ((1 << (sh - 1)) - 1)) != 0;",
        "sticky = 1'b0;",
        'sticky bit dropped (every tie case rounds to even)',
    ),
    (
        'sticky-no-bottom',
        "sticky = (sig & ((1 << (sh - 1)) - 1)) != 0;",
        "sticky = (sig & ((1 << (sh - 1)) - 2)) != 0;",
        'sticky OR misses bit 0 of the significand register',
        {
            'equivalent': "sig = {1'b1, frac, (OM - 3) zeros} and OM >= 7 for every output that takes this path "
                          '(fp32 never reaches it with a nonzero sticky: MXFP8 values are exact there), so sig[0] is '
                          'always 0: the mask bit it drops never meets a 1',
        },
    ),
    (
        'sticky-no-frac0',
        "sticky = (sig & ((1 << (sh - 1)) - 1)) != 0;",
        "sticky = ({sig[OM:OM-2], {(OM - 2){1'b0}}} & ((1 << (sh - 1)) - 1)) != 0;",
        "sticky OR misses the element's last fraction bit (the bottom sticky position of a 4-bit value)",
    ),
    (
        'sticky-no-top',
        "sticky = (sig & ((1 << (sh - 1)) - 1)) != 0;",
        "sticky = (sig & ((1 << (sh - 2)) - 1)) != 0;",
        'sticky OR misses the top sticky position (the bit below the guard)',
    ),
    (
        'tie-away',
        "rounded = kept + (guard && (sticky || kept[0]));",
        "rounded = kept + guard;",
        'ties away from zero instead of to even',
    ),
    (
        'tie-odd',
        "rounded = kept + (guard && (sticky || kept[0]));",
        "rounded = kept + (guard && (sticky || !kept[0]));",
        'ties to odd',
    ),
    (
        'round-and',
        "rounded = kept + (guard && (sticky || kept[0]));",
        "rounded = kept + (guard && sticky && kept[0]);",
        'round-up condition: && for || (only odd values above half round up)',
    ),
    (
        'carry-lost',
        "                dequant = {s, rounded};",
        "                dequant = {s, {OE{1'b0}}, rounded[OM-1:0]};",
        'the carry out of the largest subnormal lost (no step up to the smallest normal)',
        {
            'equivalent': 'a carry needs a value in ((2^OM - 1/2) u, 2^OM u), u the smallest subnormal; an MXFP8 '
                          'value there has its leading bit at 2^(OM-1) u and 4 significant bits, so it is a '
                          'multiple of 2^(OM-4) u >= 8u (OM >= 7 on the rounding outputs): none lies in that '
                          'interval, and fp32 outputs never round',
        },
    ),
    (
        'underflow-pos-zero',
        "                dequant = {s, rounded};",
        "                dequant = rounded == 0 ? {OW{1'b0}} : {s, rounded};",
        'a negative value that rounds to zero gives +0 (the sign of zero)',
    ),
    (
        'nan-sign',
        'dequant = DO_CANON ? QNAN : {s, QNAN[OW-2:0]};',
        "dequant = DO_CANON ? QNAN : {1'b0, QNAN[OW-2:0]};",
        'keep_sign NaN loses its sign',
    ),
    (
        'zero-sign',
        "else if (is_zero)\n                dequant = {s, {(OW - 1){1'b0}}};",
        "else if (is_zero)\n                dequant = {1'b0, {(OW - 1){1'b0}}};",
        '-0 element gives +0',
    ),
    (
        'ftz-sign',
        "// a subnormal word, flushed\n                dequant = {s, {(OW - 1){1'b0}}};",
        "// a subnormal word, flushed\n                dequant = {1'b0, {(OW - 1){1'b0}}};",
        'ftz: a negative flushes to +0',
    ),
    (
        'sat-sign',
        "dequant = DO_SAT ? {s, MAXFIN[OW-2:0]}",
        "dequant = DO_SAT ? {1'b0, MAXFIN[OW-2:0]}",
        'saturation loses the sign',
    ),
    (
        'inf-sign',
        "else if (is_inf)\n                dequant = {s, INF[OW-2:0]};",
        "else if (is_inf)\n                dequant = {1'b0, INF[OW-2:0]};",
        '-Inf element gives +Inf',
    ),
    (
        'scale-nan-7f',
        "scale_nan = !SCALE_INT8 && scale == 8'hFF;",
        "scale_nan = !SCALE_INT8 && scale[6:0] == 7'h7F;",
        'NaN scale test ignores the top bit',
    ),
    (
        'int8-zero-ext',
        '{{2{scale[7]}}, scale}',
        "{2'b00, scale}",
        'int8 scale exponent not sign-extended',
    ),
    (
        'e8m0-bias',
        "$signed({2'b00, scale}) - 10'sd127;",
        "$signed({2'b00, scale}) - 10'sd128;",
        'E8M0 scale bias off by one',
    ),
]))


# ---- mx_elem_encode ----------------------------------------------------------------------------

_ENC = "mx_elem_encode.v"
ENCODE = Model("encode", "tb_encode", ("tb_encode.v", _ENC), (
    ("encode", "fp8_e4m3-rne-saturate", {"EB": 4, "MB": 3, "SPECIALS": 1, "RM": 0, "OVF_IEEE": 0}),
    ("encode", "fp8_e4m3-rtz-saturate", {"EB": 4, "MB": 3, "SPECIALS": 1, "RM": 1, "OVF_IEEE": 0}),
    ("encode", "fp8_e4m3-rdn-saturate", {"EB": 4, "MB": 3, "SPECIALS": 1, "RM": 2, "OVF_IEEE": 0}),
    ("encode", "fp8_e4m3-rup-saturate", {"EB": 4, "MB": 3, "SPECIALS": 1, "RM": 3, "OVF_IEEE": 0}),
    ("encode", "fp8_e5m2-rne-ieee", {"EB": 5, "MB": 2, "SPECIALS": 0, "RM": 0, "OVF_IEEE": 1}),
    ("encode", "fp8_e5m2-rtz-ieee", {"EB": 5, "MB": 2, "SPECIALS": 0, "RM": 1, "OVF_IEEE": 1}),
    ("encode", "fp8_e5m2-rup-ieee", {"EB": 5, "MB": 2, "SPECIALS": 0, "RM": 3, "OVF_IEEE": 1}),
    ("encode", "fp8_e5m2-rne-saturate", {"EB": 5, "MB": 2, "SPECIALS": 0, "RM": 0, "OVF_IEEE": 0}),
    ("encode", "fp6_e2m3-rne-saturate", {"EB": 2, "MB": 3, "SPECIALS": 2, "RM": 0, "OVF_IEEE": 0}),
    ("encode", "fp6_e3m2-rne-saturate", {"EB": 3, "MB": 2, "SPECIALS": 2, "RM": 0, "OVF_IEEE": 0}),
    ("encode", "fp4_e2m1-rne-saturate", {"EB": 2, "MB": 1, "SPECIALS": 2, "RM": 0, "OVF_IEEE": 0}),
    ("encode", "fp4_e2m1-rna-saturate", {"EB": 2, "MB": 1, "SPECIALS": 2, "RM": 4, "OVF_IEEE": 0}),
), _mutants("encode", _ENC, [
    (
        'rne-tie-away',
        '0:       inc = rb && (st || q[0]);',
        '0:       inc = rb;',
        'RNE: ties away',
    ),
    (
        'rne-no-sticky',
        '0:       inc = rb && (st || q[0]);',
        '0:       inc = rb && q[0];',
        'RNE: sticky bit dropped',
    ),
    (
        'rne-tie-down',
        '0:       inc = rb && (st || q[0]);',
        '0:       inc = rb && st;',
        'RNE: ties toward zero',
    ),
    (
        'rtz-rounds',
        "1:       inc = 1'b0;",
        '1:       inc = rb && st;',
        'RTZ rounds up above half',
    ),
    (
        'rna-even',
        'default: inc = rb;',
        'default: inc = rb && (st || q[0]);',
        'RNA: ties to even',
    ),
    (
        'rdn-sign',
        '2:       inc = s && (rb || st);',
        '2:       inc = !s && (rb || st);',
        'RDN: inverted sign',
    ),
    (
        'rup-no-sticky',
        '3:       inc = !s && (rb || st);',
        '3:       inc = !s && rb;',
        'RUP: sticky bit dropped',
    ),
    (
        'far-sticky',
        "st = (sig != 24'h0);",
        "st = 1'b0;",
        'sticky of a value far below the grid dropped',
    ),
    (
        'sticky-has-round',
        "st = (sig & ~({24{1'b1}} << (r - 1))) != 24'h0;",
        "st = (sig & ~({24{1'b1}} << r)) != 24'h0;",
        'sticky bit includes the round bit',
    ),
    (
        'far-bound',
        'else if (r > 24) begin',
        'else if (r >= 24) begin',
        'round bit lost at exactly 24 bits below the grid',
    ),
    (
        'binade-le',
        'e    = (lead < EMIN) ? EMIN : lead;',
        'e    = (lead <= EMIN) ? EMIN : lead;',
        'subnormal clamp <= for <',
        {
            'equivalent': 'at lead == EMIN both give e = EMIN',
        },
    ),
    (
        'binade-off',
        'e    = (lead < EMIN) ? EMIN : lead;',
        'e    = (lead < EMIN - 1) ? EMIN - 1 : lead;',
        'subnormal grid one binade too low',
    ),
    (
        'grid-off',
        'r    = e - MB - ex + 23;',
        'r    = e - MB - ex + 22;',
        'grid one bit too fine',
    ),
    (
        'no-carry',
        'if (q[MB + 1]) begin',
        'if (q[MB + 2]) begin',
        'rounding carry into the next binade ignored',
    ),
    (
        'ovf-mant-ge',
        '(e == EMAX && q[MB-1:0] > TOPM)',
        '(e == EMAX && q[MB-1:0] >= TOPM)',
        'overflow test >= for >: max itself overflows',
    ),
    (
        'ovf-no-mant',
        '(e > EMAX || (e == EMAX && q[MB-1:0] > TOPM))',
        '(e > EMAX)',
        "overflow test ignores the top binade's mantissa",
    ),
    (
        'tz-sign',
        'toward_zero = (RM == 1) || (RM == 2 && !s) || (RM == 3 && s);',
        'toward_zero = (RM == 1) || (RM == 2 && s) || (RM == 3 && !s);',
        'ieee overflow: toward-zero test with inverted sign',
    ),
    (
        'tz-no-rtz',
        'toward_zero = (RM == 1) || (RM == 2 && !s) || (RM == 3 && s);',
        'toward_zero = (RM == 2 && !s) || (RM == 3 && s);',
        'ieee overflow under RTZ gives Inf',
    ),
    (
        'inf-in-tz',
        'if (OVF_IEEE && (inf || !toward_zero) && SPECIALS == 0)',
        'if (OVF_IEEE && !toward_zero && SPECIALS == 0)',
        'ieee: an Inf input saturates where the rounding goes toward zero',
    ),
    (
        'nan-sign',
        'code = {s, (SPECIALS == 2) ? MAXMAG : NANMAG};',
        "code = {1'b0, (SPECIALS == 2) ? MAXMAG : NANMAG};",
        'NaN input loses its sign',
    ),
    (
        'zero-sign',
        "code = {s, {(EB+MB){1'b0}}};",
        "code = {1'b0, {(EB+MB){1'b0}}};",
        '-0 and negative underflow give +0',
    ),
    (
        'sub-pack',
        "code = {s, {EB{1'b0}}, q[MB-1:0]};",
        "code = {s, {EB{1'b0}}, q[MB:1]};",
        'subnormal code: mantissa bits off by one',
    ),
    (
        'normal-bias',
        'code = {s, e[EB-1:0] + BIAS[EB-1:0], q[MB-1:0]};',
        "code = {s, e[EB-1:0] + BIAS[EB-1:0] - 1'b1, q[MB-1:0]};",
        'exponent field: bias off by one',
    ),
    (
        'inf-is-nan',
        "nan = (x[30:23] == 8'hFF) && (x[22:0] != 23'h0);",
        "nan = (x[30:23] == 8'hFF);",
        'an Inf input taken as NaN',
    ),
    (
        'lzc-short',
        'for (j = 0; j < 24; j = j + 1)',
        'for (j = 0; j < 23; j = j + 1)',
        'leading-one search misses the hidden bit',
    ),
    (
        'zero-test',
        "else if (x[30:0] == 31'h0 || q == 25'h0)",
        "else if (q == 25'h0)",
        'zero input handled by the rounding path',
        {
            'equivalent': 'a zero x has sig = 0, so q = 0 and rb = st = 0 on every path, hence inc = 0 under every '
                          'RM and q stays 0',
        },
    ),
    (
        'xshift-sign',
        '- xshift;',
        '+ xshift;',
        'scale exponent added instead of subtracted',
        {
            'equivalent': 'tb_encode ties xshift to 0 (the encoder alone); the quantizer model runs this mutant with '
                          'xshift != 0',
        },
    ),
]))


# ---- mx_block_quant (with the mx_elem_encode it instantiates) ---------------------------------

_QUANT = "mx_block_quant.v"

QUANT = Model("quant", "tb_quant", ("tb_quant.v", _QUANT, _ENC), (
    ("quantize", "mxfp8_e4m3", {"EB": 4, "MB": 3, "SPECIALS": 1, "K": 32}),
    ("quantize", "mxfp8_e5m2", {"EB": 5, "MB": 2, "SPECIALS": 0, "K": 32}),
    ("quantize", "mxfp6_e2m3", {"EB": 2, "MB": 3, "SPECIALS": 2, "K": 32}),
    ("quantize", "mxfp6_e3m2", {"EB": 3, "MB": 2, "SPECIALS": 2, "K": 32}),
    ("quantize", "mxfp4_e2m1", {"EB": 2, "MB": 1, "SPECIALS": 2, "K": 32}),
), _mutants("quant", _QUANT, [
    (
        'inf-not-nan',
        "if (x[32*i + 23 +: 8] == 8'hFF)",
        "if (x[32*i + 23 +: 8] == 8'hFF && x[32*i +: 23] != 23'h0)",
        'an Inf does not make a NaN block',
    ),
    (
        'amax-ge',
        'else if (x[32*i +: 31] > amax)',
        'else if (x[32*i +: 31] >= amax)',
        'amax test >= for >',
        {
            'equivalent': 'when x[32i +: 31] == amax the mutant assigns amax the value it has',
        },
    ),
    (
        'amax-positive',
        'else if (x[32*i +: 31] > amax)',
        'else if (!x[32*i + 31] && x[32*i +: 31] > amax)',
        'amax over the positive inputs only',
    ),
    (
        'log2-bias',
        "lead = $signed({24'b0, amax[30:23]}) - 127;",
        "lead = $signed({24'b0, amax[30:23]}) - 126;",
        'floor(log2 amax): bias off by one',
    ),
    (
        'log2-sub',
        'if (amax[j]) lead = j - 149;',
        'if (amax[j]) lead = j - 150;',
        'floor(log2) of a subnormal amax off by one',
        {
            'equivalent': 'a subnormal amax is below 2^-126, so lead <= -127 and e = lead - EMAX_ELEM <= -129: the '
                          'lower clamp sets e = -127 whatever lead is',
        },
    ),
    (
        'log2-sub-lzc',
        'for (j = 0; j < 23; j = j + 1)',
        'for (j = 0; j < 22; j = j + 1)',
        'subnormal amax: leading-one search misses bit 22',
        {
            'equivalent': 'a subnormal amax is below 2^-126, so lead <= -127 and e = lead - EMAX_ELEM <= -129: the '
                          'lower clamp sets e = -127 whatever lead is',
        },
    ),
    (
        'nan-exp-bits',
        "if (x[32*i + 23 +: 8] == 8'hFF)",
        "if (x[32*i + 24 +: 7] == 7'h7F)",
        'NaN test ignores the exponent LSB (2^127 makes a NaN block)',
    ),
    (
        'clamp-low',
        "if (amax == 31'h0 || e < -127) e = -127;",
        "if (amax == 31'h0 || e < -128) e = -127;",
        'lower clamp of E at -128, not -127',
    ),
    (
        'zero-block',
        "if (amax == 31'h0 || e < -127) e = -127;",
        'if (e < -127) e = -127;',
        'all-zero block not special-cased',
        {
            'equivalent': 'amax == 0 leaves lead = -150, so e = -150 - EMAX_ELEM < -127 and the clamp gives -127 '
                          'anyway',
        },
    ),
    (
        'clamp-high',
        'else if (e > 127)              e = 127;',
        'else if (e > 127)              e = 126;',
        'upper clamp of E off by one',
        {
            'equivalent': 'lead <= 127 (the largest fp32 exponent) and EMAX_ELEM >= 2, so e <= 125: the upper clamp '
                          'never acts',
        },
    ),
    (
        'scale-bias',
        "scale     = e[7:0] + 8'd127;",
        "scale     = e[7:0] + 8'd128;",
        'E8M0 scale bias off by one',
    ),
    (
        'nan-scale-exp',
        "scale_exp = -16'sd128;",
        "scale_exp = 16'sd128;",
        'NaN block: scale_exp 0xFF - 127 instead of -128',
    ),
    (
        'scale-exp-zext',
        'scale_exp = e[15:0];',
        "scale_exp = {8'h00, e[7:0]};",
        'scale_exp not sign-extended',
    ),
    (
        'nan-elems',
        'assign codes[EW*g +: EW] = nan_block ? NAN_BLOCK_CODE : code;',
        'assign codes[EW*g +: EW] = code;',
        'NaN block: elements encoded, not set to the NaN code',
    ),
    (
        'nan-code-inf',
        '(SPECIALS == 0) ? ((((1 << EB) - 1) << MB) | (1 << (MB - 1))) :',
        '(SPECIALS == 0) ? (((1 << EB) - 1) << MB) :',
        'E5M2 NaN block elements get the Inf code',
    ),
    (
        'emax-ieee',
        'localparam TOPF      = (SPECIALS == 0) ? (1 << EB) - 2 : (1 << EB) - 1;',
        'localparam TOPF      = (SPECIALS == 0) ? (1 << EB) - 1 : (1 << EB) - 1;',
        'E5M2 emax_elem counts the Inf binade',
    ),
    (
        'emax-off',
        'localparam EMAX_ELEM = TOPF - BIAS;',
        'localparam EMAX_ELEM = TOPF - BIAS - 1;',
        'emax_elem off by one',
    ),
    (
        'enc-xshift-sign',
        '- xshift;',
        '+ xshift;',
        'element: scale exponent added instead of subtracted',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-sub-exp',
        "((x[30:23] == 8'h00) ? -126 :",
        "((x[30:23] == 8'h00) ? -127 :",
        'element: fp32 subnormal exponent off by one',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-sub-hidden',
        "sig = {(x[30:23] != 8'h00), x[22:0]};",
        "sig = {1'b1, x[22:0]};",
        'element: fp32 subnormal gets a hidden bit',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-tie-away',
        '0:       inc = rb && (st || q[0]);',
        '0:       inc = rb;',
        'element RNE: ties away',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-no-sticky',
        '0:       inc = rb && (st || q[0]);',
        '0:       inc = rb && q[0];',
        'element RNE: sticky bit dropped',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-sat-inf',
        'else if (OVF_IEEE && (inf || !toward_zero) && SPECIALS == 1)',
        'else if ((inf || !toward_zero) && SPECIALS == 1)',
        'element overflow: E4M3 gives NaN, not max',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-zero-sign',
        "code = {s, {(EB+MB){1'b0}}};",
        "code = {1'b0, {(EB+MB){1'b0}}};",
        'element: negative underflow gives +0',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-no-carry',
        'if (q[MB + 1]) begin',
        'if (q[MB + 2]) begin',
        'element: rounding carry ignored',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
    (
        'enc-far-bound',
        'else if (r > 24) begin',
        'else if (r >= 24) begin',
        'element: round bit lost at exactly 24 bits below the grid',
        {
            'file': 'mx_elem_encode.v',
        },
    ),
]))


MODELS = {m.name: m for m in (DECODE, DOT, FUSED, DEQUANT, ENCODE, QUANT)}
