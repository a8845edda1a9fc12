"""The expected value and corner classes of one ``decode`` vector: a code -> the fp32 bits of its
exact value, from the reference decoder."""

from __future__ import annotations

from ...coverage.catalogue import kind_classes
from ...values import decode, fp32_bits, fp32_value, is_subnormal_code


class DecodeExpected:
    """``compute`` of a decode suite (needs ``self.fmt``, the element format)."""

    def compute(self, inputs: dict):
        """(``{"value": fp32 bits}``, classes) of ``inputs["code"]``: NaN decodes to 0x7FC00000 with
        the code's sign, +-Inf and +-0 to theirs; a finite value that is not exactly an fp32 value is
        refused (ValueError). Classes: the value's kind (:func:`...coverage.catalogue.kind_classes`),
        ``max`` (+-max_normal), ``subnormal_input``, ``int8_neg2`` (the two's-complement code
        -2^(w-1))."""
        code = inputs["code"]
        x = decode(code, self.fmt)
        value = fp32_bits(x)
        if x.is_finite and fp32_value(value).magnitude != x.magnitude:
            raise ValueError(f"{self.fmt.name} code {code:#x} is not exactly an fp32 value")
        classes = kind_classes(x)
        if x.is_finite and x.magnitude and x.magnitude == self.fmt.max_normal:
            classes.add("max")
        if is_subnormal_code(code, self.fmt):
            classes.add("subnormal_input")
        if self.fmt.kind == "int" and self.fmt.encoding == "twos_complement" and code == self.fmt.sign_mask:
            classes.add("int8_neg2")
        return {"value": value}, classes
