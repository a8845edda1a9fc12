"""The errors of blocks that have no MX encoding under the options (docs/numerics.md section 6.2).

Options that reproduce a library refuse the blocks the library gives no MX encoding: NaN blocks
under ``nan_blocks='error'``, Inf under ``inf_policy='error'``, a float32 scale E8M0 cannot hold
under ``scale_underflow='fp32_pow'``, Brevitas' 1e-10 scale floor (``scale_value_min``,
:func:`mxsim.ref.block.check_scale_value_min`) and NaN or Inf under compressed-tensors' NVFP4
``nvfp4_arith='fp32_reciprocal'``. Each is a :class:`NoMXEncoding`, a ValueError that names the
option refusing the block, so that a caller (the golden quantize suites) may leave such blocks out
and count them per option.
"""

from __future__ import annotations

__all__ = ["NoMXEncoding", "inf_block_error", "nan_block_error", "scale_underflow_error", "reciprocal_special_error"]


class NoMXEncoding(ValueError):
    """A block the options give no MX encoding (see the module docstring); ``option`` names the
    option and value that refuse it (``"nan_blocks='error'"``)."""

    def __init__(self, message: str, option: str):
        super().__init__(message)
        self.option = option


def inf_block_error(where: str = "a block") -> ValueError:
    """inf_policy='error' (contract 6.2, Quark FP4/FP6): a block holding +-Inf has no MX encoding."""
    return NoMXEncoding(
        f"{where} holds an Inf, which has no MX encoding under inf_policy='error' (the library passes the Inf through "
        "to its output); expected finite values, or another inf_policy",
        "inf_policy='error'",
    )


def scale_underflow_error(exponent: int, where: str = "a block") -> ValueError:
    """scale_underflow='fp32_pow': a scale 2^E with -149 <= E < scale_min has no E8M0 code."""
    return NoMXEncoding(
        f"{where} has scale 2^{exponent} under scale_underflow='fp32_pow' (the library's float32 scale, not "
        "clamped), which no E8M0 code holds (E8M0: 2^-127 .. 2^127); use another profile or options for such blocks",
        "scale_underflow='fp32_pow'",
    )


def reciprocal_special_error() -> ValueError:
    """nvfp4_arith='fp32_reciprocal' (contract 6.2, compressed-tensors NVFP4): a block holding NaN or
    Inf has no NVFP4 encoding."""
    return NoMXEncoding(
        "a block holding NaN or Inf has no NVFP4 encoding under nvfp4_arith='fp32_reciprocal' (compressed-tensors "
        "gives NaN outputs there and a global scale of 1 or 0 for the tensor); expected finite inputs",
        "nvfp4_arith='fp32_reciprocal'",
    )


def nan_block_error(where: str = "a block") -> ValueError:
    """nan_blocks='error' (contract 6.2): the error for a block that holds a NaN."""
    return NoMXEncoding(
        f"{where} holds a NaN, which has no MX encoding under nan_blocks='error' (the library's output there is no "
        "MX block: compressed-tensors gives it scale 2^-127, saturated elements and a NaN output; Quark MX6/MX9 "
        "pass the NaN through and quantize the rest); remove the NaN or use nan_blocks='nan'",
        "nan_blocks='error'",
    )
