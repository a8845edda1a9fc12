"""MkDocs hook: tables computed from mxsim at build time, never typed by hand.

A page asks for a table with an HTML comment, which this hook replaces before the markdown is
rendered (and which GitHub's markdown view simply hides):

* ``<!-- mxsim:spec-table NAME [NAME ...] -->``: the parameters and derived numbers of element or
  scale formats, one column per format, from ``get_format(NAME).describe()`` and the format's
  properties (max/min codes, NaN and Inf codes).
* ``<!-- mxsim:value-table NAME -->``: every code of a format of at most 8 bits, decoded by the
  integer-only reference ``mxsim.ref.decode``: code (hex, binary), its fields, the exact value,
  and its class. Formats of 7 or 8 bits show all codes as a compact grid, and list them one per
  row in a collapsed block (signed 8-bit floats: the codes with the sign bit clear). NAME may also be a constructor expression such as
  ``FloatFormat("fp5_e2m2", 2, 2, 1, specials="none")`` (custom formats; evaluated with only
  ``FloatFormat``, ``IntFormat`` and ``BlockFormat`` in scope).
* ``<!-- mxsim:value-grid NAME -->``: the compact grid alone.
* ``<!-- mxsim:block-table NAME [NAME ...] -->``: block formats, from ``BlockFormat.describe()``.
* ``<!-- mxsim:options encode|quantize|dequantize|layout|accumulator -->``: every option with its default, its
  allowed values, its contract section and its meaning, read from its definition in
  :mod:`mxsim.options` (the one place each option lives).
* ``<!-- mxsim:comparison LIBRARY -->``: the rows of ``comparison_examples.py`` for one library
  (the same examples ``tests/docs/test_docs_site.py`` runs).
* ``<!-- mxsim:cli-reference -->``: every command's ``--help``, from the argument parser
  (``cli_reference.py``).
* ``<!-- mxsim:profile NAME -->``: a profile of :mod:`mxsim.options.profiles`: its source and
  version, the options it sets (against their defaults and definitions), its per-output
  dequantization, and the inputs it leaves out.
* ``<!-- mxsim:profile-examples NAME -->``: the profile's worked blocks from
  ``profile_examples.py``, computed now; the build fails if an output differs from the one recorded
  there.
* ``<!-- mxsim:profiles -->``: every profile, one row each.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
from fractions import Fraction

import cli_reference
import comparison_examples
import profile_examples

import mxsim
from mxsim import ref
from mxsim.options import OPTION_CLASSES, PRESETS, Accumulator, DequantizeOptions, EncodeOptions, QuantizeOptions
from mxsim.options.profiles import PROFILES, get_profile
from mxsim.options.spec import Choice, Flag, IntRange, option_named, options_of
from mxsim.formats import BlockFormat, FloatFormat, IntFormat

PLACEHOLDER = re.compile(r"<!--\s*mxsim:([a-z-]+)\s*(.*?)\s*-->", re.DOTALL)


def on_page_markdown(markdown: str, page=None, config=None, files=None, **kwargs) -> str:
    """MkDocs event: expand every placeholder of the page."""
    return expand(markdown)


def expand(markdown: str) -> str:
    return PLACEHOLDER.sub(lambda m: RENDERERS[m.group(1)](m.group(2)), markdown)


# --------------------------------------------------------------------------------------------------
# Formats and numbers


def resolve(spec: str):
    """A catalogue name, or a FloatFormat/IntFormat/BlockFormat constructor expression."""
    spec = spec.strip()
    if "(" in spec:
        scope = {"__builtins__": {}, "FloatFormat": FloatFormat, "IntFormat": IntFormat, "BlockFormat": BlockFormat}
        return eval(spec, scope)
    return mxsim.get_format(spec)


def split_specs(args: str) -> list[str]:
    """Split on whitespace outside parentheses, so constructor expressions stay whole."""
    specs, depth, current = [], 0, ""
    for ch in args:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch.isspace() and depth == 0:
            if current:
                specs.append(current)
            current = ""
        else:
            current += ch
    return specs + ([current] if current else [])


def exact_decimal(x: Fraction, max_digits: int = 12) -> str | None:
    """The exact decimal expansion of x, or None if it has none (a denominator other than 2^a 5^b)
    or needs more than max_digits significant digits."""
    x = Fraction(x)
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    x = abs(x)
    den, twos, fives = x.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return None
    k = max(twos, fives)
    digits = str(x.numerator * 10**k // x.denominator)  # x = digits / 10^k exactly
    if len(digits.strip("0")) > max_digits:
        return None
    if k == 0:
        return sign + digits
    digits = digits.rjust(k + 1, "0")
    return f"{sign}{digits[:-k]}.{digits[-k:].rstrip('0')}"


def is_dyadic(x: Fraction) -> bool:
    d = Fraction(x).denominator
    return d & (d - 1) == 0


def pow2_form(x: Fraction) -> str:
    """A dyadic rational as an odd integer times a power of two, e.g. 7 × 2^6 or -2^-9."""
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    num, den = abs(x).numerator, abs(x).denominator
    exp = -(den.bit_length() - 1)
    while num % 2 == 0:
        num //= 2
        exp += 1
    if exp == 0:
        return f"{sign}{num}"
    return f"{sign}2^{exp}" if num == 1 else f"{sign}{num} × 2^{exp}"


def show(x: Fraction | None) -> str:
    """A signed number for a table: the exact decimal when short (with its power-of-two form when
    that is a plain power of two), else the exact power-of-two form and an approximation."""
    if x is None:
        return "none"
    x = Fraction(x)
    text = exact_decimal(x)
    if not is_dyadic(x):
        return text if text is not None else f"{x} ≈ {float(x):.6g}"
    if text is None:
        return f"{pow2_form(x)} ≈ {float(x):.6g}"
    if x.denominator > 1 and pow2_form(x).lstrip("-").startswith("2^"):
        return f"{text} = {pow2_form(x)}"
    return text


def hexcode(code: int, width: int) -> str:
    return f"0x{code:0{max(1, -(-width // 4))}X}"


def bits(code: int, width: int) -> str:
    return format(code, f"0{width}b")


def value_of(code: int, fmt) -> ref.Exact:
    return ref.decode(code, fmt)


def value_text(v: ref.Exact) -> str:
    if v.is_nan:
        return "NaN"
    if v.is_inf:
        return "-Inf" if v.sign else "+Inf"
    if v.is_zero:
        return "-0" if v.sign else "0"
    return show(v.value)


def float_fields(code: int, fmt: FloatFormat) -> tuple[int, int, int]:
    m = fmt.mantissa_bits
    sign = (code >> (fmt.exponent_bits + m)) & 1 if fmt.signed else 0
    return sign, (code >> m) & ((1 << fmt.exponent_bits) - 1), code & ((1 << m) - 1)


def code_class(code: int, fmt) -> str:
    """zero, subnormal, normal, max, NaN, Inf (floats); zero, max, min, value (integers)."""
    v = value_of(code, fmt)
    if v.is_nan:
        canonical = fmt.nan_code(negative=bool(v.sign))
        return "NaN (canonical)" if code == canonical and fmt.specials == "ieee" else "NaN"
    if v.is_inf:
        return "Inf"
    if fmt.kind == "int":
        if v.is_zero:
            return "zero"
        if v.magnitude == fmt.max_normal:
            return "max"
        if v.sign and v.magnitude > fmt.max_normal:
            return "most negative (not produced by default)" if fmt.name == "int8" else "most negative"
        return "value"
    if v.is_zero:
        return "zero"
    if v.magnitude == fmt.max_normal:
        return "max normal"
    _, exponent, _ = float_fields(code, fmt)
    if exponent == 0 and fmt.subnormals:
        return "subnormal"
    return "min normal" if v.magnitude == fmt.min_normal else "normal"


def significand_form(code: int, fmt: FloatFormat) -> str:
    """(-1)^S × significand × 2^exponent, exactly as the bit fields say."""
    v = value_of(code, fmt)
    if not v.is_finite:
        return ""
    sign, exponent, mantissa = float_fields(code, fmt)
    m = fmt.mantissa_bits
    hidden = 0 if (exponent == 0 and fmt.subnormals) else 1
    e = (exponent - fmt.bias) if not (exponent == 0 and fmt.subnormals) else fmt.emin
    significand = hidden + Fraction(mantissa, 1 << m)
    return f"{'-' if sign else ''}{exact_decimal(significand)} × 2^{e}"


# --------------------------------------------------------------------------------------------------
# Markdown helpers


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def details(title: str, body: str, open_: bool = False) -> str:
    """A pymdownx.details block (collapsed unless open_)."""
    return f'???{"+" if open_ else ""} note "{title}"\n\n' + textwrap.indent(body, "    ") + "\n"


def code_span(text: str) -> str:
    return f"`{text}`"


# --------------------------------------------------------------------------------------------------
# spec-table


def codes_where(fmt, predicate) -> list[int]:
    return [c for c in range(1 << fmt.width) if predicate(value_of(c, fmt))]


def code_list(codes: list[int], width: int) -> str:
    if not codes:
        return "none"
    if len(codes) > 4:
        return f"{len(codes)} codes: " + ", ".join(hexcode(c, width) for c in codes)
    return ", ".join(hexcode(c, width) for c in codes)


def float_spec_column(fmt: FloatFormat) -> dict[str, str]:
    w = fmt.width
    d = fmt.describe()
    layout = ("S " if fmt.signed else "") + "E" * fmt.exponent_bits + (" " + "M" * fmt.mantissa_bits if fmt.mantissa_bits else "")
    small = fmt.width <= 16
    col = {
        "layout (MSB first)": code_span(layout),
        "bits per element": str(w),
        "exponent / mantissa bits": f"{fmt.exponent_bits} / {fmt.mantissa_bits}",
        "bias": str(d["bias"]),
        "emin (smallest normal exponent)": str(d["emin"]),
        "emax_elem = floor(log2 max)": str(d["emax_elem"]),
        "max normal": f"{show(d['max_normal'])} ({hexcode(fmt.max_code, w)})",
        "min normal": show(d["min_normal"]),
        "min subnormal": show(d["min_subnormal"]) if d["min_subnormal"] is not None else "none (no subnormals)",
        "zero": ("+0 and -0" if d["has_negative_zero"] else "+0") if fmt.has_zero else "**none**",
        "Inf": "none",
        "NaN": "none",
        "specials": code_span(d["specials"]),
    }
    if small:
        col["Inf"] = code_list(codes_where(fmt, lambda v: v.is_inf), w)
        col["NaN"] = code_list(codes_where(fmt, lambda v: v.is_nan), w)
        if fmt.has_nan:
            col["NaN"] += f"; encode gives {hexcode(fmt.nan_code(), w)}" + (
                f" / {hexcode(fmt.nan_code(True), w)}" if fmt.signed and fmt.nan_code(True) != fmt.nan_code() else ""
            )
        finite = {value_of(c, fmt).value for c in range(1 << w) if value_of(c, fmt).is_finite}
        col["distinct finite values"] = str(len(finite))
    else:
        col["Inf"] = f"{hexcode(fmt.inf_code(), w)}" if fmt.has_inf else "none"
        col["NaN"] = f"{hexcode(fmt.nan_code(), w)} (quiet NaN encode gives)" if fmt.has_nan else "none"
    if fmt.min_subnormal is not None and small:
        col["min subnormal"] += f" ({hexcode(1, w)})"
    return col


def int_spec_column(fmt: IntFormat) -> dict[str, str]:
    w = fmt.width
    d = fmt.describe()
    if fmt.encoding == "twos_complement":
        layout = "q" * w + " (two's complement)"
        most_negative = fmt.min_value
    else:
        layout = "S " + "M" * (w - 1) + " (sign-magnitude)"
        most_negative = -fmt.max_normal
    return {
        "layout (MSB first)": code_span(layout),
        "bits per element": str(w),
        "value": f"q × 2^-{fmt.frac_bits}",
        "step (ulp)": show(d["step"]),
        "emax_elem = floor(log2 max)": str(d["emax_elem"]),
        "max": f"{show(d['max_normal'])} ({hexcode(fmt.max_code, w)})",
        "most negative": f"{show(most_negative)} ({hexcode(fmt.max_code + 1 if fmt.encoding == 'twos_complement' else (1 << w) - 1, w)})",
        "zero": "+0 and -0" if d["has_negative_zero"] else "0 only (no -0)",
        "Inf": "none",
        "NaN": "none",
    }


def render_spec_table(args: str) -> str:
    formats = [resolve(name) for name in split_specs(args)]
    columns = [float_spec_column(f) if f.kind == "float" else int_spec_column(f) for f in formats]
    keys = list(dict.fromkeys(k for col in columns for k in col))
    rows = [[key] + [col.get(key, "") for col in columns] for key in keys]
    return table(["", *[code_span(f.name) for f in formats]], rows) + "\n"


# --------------------------------------------------------------------------------------------------
# value-table and value-grid


def value_rows(fmt, codes) -> list[list[str]]:
    rows = []
    for code in codes:
        v = value_of(code, fmt)
        if fmt.kind == "float":
            sign, exponent, mantissa = float_fields(code, fmt)
            fields = [str(sign)] if fmt.signed else []
            fields += [bits(exponent, fmt.exponent_bits), bits(mantissa, fmt.mantissa_bits) if fmt.mantissa_bits else "-"]
            rows.append(
                [code_span(hexcode(code, fmt.width)), code_span(bits(code, fmt.width)), *fields,
                 value_text(v), significand_form(code, fmt), code_class(code, fmt)]
            )
        else:
            if fmt.encoding == "twos_complement":
                q = code - (1 << fmt.width) if code & fmt.sign_mask else code
                fields = [str(q)]
            else:
                fields = [str(code >> (fmt.width - 1)), bits(code & (fmt.sign_mask - 1), fmt.width - 1)]
            rows.append([code_span(hexcode(code, fmt.width)), code_span(bits(code, fmt.width)), *fields,
                         value_text(v), code_class(code, fmt)])
    return rows


def value_header(fmt) -> list[str]:
    if fmt.kind == "float":
        fields = (["S"] if fmt.signed else []) + ["E", "M"]
        return ["code", "bits", *fields, "value (exact)", "= significand × 2^exp", "class"]
    if fmt.encoding == "twos_complement":
        return ["code", "bits", "q", "value (exact)", "class"]
    return ["code", "bits", "S", "magnitude", "value (exact)", "class"]


def render_value_table(args: str) -> str:
    fmt = resolve(args)
    if fmt.width > 8:
        raise ValueError(f"value-table: {fmt.name} has {fmt.width} bits; only formats of at most 8 bits are listed")
    header = value_header(fmt)
    if fmt.width < 7:
        body = table(header, value_rows(fmt, range(1 << fmt.width)))
        return f"Every code of `{fmt.name}`, decoded by `mxsim.ref.decode`:\n\n{body}\n"
    half = fmt.signed and fmt.kind == "float" and fmt.width == 8
    codes = range(1 << (fmt.width - 1)) if half else range(1 << fmt.width)
    note = ""
    if half:
        note = (
            f"\n\nThe codes {hexcode(fmt.sign_mask, 8)}–0xFF are the same magnitudes with the sign bit set "
            f"(code | {hexcode(fmt.sign_mask, 8)} = the negative; {hexcode(fmt.sign_mask, 8)} is -0)."
        )
    title = f"All {len(codes)} {'non-negative ' if half else ''}codes of {fmt.name}, one per row"
    return render_value_grid(args) + "\n" + details(title, table(header, value_rows(fmt, codes)) + note) + "\n"


def grid_cell(code: int, fmt) -> str:
    v = value_of(code, fmt)
    if v.is_nan:
        return "NaN"
    if v.is_inf:
        return "-Inf" if v.sign else "+Inf"
    if v.is_zero:
        return "-0" if v.sign else "0"
    text = exact_decimal(v.value, max_digits=8)
    return text if text is not None else ("-" if v.sign else "") + pow2_form(v.magnitude)


def render_value_grid(args: str) -> str:
    """Floats: one row per sign and exponent field, one column per mantissa field (the value of
    code (S, E, M) at row (S, E), column M). Integers: rows are the high nibble, columns the low."""
    fmt = resolve(args)
    w = fmt.width
    if fmt.kind == "float" and fmt.mantissa_bits > 0:
        m = fmt.mantissa_bits
        columns = 1 << m
        header = ["S E \\ M"] + [code_span(bits(j, m)) for j in range(columns)]
        rows = []
        for row in range(1 << (w - m)):
            prefix = bits(row, w - m)
            label = f"{prefix[0]} {prefix[1:]}" if fmt.signed else prefix
            rows.append([code_span(label)] + [grid_cell((row << m) | j, fmt) for j in range(columns)])
        caption = (
            f"Every code of `{fmt.name}` by its fields: row = sign and exponent field, column = mantissa "
            f"field; code = {hexcode(0, w)} + (row bits followed by column bits)."
        )
    else:
        low = min(4, w)
        columns = 1 << low
        header = ["high \\ low"] + [code_span(f"{j:X}") for j in range(columns)]
        rows = [
            [code_span(f"{hexcode(row << low, w)}")] + [grid_cell((row << low) | j, fmt) for j in range(columns)]
            for row in range(1 << (w - low))
        ]
        caption = f"Every code of `{fmt.name}`: row = the code's high bits, column = its low {low} bits."
    return caption + "\n\n" + table(header, rows) + "\n"


# --------------------------------------------------------------------------------------------------
# block-table


def render_block_table(args: str) -> str:
    formats = [resolve(name) for name in split_specs(args)]
    rows = []
    for f in formats:
        d = f.describe()
        element = f.element
        sub = "-" if f.subblock_size is None else f"{d['subscale_bits']} bit per {d['subblock_size']} elements"
        largest = element.max_normal * f.scale.max_normal  # sub-scales only ever divide
        rows.append(
            [
                code_span(f.name),
                code_span(d["element"]),
                str(d["block_size"]),
                code_span(d["scale"]),
                sub,
                code_span(d["tensor_scale"]) if d["tensor_scale"] else "-",
                str(d["bits_per_block"]),
                show(d["bits_per_element"]) if d["bits_per_element"].denominator == 1 else str(float(d["bits_per_element"])),
                show(largest),
            ]
        )
    header = ["format", "element", "k", "scale", "sub-scales", "tensor scale", "bits / block",
              "bits / element", "largest magnitude (× tensor scale)"]
    return table(header, rows) + "\n"


# --------------------------------------------------------------------------------------------------
# options


def _allowed(definition) -> str:
    allowed = definition.allowed
    if isinstance(allowed, Choice):
        return ", ".join(code_span(c) for c in allowed.values)
    if isinstance(allowed, Flag):
        return "`False`, `True`"
    if isinstance(allowed, IntRange):
        span = f"integer in [{allowed.low}, {allowed.high}]"
        return f"`None` ({allowed.none}) or {span}" if allowed.none else span
    return allowed.text()


def option_rows(options_class) -> list[list[str]]:
    """One row per option, read from its definition in mxsim.options (the one place it lives)."""
    return [
        [code_span(o.name), code_span(repr(o.default)), _allowed(o), o.section, o.description]
        for o in options_of(options_class)
    ]


def render_options(args: str) -> str:
    header = ["option", "default", "allowed values", "contract §", "meaning"]
    kind = args.strip()
    if kind in OPTION_CLASSES:
        return table(header, option_rows(OPTION_CLASSES[kind])) + "\n"
    if kind == "presets":
        defaults = Accumulator()
        rows = []
        for name, acc in PRESETS.items():
            changed = [f"{f.name}={getattr(acc, f.name)!r}" for f in dataclasses.fields(Accumulator)
                       if getattr(acc, f.name) != getattr(defaults, f.name)]
            rows.append([code_span(name), ", ".join(code_span(c) for c in changed) or "the defaults"])
        return table(["preset", "fields that differ from the defaults"], rows) + "\n"
    raise ValueError(f"options: unknown kind {kind!r}; expected one of: {', '.join(OPTION_CLASSES)}, presets")


# --------------------------------------------------------------------------------------------------
# encode-examples and block-examples


def parse_value(token: str):
    """An exact input: a decimal or fraction (as Fraction), or inf, -inf, nan, -0 (as float);
    2^k or a*2^k are read exactly too."""
    token = token.strip()
    if token.lower() in ("inf", "+inf", "-inf", "nan", "-nan", "-0", "-0.0"):
        return float(token)
    if token.startswith("-") and "^" in token:  # -2^k, -a*2^k (the sign was lost before)
        return -parse_value(token[1:])
    if "^" in token:
        head, _, exponent = token.partition("^")
        base = head[:-1].rsplit("*", 1) if head.endswith("2") else None
        if base is None:
            raise ValueError(f"cannot read {token!r}")
        factor = Fraction(base[0]) if len(base) == 2 else Fraction(1)
        return factor * Fraction(2) ** int(exponent)
    return Fraction(token)


def input_text(x) -> str:
    if isinstance(x, float):
        return {"inf": "+Inf", "-inf": "-Inf", "nan": "NaN"}.get(repr(x), "-0")
    return show(x)


def encoded(x, fmt, **options) -> str:
    try:
        code = ref.encode(x, fmt, **options)
    except (ValueError, OverflowError) as e:
        return f"{type(e).__name__}"
    return f"{hexcode(code, fmt.width)} ({value_text(value_of(code, fmt))})"


def render_encode_examples(args: str) -> str:
    """``FMT x1 x2 ...``: the code of each exact input under every rounding mode (saturating), and
    under rne with ``overflow="ieee"``."""
    name, *tokens = args.split()
    fmt = resolve(name)
    modes = ["rne", "rna", "rtz", "rup", "rdn"]
    rows = []
    for token in tokens:
        x = parse_value(token)
        rows.append([input_text(x)] + [encoded(x, fmt, rounding=r) for r in modes]
                    + [encoded(x, fmt, overflow="ieee")])
    header = ["exact input"] + [code_span(f'rounding="{r}"') for r in modes] + [code_span('overflow="ieee"')]
    return (f"`mxsim.ref.encode(x, \"{fmt.name}\", rounding=..., overflow=...)`, computed when this page was built "
            "(overflow `saturate` unless the column says otherwise):\n\n" + table(header, rows) + "\n")


def render_block_examples(args: str) -> str:
    """``FMT [name=value ...] ; v1 v2 ... ; v1 v2 ...``: mxsim.ref.quantize_block of zero-padded
    blocks, with the QuantizeOptions given after the format name (NVFP4: tensor scale 1)."""
    head, *groups = [g.strip() for g in args.split(";")]
    name, *option_tokens = head.split()
    fmt = resolve(name)
    options = dict(tok.split("=", 1) for tok in option_tokens)
    options = {k: (v == "True") if v in ("True", "False") else v for k, v in options.items()}
    opts = QuantizeOptions(**options)
    rows = []
    for group in groups:
        values = [parse_value(t) for t in group.split()]
        q = ref.quantize_block(values + [Fraction(0)] * (fmt.block_size - len(values)), fmt, opts)
        scale = value_of(q.scale, fmt.scale)
        n = len(values)
        decoded = ref.dequantize_block(q, fmt)[:n]
        rows.append([
            ", ".join(input_text(v) for v in values) + (", 0, …" if n < fmt.block_size else ""),
            f"{hexcode(q.scale, fmt.scale_storage_bits)} ({value_text(scale)})",
            ", ".join(str(t) for t in q.subscales[: -(-n // fmt.subblock_size)]) if fmt.subblocks else "-",
            ", ".join(hexcode(c, fmt.element.width) for c in q.codes[:n]),
            ", ".join(value_text(value_of(c, fmt.element)) for c in q.codes[:n]),
            ", ".join(value_text(v) for v in decoded),
        ])
    call = f"mxsim.ref.quantize_block(block, \"{fmt.name}\"" + (
        f", QuantizeOptions({', '.join(f'{k}={v!r}' for k, v in options.items())})" if options else "") + ")"
    header = ["block (exact values)", "scale code (value)", "sub-scales τ", "element codes", "element values",
              "decoded (exact)"]
    if not fmt.subblocks:
        header.pop(2)
        for row in rows:
            row.pop(2)
    return f"`{call}`, computed when this page was built:\n\n" + table(header, rows) + "\n"


# --------------------------------------------------------------------------------------------------
# comparison


def render_comparison(args: str) -> str:
    library = args.strip()
    examples = [e for e in comparison_examples.EXAMPLES if e.library == library]
    if not examples:
        raise ValueError(f"comparison: no examples for {library!r}")
    rows = []
    for e in examples:
        rows.append([e.id, e.case, e.input, e.library_output, e.mxsim_output,
                     e.option_output or "-", e.status()])
    header = ["#", "case", "input", f"{library}", "mxsim (defaults)", "variant (also run)", "checked"]
    sources = "\n\n".join(
        f"**{e.id}**\n\n```python\n{e.source_code()}```" for e in examples
    )
    return table(header, rows) + "\n\n" + details(f"The code behind rows {examples[0].id}–{examples[-1].id}", sources) + "\n"


def render_comparison_helpers(args: str) -> str:
    """The source of the helper functions the example code calls."""
    m = comparison_examples
    helpers = [m.num, m.cv, m.raises, m.mx, m.block, m.block_text, m._torchao_block, m._scale_rule_example]
    body = "```python\nimport numpy as np\nimport mxsim\n\n\n" + "\n\n".join(
        textwrap.dedent(inspect.getsource(f)) for f in helpers) + "```"
    return details("Helpers the example code uses (from docs/hooks/comparison_examples.py)", body) + "\n"


# --------------------------------------------------------------------------------------------------
# profiles


def _set_rows(options_class, fields: dict) -> list[list[str]]:
    rows = []
    for name, value in fields.items():
        definition = option_named(options_class, name)
        rows.append([code_span(name), code_span(repr(definition.default)), code_span(repr(value)), definition.section,
                     definition.description])
    return rows


def render_profile(args: str) -> str:
    """The facts of one profile, read from its definition."""
    p = get_profile(args.strip())
    facts = [
        ["name", code_span(p.name)], ["reproduces", p.source], ["version", p.version],
        ["formats", ", ".join(code_span(f) for f in p.formats)],
    ]
    if p.kind == "block":
        facts.append(["outputs (dequantize)", ", ".join(code_span(o) for o in p.outputs)])
    out = [table(["", ""], facts), ""]
    header = ["option", "default", "profile", "contract §", "meaning"]
    if p.kind == "block":
        out += ["QuantizeOptions the profile sets (every other option keeps its default):", "",
                table(header, _set_rows(QuantizeOptions, dict(p.quantize))), ""]
        rows = []
        for output in p.outputs:
            opts = p.dequantize_options(output)
            changed = {k: v for k, v in opts.as_dict().items() if v != getattr(DequantizeOptions(), k)}
            rows.append([code_span(output), ", ".join(code_span(f"{k}={v!r}") for k, v in changed.items())
                         or "the defaults"])
        out += ["DequantizeOptions per output type:", "", table(["output", "DequantizeOptions"], rows), ""]
    else:
        out += ["EncodeOptions the profile sets:", "", table(header, _set_rows(EncodeOptions, dict(p.encode))), ""]
    out += ["Left out (the peer's output depends on more than its input values there, or mxsim refuses):", ""]
    out += [f"* {text}" for text in p.inputs]
    if p.notes:
        out += ["", "Notes:", ""] + [f"* {text}" for text in p.notes]
    return "\n".join(out) + "\n"


def render_profile_examples(args: str) -> str:
    name = args.strip()
    examples = profile_examples.examples_of(name)
    if not examples:
        raise ValueError(f"profile-examples: no examples for {name!r}")
    rows = []
    has_variant = any(e.variant for e in examples)
    for e in examples:
        got, want = e.run(), e.expected()
        for key, value in got.items():
            if value != want[key]:
                raise ValueError(f"profile example {name} {e.inputs}: {key} is {value!r}, the page records {want[key]!r}")
        row = [code_span(e.fmt), e.inputs, want["default"], want["profile"]]
        if has_variant:
            variant = ", ".join(f"{k}={v!r}" for k, v in (e.variant or {}).items())
            row.append(f"{code_span(variant)}: {want['variant']}" if e.variant else "-")
        rows.append(row)
    kind = get_profile(name).kind
    header = ["format", "input", "mxsim defaults", f'`profile="{name}"`'] + (["contrast (also run)"] if has_variant else [])
    what = "codes (decoded value)" if kind == "cast" else "the scale byte, then element codes (decoded value)"
    return f"Outputs are {what}, computed when this page was built:\n\n" + table(header, rows) + "\n"


def render_profiles(args: str) -> str:
    rows = []
    for p in PROFILES.values():
        sets = dict(p.quantize) if p.kind == "block" else dict(p.encode)
        rows.append([code_span(p.name), p.kind, p.version, ", ".join(code_span(f"{k}={v!r}") for k, v in sets.items())])
    return table(["profile", "kind", "reproduces", "options it sets"], rows) + "\n"


RENDERERS = {
    "comparison-helpers": render_comparison_helpers,
    "profile": render_profile,
    "profile-examples": render_profile_examples,
    "profiles": render_profiles,
    "spec-table": render_spec_table,
    "value-table": render_value_table,
    "value-grid": render_value_grid,
    "block-table": render_block_table,
    "options": render_options,
    "comparison": render_comparison,
    "encode-examples": render_encode_examples,
    "block-examples": render_block_examples,
    "cli-reference": lambda args: cli_reference.render(),
}
