"""``mxsim quantize``, ``dequantize`` and ``identify``: .npy arrays to mxsim tensor files and back,
and the configuration that reproduces a quantized tensor.

Heavy modules (:mod:`mxsim.tensor`, :mod:`mxsim.fileformat`, :mod:`mxsim.golden.device.identify`) are
imported inside the commands, so that importing the command line loads none of them.
"""

from __future__ import annotations

from ..formats import ALIASES, FORMATS, format_names, get_format
from ..npy_input import load_array, typed_raw_items
from ..options import DequantizeOptions, LayoutOptions, QuantizeOptions
from ..options.profiles import PROFILES, get_profile
from ..ref.sources import SOURCE_TYPES
from .flags import add_option_flags, given_options, in_flags
from .output import save_npy


def _cmd_quantize(args) -> str:
    from ..fileformat import save
    from ..tensor import quantize

    x, source = typed_raw_items(load_array(args.input), args.input, args.source)
    options = given_options(args, QuantizeOptions)
    rand_bits = None if args.rand_bits is None else load_array(args.rand_bits)
    layout = LayoutOptions(**given_options(args, LayoutOptions))
    tensor = quantize(
        x, args.format, axis=args.axis, rand_bits=rand_bits, source=source, profile=args.profile, **options
    )
    save(tensor, args.output, **layout.as_dict())
    return (
        f"{args.output}: {tensor.fmt.name}, shape {tensor.shape}, axis {tensor.axis}, {tensor.scales.size} blocks, "
        f"{layout.element_stream}/{layout.scale_placement}"
    )


def _cmd_dequantize(args) -> str:
    from ..fileformat import load

    tensor = load(args.input)
    # the profile's formats and outputs are checked as quantize checks them (one rule: Profile.dequantize_for)
    options = None if args.profile is None else get_profile(args.profile).dequantize_for(tensor.fmt, args.dtype)
    values = tensor.dequantize(args.dtype, options, **given_options(args, DequantizeOptions))
    save_npy(args.output, values)
    return f"{args.output}: {values.dtype} array of shape {values.shape} from {tensor.fmt.name}"


def _cmd_identify(args) -> str:
    from ..fileformat import load
    from ..golden.device.identify import check_budget, identify, identify_lines

    check_budget(args.budget, "--budget")
    if args.top < 0:
        raise ValueError(f"--top={args.top} is not allowed; expected a non-negative integer")
    source = typed_raw_items(load_array(args.source), args.source)[0]
    if args.tensor.endswith(".npy"):
        if args.scales is None or args.format is None:
            raise ValueError("identify with codes as .npy needs SCALES.npy and --format (or give an mxsim tensor file)")
        codes, scales, fmt, axis = load_array(args.tensor), load_array(args.scales), args.format, args.axis
        extra = {}
    else:
        if args.scales is not None:
            raise ValueError("SCALES.npy goes with codes as .npy only; an mxsim tensor file holds its scales")
        tensor = load(args.tensor)
        codes, scales, fmt, axis = tensor.codes, tensor.scales, tensor.fmt, tensor.axis
        extra = {"subscales": tensor.subscales, "tensor_scale": tensor.tensor_scale}
    report = identify(source, scales, codes, fmt, axis, budget=args.budget, **extra)
    return "\n".join(identify_lines(report, args.top))


def _format_name(text: str) -> str:
    """A --format value as the catalogue spells it (case-insensitive, as mxsim.get_format); an
    unknown name is passed on unchanged for argparse to refuse with the list of choices."""
    try:
        return get_format(text, kind="block").name
    except ValueError:
        return text


def add_tensor_commands(commands) -> None:
    """The ``quantize``, ``dequantize`` and ``identify`` subcommands, added to ``commands``."""
    block_names = format_names("block") + [alias for alias, name in ALIASES.items() if FORMATS[name].kind == "block"]
    block_profiles = tuple(name for name, p in PROFILES.items() if p.kind == "block")
    _add_quantize(commands, block_names, block_profiles)
    _add_dequantize(commands, block_profiles)
    _add_identify(commands, block_names)


def _add_quantize(commands, block_names, block_profiles) -> None:
    """``mxsim quantize IN.npy OUT --format F``: flags from LayoutOptions and QuantizeOptions."""
    quant = commands.add_parser("quantize", help="quantize a .npy array into an mxsim tensor file")
    quant.add_argument("input", metavar="IN.npy", help="float16/bfloat16/float32/float64/float8 array (ml_dtypes "
                       "bfloat16 and float8_e5m2 as numpy.save writes them; float8_e4m3fn, which numpy.save records "
                       "as raw bytes, with --source fp8_e4m3), or bit patterns with --source")
    quant.add_argument("output", metavar="OUT", help="mxsim tensor file to write (atomically)")
    quant.add_argument("--format", required=True, type=_format_name, choices=block_names, metavar="FORMAT",
                       help=f"block format, in any case: {', '.join(block_names)}")
    quant.add_argument("--axis", type=int, default=-1, help="the axis blocks run along (default: -1)")
    quant.add_argument("--rand-bits", metavar="RAND.npy", help="integer random words of the input's shape "
                       "(for --rounding stochastic)")
    quant.add_argument("--source", choices=SOURCE_TYPES, default=None,
                       help="the type of an unsigned-integer input's bit patterns (uint32 fp32, uint16 fp16 or bf16, "
                       "uint8 fp8_e4m3 or fp8_e5m2, uint64 fp64), or of an ml_dtypes array's raw items as numpy.save "
                       "writes them; float inputs need none")
    quant.add_argument("--profile", choices=block_profiles, default=None,
                       help="a profile: the options of a real design or library (option flags override them; the "
                       "file records it)")
    add_option_flags(quant, LayoutOptions)
    add_option_flags(quant, QuantizeOptions)
    quant.set_defaults(run=in_flags(_cmd_quantize, (LayoutOptions, QuantizeOptions)))


def _add_dequantize(commands, block_profiles) -> None:
    """``mxsim dequantize IN OUT.npy``: flags from DequantizeOptions."""
    dequant = commands.add_parser("dequantize", help="decode an mxsim tensor file to a .npy array")
    dequant.add_argument("input", metavar="IN", help="mxsim tensor file")
    dequant.add_argument("output", metavar="OUT.npy", help=".npy file to write (atomically; no suffix is added)")
    dequant.add_argument("--dtype", choices=("float32", "float16", "float64"), default="float32",
                         help="output dtype (default: float32)")
    dequant.add_argument("--profile", choices=block_profiles, default=None,
                         help="dequantize with this profile's options for --dtype (default: the profile the file "
                         "records, if any; option flags override); the file's format and --dtype must be ones the "
                         "profile has, as quantize --profile requires")
    add_option_flags(dequant, DequantizeOptions)
    dequant.set_defaults(run=in_flags(_cmd_dequantize, (DequantizeOptions,)))


def _add_identify(commands, block_names) -> None:
    """``mxsim identify SOURCE.npy TENSOR [SCALES.npy]``."""
    ident = commands.add_parser(
        "identify", help="name the profile and options that reproduce a quantized tensor from its source",
        description="Quantize SOURCE under mxsim's defaults, every block profile of the format and (if none explains "
        "every block) every single option change, and name the configurations that reproduce the tensor's scale bytes "
        "and element codes (from a tensor file also its sub-scales and NVFP4 tensor scale), with the share of blocks "
        "each explains (the candidates of golden check --explain).",
    )
    ident.add_argument("source", metavar="SOURCE.npy", help="the values the tensor was quantized from")
    ident.add_argument("tensor", metavar="TENSOR", help="an mxsim tensor file, or the element codes as .npy (blocks "
                       "along the last axis)")
    ident.add_argument("scales", metavar="SCALES.npy", nargs="?", default=None,
                       help="the scale bytes as .npy, with codes as .npy (one per block)")
    ident.add_argument("--format", type=_format_name, choices=block_names, default=None, metavar="FORMAT",
                       help="the block format, with codes as .npy")
    ident.add_argument("--axis", type=int, default=-1, help="the source axis blocks run along, with codes as .npy "
                       "(default: -1)")
    ident.add_argument("--top", type=int, default=8, metavar="N", help="candidates shown (default 8)")
    ident.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                       help="stop trying candidates after this long (default 60)")
    ident.set_defaults(run=_cmd_identify)
