"""The options layer: every choice of the numerics contract, defined once (name, default, allowed
values, one-line description, contract section; see :mod:`.spec`), one module per operation:

* :mod:`.encode`: element encoding (``rounding``, ``overflow``, ...; section 1) and what overflow
  produces;
* :mod:`.quantize`: block quantization, :class:`QuantizeOptions` (sections 2, 2.1, 2.2);
* :mod:`.dequantize`: dequantization per output type, :class:`DequantizeOptions` (section 3.1);
* :mod:`.layout`: packed bit layouts, :class:`LayoutOptions` (section 3);
* :mod:`.accumulate`: the dot-product datapath, :class:`Accumulator` (sections 4, 4.1), with
  :mod:`.accumulate_formats` (the block formats it takes) and :mod:`.presets` (its named presets,
  section 6.1);
* :mod:`.profiles`: named bundles of the options above that reproduce a real design or library,
  :class:`Profile` and :data:`PROFILES` (section 6).

Validation, error messages, manifests (``as_dict``), the documentation's option tables and the
CLI's flags all read these definitions. This layer sits at the bottom beside :mod:`mxsim.formats`.
"""

from .accumulate import PRESETS, Accumulator
from .dequantize import DequantizeOptions
from .encode import OVERFLOW_MODES, ROUNDING_MODES, EncodeOptions
from .layout import LayoutOptions
from .profiles import PROFILES, Profile, get_profile
from .quantize import SCALE_RULES, QuantizeOptions
from .spec import Option, options_of

OPTION_CLASSES = {
    "encode": EncodeOptions,
    "quantize": QuantizeOptions,
    "dequantize": DequantizeOptions,
    "layout": LayoutOptions,
    "accumulator": Accumulator,
}

__all__ = [
    "Option", "options_of", "OPTION_CLASSES", "EncodeOptions", "QuantizeOptions", "DequantizeOptions", "LayoutOptions",
    "Accumulator",
    "PRESETS", "ROUNDING_MODES", "OVERFLOW_MODES", "SCALE_RULES", "Profile", "PROFILES", "get_profile",
]
