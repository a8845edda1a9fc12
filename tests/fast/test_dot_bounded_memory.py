"""``mxsim.dot`` and ``dot_general_blocks`` run in chunks of :data:`mxsim.fast.dot.DOT_CHUNK`
elements: bounded memory whatever M, N and K are, and the same bits as the reference.

Oracles: the reference model (:func:`mxsim.ref.dot.dot_general`, integers and Fractions only) on
the blocks read straight from the tensors' code arrays (``test_dot_api_cli.reference``), field by
field; and ``tracemalloc`` (which tracks NumPy's allocations) for the peak memory.
"""

from __future__ import annotations

import tracemalloc
import zlib

import numpy as np
import pytest
from test_dot_api_and_command import assert_matches_reference, broadcast_index, tensor_blocks
from test_dot_fast_against_reference import check_general, make_operand, route_name

import mxsim
from mxsim import Accumulator, MXTensor, cli, tensor_dot
from mxsim.options.accumulate import PRESETS
from mxsim.fast import dot as fast_dot
from mxsim.fileformat import save
from mxsim.formats import get_format
from mxsim.ref import dot as ref_dot

MB = 1 << 20


# --- the memory bound ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def large_pair():
    """(64, 1, 4096) x (512, 4096) MXFP8 E4M3: 2^27 element pairs. Unchunked, the broadcast copies
    of the two operands alone take 2 x 128 MiB, and the per-block results of its 2^22 block pairs
    (about 45 bytes each) another 180 MiB."""
    rng = np.random.default_rng(20)
    a = mxsim.quantize(rng.standard_normal((64, 1, 4096)).astype(np.float32), "mxfp8_e4m3")
    b = mxsim.quantize(rng.standard_normal((512, 4096)).astype(np.float32), "mxfp8_e4m3")
    return a, b


def peak_of(function):
    """(result, peak bytes traced while ``function`` ran)."""
    tracemalloc.start()
    try:
        result = function()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("acc,details", [
    (Accumulator(), False),
    (PRESETS["blackwell_fp8_like"], False),
    (Accumulator(mode="fp32_sequential"), False),
    (Accumulator(), True),
    (PRESETS["mxdotp_fp8"], False),
    (PRESETS["blackwell_mxf8f6f4"], False),
], ids=["exact", "aligned", "fp32_sequential", "exact-details", "fused-fixed", "fused-max"])
def test_peak_memory_is_bounded(large_pair, acc, details):
    """The peak stays far below the 476 MiB measured before the chunking: at the default DOT_CHUNK
    (2^24) it is about 70 MiB (measured), plus, with details, the per-block arrays returned (28
    bytes per block)."""
    a, b = large_pair
    result, peak = peak_of(lambda: mxsim.dot(a, b, acc, details=details))
    returned = sum(x.nbytes for x in result[2:]) if details else 0
    assert peak - returned < 100 * MB, f"peak {peak / MB:.0f} MiB beyond the {returned / MB:.0f} MiB returned"
    # no silent wrong answer: two results against the reference
    values = result.values if details else result
    for index in ((0, 0), (63, 511)):
        want = ref_dot.dot_general(tensor_blocks(a, broadcast_index(index, a.codes.shape[:-1])),
                                   tensor_blocks(b, broadcast_index(index, b.codes.shape[:-1])), a.fmt, b.fmt, acc)
        assert int(values[index].view(np.uint32)) == want.code, index


# --- the same bits as the reference, chunk boundaries crossed ------------------------------------
CHUNK_BLOCKS = 5  # DOT_CHUNK in these tests: 5 blocks of each operand (5 x the block size)


def random_tensor(rng, fmt_name, lead: tuple, k: int, tensor_scale=None) -> MXTensor:
    """Random codes (zeros, NaN/Inf codes and edge scales mixed in) of shape ``lead + (k,)``; the
    padding of a partial last block is +0, as ``mxsim.dot`` treats it."""
    fmt = get_format(fmt_name, kind="block")
    n_blocks = -(-k // fmt.block_size)
    rows = int(np.prod(lead, dtype=np.int64))
    op = make_operand(rng, fmt_name, rows * n_blocks, p_zero=0.1, p_special=0.01, p_edge_scale=0.01, scale_spread=6)
    codes = op.codes.reshape(lead + (n_blocks * fmt.block_size,)).copy()
    codes[..., k:] = 0
    subscales = None if op.subscales is None else op.subscales.reshape(lead + (n_blocks, fmt.subblocks))
    return MXTensor.from_codes(op.scales.reshape(lead + (n_blocks,)), codes, fmt_name, shape=lead + (k,),
                               subscales=subscales, tensor_scale=tensor_scale)


# Every route of the fast path (each checked with route_name), and both kinds of across-blocks sum.
ROUTED = [
    ("mxfp8_e4m3", "mxfp8_e4m3", Accumulator(), "_exact_floats"),
    ("mxfp4_e2m1", "mxfp8_e4m3", Accumulator(across_blocks="exact", output="bf16"), "_exact_pairs"),
    ("mxfp8_e5m2", "mxfp8_e5m2", Accumulator(across_blocks="exact"), "_exact_python_ints"),
    ("mxfp8_e4m3", "mxfp8_e4m3", Accumulator(mode="aligned", frac_bits=10, width=8), "_aligned_floats"),
    ("mxfp8_e5m2", "mxfp8_e5m2", Accumulator(mode="aligned", frac_bits=20, width=23, overflow="wrap",
                                             shift_rounding="rne", output="fp16"), "_aligned"),
    ("mxfp8_e4m3", "mxfp8_e5m2", Accumulator(mode="aligned", frac_bits=60, width=80, across_blocks="exact"),
     "_by_reference"),
    ("mx9", "mx6", Accumulator(mode="fp32_sequential", output_rounding="rup"), "_fp32_sequential"),
    ("nvfp4", "nvfp4", Accumulator(across_blocks="exact", output_rounding="rtz"), "_exact_pairs"),
]
# (lead shape of a, of b, K): whole rows per chunk with a remainder, rows cut into uneven pieces,
# operands used as they are (no broadcasting) and broadcast both ways, and a scalar-like row.
SHAPES = [
    ((3, 1), (4,), 200),  # 7 or 13 blocks per row: each row in 2 or 3 pieces (3 + 4, 4 + 4 + 5)
    ((7,), (7,), 40),  # 2 or 3 blocks: 2 whole rows per chunk (then 1), or 1
    ((2, 1, 3), (5, 1), 40),  # (2, 5, 3) rows gathered from both operands
    ((), (4, 3), 72),  # one row of a against 12 of b
]


class ChunkLog:
    """Wraps _BlockDotter.run: the number of block pairs of every chunk."""

    def __init__(self, monkeypatch):
        self.sizes = []
        run = fast_dot._BlockDotter.run

        def logged(dotter, a, b, out):
            self.sizes.append(a.codes.shape[0])
            return run(dotter, a, b, out)

        monkeypatch.setattr(fast_dot._BlockDotter, "run", logged)


@pytest.mark.parametrize("fmt_a,fmt_b,acc,route", ROUTED, ids=[f"{r[3]}-{r[0]}x{r[1]}" for r in ROUTED])
def test_chunked_dot_equals_the_reference(monkeypatch, fmt_a, fmt_b, acc, route):
    """With DOT_CHUNK at 5 blocks, every chunk holds at most 5 block pairs, and mxsim.dot (plain
    and with details) equals the reference in every field, across all chunk boundaries."""
    assert route_name(fmt_a, fmt_b, acc) == route
    k = get_format(fmt_a).block_size
    monkeypatch.setattr(fast_dot, "DOT_CHUNK", CHUNK_BLOCKS * k)
    log = ChunkLog(monkeypatch)
    rng = np.random.default_rng(zlib.crc32(f"{fmt_a} {fmt_b} {route}".encode()))
    scale = {"tensor_scale": 0.375} if get_format(fmt_a).tensor_scale else {}
    for lead_a, lead_b, length in SHAPES:
        a = random_tensor(rng, fmt_a, lead_a, length, **scale)
        b = random_tensor(rng, fmt_b, lead_b, length, **({"tensor_scale": 3.0} if scale else {}))
        log.sizes.clear()
        assert_matches_reference(a, b, acc)
        n_blocks = a.scales.shape[-1]
        rows = int(np.prod(np.broadcast_shapes(lead_a, lead_b)))
        assert max(log.sizes) <= CHUNK_BLOCKS and sum(log.sizes) == 2 * rows * n_blocks  # plain + details


def test_general_blocks_in_chunks_equal_the_reference(monkeypatch):
    """dot_general_blocks (every BlockDots field, including the exact block values) in chunks:
    rows of 3 blocks two to a chunk, and rows of 11 blocks in pieces of 3 or 4."""
    monkeypatch.setattr(fast_dot, "DOT_CHUNK", 7 * 32)
    log = ChunkLog(monkeypatch)
    rng = np.random.default_rng(21)
    for rows, n in ((9, 3), (4, 11)):
        a = make_operand(rng, "mxfp8_e4m3", rows * n, p_zero=0.1, p_special=0.02, scale_spread=8)
        b = make_operand(rng, "mxfp8_e5m2", rows * n, p_zero=0.1, p_special=0.02, scale_spread=8)
        for acc in (Accumulator(across_blocks="exact"), Accumulator(mode="aligned", frac_bits=12, width=16),
                    Accumulator(mode="fp32_sequential", output="bf16")):
            log.sizes.clear()
            check_general(a, b, acc, rows)
            assert max(log.sizes) <= 7 and sum(log.sizes) == rows * n


def test_chunked_equals_one_chunk(monkeypatch):
    """A larger random product (12 x 20 rows of 32 blocks, broadcast): chunks of 7 blocks give the
    same bits in every returned field as one chunk of everything."""
    rng = np.random.default_rng(22)
    a = random_tensor(rng, "mxfp8_e4m3", (12, 1), 1000)
    b = random_tensor(rng, "mxfp8_e4m3", (20,), 1000)
    for acc in (Accumulator(), PRESETS["hopper_fp8_like"], Accumulator(mode="fp32_sequential", across_blocks="exact")):
        whole = mxsim.dot(a, b, acc, details=True)
        monkeypatch.setattr(fast_dot, "DOT_CHUNK", 7 * 32)
        pieces = mxsim.dot(a, b, acc, details=True)
        monkeypatch.undo()
        for field in mxsim.DotResult._fields:
            assert np.array_equal(getattr(whole, field).view(np.uint8), getattr(pieces, field).view(np.uint8)), field


def test_cli_asks_for_the_per_block_details_only_with_details(tmp_path, monkeypatch):
    """`mxsim dot` without --details does not build the O(M * N * n_blocks) per-block arrays; the
    results it writes are mxsim.dot's either way."""
    rng = np.random.default_rng(23)
    a, b = random_tensor(rng, "mxfp8_e4m3", (3, 1), 70), random_tensor(rng, "mxfp8_e4m3", (2,), 70)
    save(a, tmp_path / "a.mx")
    save(b, tmp_path / "b.mx")
    asked = []
    dot = tensor_dot.dot  # the CLI imports it from its module when `mxsim dot` runs
    monkeypatch.setattr(
        tensor_dot, "dot", lambda *args, details, **kw: asked.append(details) or dot(*args, details=details, **kw)
    )
    for extra in ([], ["--details", str(tmp_path / "d.npz")]):
        assert cli.main(["dot", str(tmp_path / "a.mx"), str(tmp_path / "b.mx"), str(tmp_path / "out.npy"), *extra]) == 0
        assert np.array_equal(np.load(tmp_path / "out.npy").view(np.uint32), mxsim.dot(a, b).view(np.uint32))
    assert asked == [False, True]
