// mx_elem_encode: one IEEE binary32 value x, times 2^-XSHIFT, to the code of an OCP float element
// format (docs/numerics.md section 1; reference model mxsim.ref.encode.encode(x, fmt, rounding,
// overflow)). The block quantizer (mx_block_quant) uses it with XSHIFT = the block's scale exponent;
// a plain encode ties XSHIFT to 0.
//
// Parameters
//   EB, MB    exponent and mantissa bits of the element (bias 2^(EB-1) - 1): E4M3 4,3; E5M2 5,2;
//             E2M3 2,3; E3M2 3,2; E2M1 2,1. The code is 1 + EB + MB bits, the sign on top.
//   SPECIALS  0 'ieee' (Inf at the all-ones exponent field, NaN S.1..1.10..0; E5M2),
//             1 'fn'   (no Inf, NaN only S.1..1.1..1; OCP E4M3),
//             2 'none' (every code finite; FP6, FP4)
//   RM        rounding, RISC-V frm encoding: 0 RNE, 1 RTZ, 2 RDN, 3 RUP, 4 RNA (ties away)
//   OVF_IEEE  0 'saturate': overflow gives +-max finite; 1 'ieee': +-max where RM rounds toward
//             zero for the sign (RTZ; RDN of a positive; RUP of a negative), else (and always for
//             an Inf input) Inf where the format has it, else NaN where it has it, else +-max
// Behaviour
//   The value is rounded once with RM on the element's grid at its own binade (the smallest
//   normal binade for subnormals); a carry to the next binade is taken; then overflow is checked
//   against the largest finite value (fn: S.1..1.1..10; ieee: the exponent field below all ones).
//   +-0 and values that round to zero give a zero of their sign (-0 is 1 << (EB+MB)). An Inf input
//   is an overflow. A NaN input gives the NaN code with its sign ('none' formats have no NaN: the
//   reference refuses the input; here it gives +-max, a value no suite checks).
//   fp32 subnormal inputs are exact (not flushed).
//
// Datapath: x = sig * 2^(ex - 23) with sig the 24-bit significand (hidden bit, 0 for subnormals)
// and ex = its exponent - XSHIFT; p = leading one of sig; the binade L = ex - 23 + p, clamped
// below at EMIN; the r = max(L, EMIN) - MB - ex + 23 bits of sig below the grid give the round bit
// and the sticky bit; one increment; carry; overflow; pack.
// Combinational, synthesizable Verilog-2005 (constant-bound loops only).
`default_nettype none
module mx_elem_encode #(
    parameter EB       = 4,
    parameter MB       = 3,
    parameter SPECIALS = 1,
    parameter RM       = 0,
    parameter OVF_IEEE = 0
) (
    input  wire [31:0]       x,
    input  wire signed [9:0] xshift,     // the code is of x * 2^-xshift
    output reg  [EB+MB:0]    code
);
    /*verilator no_inline_module*/  // one C++ class for the K lanes of mx_block_quant: its build is 6x shorter
    localparam BIAS = (1 << (EB - 1)) - 1;
    localparam EMIN = 1 - BIAS;                                        // exponent of the smallest normal binade
    localparam TOPF = (SPECIALS == 0) ? (1 << EB) - 2 : (1 << EB) - 1; // exponent field of max finite
    localparam TOPM = (SPECIALS == 1) ? (1 << MB) - 2 : (1 << MB) - 1; // its mantissa field
    localparam EMAX = TOPF - BIAS;
    localparam [EB+MB-1:0] MAXMAG = (TOPF << MB) | TOPM;               // the magnitude bits of +-max
    localparam [EB+MB-1:0] INFMAG = ((1 << EB) - 1) << MB;             // ieee: Inf
    localparam [EB+MB-1:0] NANMAG = (SPECIALS == 0) ? INFMAG | (1 << (MB - 1)) : {(EB+MB){1'b1}};

    reg         s, nan, inf, rb, st, inc, toward_zero;
    reg  [23:0] sig;
    reg  [24:0] q;
    integer     ex, p, j, lead, e, r;
    reg  [EB+MB-1:0] ovf_mag;

    always @* begin
        s   = x[31];
        nan = (x[30:23] == 8'hFF) && (x[22:0] != 23'h0);
        inf = (x[30:23] == 8'hFF) && (x[22:0] == 23'h0);
        sig = {(x[30:23] != 8'h00), x[22:0]};
        ex  = ((x[30:23] == 8'h00) ? -126 : $signed({24'b0, x[30:23]}) - 127) - xshift;

        p = 0;                                      // leading one of sig
        for (j = 0; j < 24; j = j + 1)
            if (sig[j]) p = j;
        lead = ex - 23 + p;                         // floor(log2 |x|)
        e    = (lead < EMIN) ? EMIN : lead;         // the binade whose grid the value is rounded on
        r    = e - MB - ex + 23;                    // bits of sig below the grid

        rb = 1'b0;
        st = 1'b0;
        if (r <= 0)
            q = {1'b0, sig} << (-r);                // exact: on or above the grid
        else if (r > 24) begin                      // every bit of sig lies below the round bit
            q  = 25'h0;
            st = (sig != 24'h0);
        end else begin
            q  = {1'b0, sig} >> r;
            rb = sig[r - 1];
            st = (sig & ~({24{1'b1}} << (r - 1))) != 24'h0;
        end
        case (RM)
            0:       inc = rb && (st || q[0]);      // RNE
            1:       inc = 1'b0;                    // RTZ
            2:       inc = s && (rb || st);         // RDN
            3:       inc = !s && (rb || st);        // RUP
            default: inc = rb;                      // RNA
        endcase
        q = q + {24'b0, inc};
        if (q[MB + 1]) begin                        // rounding carried into the next binade
            q = q >> 1;
            e = e + 1;
        end

        toward_zero = (RM == 1) || (RM == 2 && !s) || (RM == 3 && s);
        if (OVF_IEEE && (inf || !toward_zero) && SPECIALS == 0)
            ovf_mag = INFMAG;
        else if (OVF_IEEE && (inf || !toward_zero) && SPECIALS == 1)
            ovf_mag = NANMAG;
        else
            ovf_mag = MAXMAG;

        if (nan)
            code = {s, (SPECIALS == 2) ? MAXMAG : NANMAG};
        else if (inf)
            code = {s, ovf_mag};
        else if (x[30:0] == 31'h0 || q == 25'h0)
            code = {s, {(EB+MB){1'b0}}};            // a zero of the input's sign
        else if (q[MB] && (e > EMAX || (e == EMAX && q[MB-1:0] > TOPM)))
            code = {s, ovf_mag};                    // overflow
        else if (!q[MB])
            code = {s, {EB{1'b0}}, q[MB-1:0]};      // subnormal (e = EMIN)
        else
            code = {s, e[EB-1:0] + BIAS[EB-1:0], q[MB-1:0]};
    end
endmodule
`default_nettype wire
