"""Issue 32, what golden verify, check, merge and info read (items 2, 7, 8, 9, 13 in part, 15, 16):
every file is what its manifest says, arrays included; a FIFO, a device or a symlink to one never
hangs a command; usage errors exit 2 with one line; reports never echo a control character raw and
never print a vector's zero elements one per line.

Expected values are worked by hand here (a planted edit, the hand-decomposed codes of a
vector) or taken from the file system itself; none is copied from the code under test."""

from __future__ import annotations

from mxsim.golden.device.decompose import vector_lines
from mxsim.golden.kinds.registry import suite_from_spec


# --- item 16: a mismatching vector's zero elements -----------------------------------------------
def test_runs_of_zero_codes_take_one_line():
    """Two blocks of 32 MXFP4 elements each, two of them nonzero: 0x3 (E2M1 s=0 e=01 m=1, 1.5) at
    element 2 of block 0 and 0x5 (e=10 m=1, 2 x 1.5 = 3) at element 8 of block 1; every run of
    zeros within a block is one line (the 128 elements of a_elems and b_elems: 8 lines, not 128)."""
    suite = suite_from_spec("dotgeneral", block_a="mxfp4_e2m1", n_blocks=2)
    values = {f.name: 0 for f in suite.inputs}
    values["a_elems"] = (0x3 << 4 * 2) | (0x5 << 4 * (32 + 8))
    values["a_scale"] = 0x7F7F
    lines = vector_lines(suite, values, suite.inputs)
    zero = "each s=0 e=00 m=0 = +0"
    assert lines[lines.index("a_elems = " + f"{values['a_elems']:064x}") + 1:] == [
        f"  a_elems[block 0][0..1]: 0 x2, {zero}",
        "  a_elems[block 0][2]: 3 s=0 e=01 m=1 (2^0) = +1.5",
        f"  a_elems[block 0][3..31]: 0 x29, {zero}",
        f"  a_elems[block 1][0..7]: 0 x8, {zero}",
        "  a_elems[block 1][8]: 5 s=0 e=10 m=1 (2^1) = +3",
        f"  a_elems[block 1][9..31]: 0 x23, {zero}",
        "b_scale = 0000",
        "  b_scale[0..1]: 00 x2, each e=00000000 (2^-127) = +5.87747175e-39...",
        "b_elems = " + "0" * 64,
        f"  b_elems[block 0][0..31]: 0 x32, {zero}",
        f"  b_elems[block 1][0..31]: 0 x32, {zero}",
    ]
    assert lines[:3] == ["a_scale = 7f7f", "  a_scale[0]: 7f e=01111111 (2^0) = +1",
                         "  a_scale[1]: 7f e=01111111 (2^0) = +1"]  # equal nonzero values stay one a line
