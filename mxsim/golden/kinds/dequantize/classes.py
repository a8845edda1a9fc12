"""The corner classes of ``dequantize`` vectors: of the element codes, the scale, each value and its
output word, and the rounding decisions of the output from the reference dequantizer's record of them
(one vector's values or many vectors' at once; docs/numerics.md sections 3.1 and 3.3)."""

from __future__ import annotations

from functools import cached_property

from ....ref.stored_block import QuantizedBlock
from ....ref.dequant import is_subnormal_word
from ....ref.encode import encode
from ....ref.exact import Exact
from ....ref.scale_code import scale_code_exponent
from ...coverage.cast_roundings import CastRoundings
from ...values import code_sets, decode
from .exponents import EXPONENT_RANGE


class DequantizeClasses:
    """The classes of a dequantize suite's vectors (needs ``self.fmt``, ``self.out``, ``self.opts``,
    ``self.scale_encoding``)."""

    def _classes(self, block: QuantizedBlock, values: list[Exact], words: list[int]) -> set:
        """The classes of one vector but the rounding decisions (:meth:`_decision_flag_words`): of
        its element codes (from :func:`..values.code_sets`), its scale, and each value and word
        (:meth:`_value_classes`, kept per word where they depend on the word alone)."""
        sets, codes = code_sets(self.fmt.element), set(block.codes)
        classes = {name for name, test in (("nan", "nan"), ("inf", "inf"), ("subnormal_input", "subnormal"),
                                           ("int8_neg2", "neg2")) if not codes.isdisjoint(sets[test])}
        if codes <= sets["zero"]:
            classes.add("all_zero")
        classes |= self._scale_classes(block.scale)
        out, kept = self.out, self._word_classes
        for x, word in zip(values, words):
            finite = x.kind == "finite"
            nonzero = finite and x.magnitude != 0
            if nonzero and not self._is_ieee_word(word):  # saturated or flushed: the exact value decides
                classes |= self._value_classes(x, word, out)
                continue
            key = (finite, nonzero, word)  # (a value that is not finite and nonzero, or has its IEEE word)
            known = kept.get(key)
            if known is None:
                if len(kept) >= 1 << 16:
                    kept.clear()
                known = kept[key] = frozenset(self._value_classes(x, word, out))
            classes |= known
        return classes

    @cached_property
    def _word_classes(self) -> dict:
        """(finite, nonzero, word) -> :meth:`_value_classes` of a value with that word, where the word
        alone decides them: the value is zero or not finite, or the word is its IEEE word
        (:meth:`_is_ieee_word`); at most 2^16 kept."""
        return {}

    def _scale_classes(self, code: int) -> set:
        if self.fmt.scale.name != "e8m0":
            return {"scale_nan"} if decode(code, self.fmt.scale).is_nan else set()
        exponent = scale_code_exponent(code, self.scale_encoding)
        low, high = EXPONENT_RANGE[self.scale_encoding]
        return {None: {"scale_nan"}, low: {"scale_min"}, high: {"scale_max"}}.get(exponent, set())

    def _value_classes(self, x: Exact, word: int, out) -> set:
        """Classes of one element's result: the word's kind (zero, -0, max, Inf), and from the
        exact value: overflow (and saturation), subnormal result (flushed or kept), tie, carry."""
        classes = set()
        magnitude = word & ~out.sign_mask
        if x.is_finite:
            if magnitude == 0:
                classes.add("negative_zero" if word & out.sign_mask else "zero")
            if magnitude == out.max_code:
                classes.add("max")
            if x.magnitude:
                classes |= self._rounding_classes(x, word, out)
        if magnitude == out.inf_code():
            classes.add("inf")
        return classes

    def _rounding_classes(self, x: Exact, word: int, out) -> set:
        """overflow (and saturation) and subnormal_output of a finite nonzero x whose output word is
        ``word``, from its IEEE word (nearest-even, overflowing to Inf: :meth:`_is_ieee_word`)."""
        classes = set()
        ieee = word if self._is_ieee_word(word) else encode(x, out, "rne", "ieee")
        if decode(ieee, out).is_inf:
            classes.add("overflow")
            if self.opts.dequant_overflow == "saturate":
                classes.add("saturation")
            return classes
        if is_subnormal_word(ieee, out):
            classes.add("subnormal_output")
        return classes

    def _is_ieee_word(self, word: int) -> bool:
        """Whether the output word of a finite value is surely its IEEE word, ``encode(x, out, "rne",
        "ieee")``: :func:`mxsim.ref.dequant.round_to_output` (docs/numerics.md section 3.1) changes that word
        only to saturate an overflow to the largest finite (``dequant_overflow='saturate'``) or to
        flush a subnormal to a zero (``dequant_ftz``), so a word that is neither is it."""
        magnitude = word & ~self.out.sign_mask
        if self.opts.dequant_overflow == "saturate" and magnitude == self.out.max_code:
            return False
        return not (self.opts.dequant_ftz and magnitude == 0)

    def _decision_flag_words(self, records) -> list[int]:
        """Each value's flags word of decision classes, from the reference dequantizer's record of its
        output rounding (:class:`mxsim.ref.dequant.OutputRounding`, None where the value does not
        round) through :meth:`...coverage.cast_roundings.CastRoundings.flags` on the output's grid;
        0 where a value is zero, not finite, overflows (above the output's largest normal), or
        flushes (``dequant_ftz``: below its smallest normal)."""
        roundings = CastRoundings.from_output_roundings(records)
        words = roundings.flags(self.out)
        if self.opts.dequant_ftz:
            words[roundings.value < float(self.out.min_normal)] = 0
        return words.tolist()
