// mx_dot: one MX block Dot through the 'aligned' fixed-point datapath of mxsim
// (docs/numerics.md section 4; reference model mxsim.ref.dot.dot with
//  Accumulator(mode="aligned", frac_bits=F, width=W, shift_rounding=truncate|rne,
//  overflow=saturate|wrap), fp32 output rounded to nearest even, no ftz).
//
// Parameters
//   FMT        0 = MXFP8 E4M3 (EW = 8 bits per element), 1 = MXFP4 E2M1 (EW = 4)
//   K          elements per block (element i at bits [i*EW +: EW] of a_elems / b_elems)
//   F          register fraction bits: the register LSB weighs 2^(anchor - F)
//   W          register width, two's complement, sign included
//   SHIFT_RNE  0: a product's bits below the LSB are truncated (magnitude toward zero)
//              1: they are rounded to nearest, ties to even (on the magnitude)
//   WRAP       0: the sum saturates to [-2^(W-1), 2^(W-1)-1] after every addition
//              1: the sum wraps modulo 2^W
// Mutations for testbench teeth (each flips exactly one behaviour):
//   `define MUTATE_SHIFT  -> SHIFT_RNE is inverted (rne where truncate was asked)
//   `define MUTATE_WRAP   -> WRAP is inverted (wrap where saturate was asked)
//
// Datapath
//   element -> (s, M, E, f): f = mantissa bits (E4M3 3, E2M1 1), M includes the hidden bit,
//     E = unbiased exponent; subnormals use the smallest normal exponent (E4M3 -6, E2M1 0).
//   product i: sign sa^sb, magnitude P = Ma*Mb, exponent e_i = Ea + Eb.
//   anchor = max e_i over products whose elements are both finite and nonzero (0 if none).
//   q_i = P * 2^(e_i - fa - fb - (anchor - F)), bits below the LSB truncated or rounded (RNE),
//     sign applied, added in index order 0..K-1 with saturate/wrap after each addition.
//     NaN elements contribute nothing to the register.
//   lsb = anchor - F.
//   result = fp32(acc * 2^lsb * 2^(a_scale-127) * 2^(b_scale-127)), rounded once to nearest
//     even, subnormals kept, overflow -> +-Inf, exact zero -> +0. Scale 0xFF or a NaN element
//     (E4M3 S.1111.111) -> 0x7FC00000. (E4M3 and E2M1 have no Inf.)
//
// Combinational, synthesizable Verilog-2005 (constant-bound loops only).
`default_nettype none
module mx_dot #(
    parameter FMT       = 0,
    parameter K         = 32,
    parameter F         = 8,
    parameter W         = 14,
    parameter SHIFT_RNE = 0,
    parameter WRAP      = 0
) (
    input  wire [K*((FMT == 0) ? 8 : 4)-1:0] a_elems,
    input  wire [K*((FMT == 0) ? 8 : 4)-1:0] b_elems,
    input  wire [7:0]                        a_scale,
    input  wire [7:0]                        b_scale,
    output reg  signed [W-1:0]               acc,
    output reg  signed [15:0]                lsb,
    output reg  signed [15:0]                anchor,
    output reg  [31:0]                       result
);
    localparam EW   = (FMT == 0) ? 8 : 4;      // element code bits
    localparam MW   = (FMT == 0) ? 4 : 2;      // significand bits (hidden bit included)
    localparam FE   = (FMT == 0) ? 3 : 1;      // fraction bits of one element
    localparam FF   = 2 * FE;                  // fraction bits of a product
    localparam PW   = 2 * MW;                  // product significand bits
    localparam LS   = (F > FF) ? (F - FF) : 0; // largest left shift onto the register grid
    localparam QW   = PW + LS;                 // placed product magnitude bits
    localparam SW   = ((QW > W) ? QW : W) + 2; // adder width: |acc| + q never overflows it

`ifdef MUTATE_SHIFT
    localparam RNE  = (SHIFT_RNE != 0) ? 0 : 1;
`else
    localparam RNE  = (SHIFT_RNE != 0) ? 1 : 0;
`endif
`ifdef MUTATE_WRAP
    localparam WRP  = (WRAP != 0) ? 0 : 1;
`else
    localparam WRP  = (WRAP != 0) ? 1 : 0;
`endif

    // ---- element fields (each function reads only the code bits of its format) ------------
    /* verilator lint_off UNUSEDSIGNAL */
    function elem_nan;                        // E4M3 S.1111.111; E2M1 has no NaN
        input [7:0] c;
        elem_nan = (FMT == 0) && (c[6:0] == 7'h7F);
    endfunction

    function elem_sign;
        input [7:0] c;
        elem_sign = (FMT == 0) ? c[7] : c[3];
    endfunction

    function [3:0] elem_sig;                  // M, hidden bit included (0 for a zero)
        input [7:0] c;
        if (FMT == 0) elem_sig = {(c[6:3] != 4'h0), c[2:0]};
        else          elem_sig = {2'b00, (c[2:1] != 2'h0), c[0]};
    endfunction

    function integer elem_exp;                // E, unbiased; subnormals at the min normal E
        input [7:0] c;
        if (FMT == 0) elem_exp = (c[6:3] == 4'h0) ? -6 : $signed({28'b0, c[6:3]}) - 7;
        else          elem_exp = (c[2:1] == 2'h0) ?  0 : $signed({30'b0, c[2:1]}) - 1;
    endfunction
    /* verilator lint_on UNUSEDSIGNAL */

    // ---- datapath ------------------------------------------------------------------------
    integer               i, j, e, amax, sh, r, xe, p, u, biased, sa, sb;
    reg                   have, any_nan, sgn, half, sticky, rs;
    reg [7:0]             ca, cb;
    reg [3:0]             ma, mb;
    reg [PW-1:0]          prod;
    reg [QW-1:0]          q;
    reg signed [SW-1:0]   sum, qs, maxv, minv;
    reg [W-1:0]           mag;
    // helpers of which only some bits are read: shifted values (low bits), 32-bit lsb
    /* verilator lint_off UNUSEDSIGNAL */
    reg [PW-1:0]          prod_r;
    reg [W+24:0]          tmp, tmp_r;
    integer               lsb_i;
    /* verilator lint_on UNUSEDSIGNAL */
    reg [24:0]            sig;

    always @* begin
        // defaults for every temporary, so that no path leaves one unassigned (no latches)
        e = 0; sh = 0; r = 0; ma = 4'h0; mb = 4'h0; prod = {PW{1'b0}}; prod_r = {PW{1'b0}};
        q = {QW{1'b0}}; qs = {SW{1'b0}}; half = 1'b0; sticky = 1'b0; rs = 1'b0;
        tmp = {(W+25){1'b0}}; tmp_r = {(W+25){1'b0}}; sig = 25'h0;

        // anchor: largest exponent of a finite, nonzero product; NaN detection
        have    = 1'b0;
        any_nan = 1'b0;
        amax    = 0;
        for (i = 0; i < K; i = i + 1) begin
            ca = {{(8-EW){1'b0}}, a_elems[i*EW +: EW]};
            cb = {{(8-EW){1'b0}}, b_elems[i*EW +: EW]};
            if (elem_nan(ca) || elem_nan(cb))
                any_nan = 1'b1;
            else if (elem_sig(ca) != 4'h0 && elem_sig(cb) != 4'h0) begin
                e = elem_exp(ca) + elem_exp(cb);
                if (!have || e > amax) amax = e;
                have = 1'b1;
            end
        end

        // accumulation in index order on the grid 2^(amax - F)
        maxv = {{(SW-W+1){1'b0}}, {(W-1){1'b1}}};   //  2^(W-1) - 1
        minv = -maxv - 1;                           // -2^(W-1)
        sum  = {SW{1'b0}};
        for (i = 0; i < K; i = i + 1) begin
            ca = {{(8-EW){1'b0}}, a_elems[i*EW +: EW]};
            cb = {{(8-EW){1'b0}}, b_elems[i*EW +: EW]};
            ma = elem_sig(ca);
            mb = elem_sig(cb);
            if (!elem_nan(ca) && !elem_nan(cb) && ma != 4'h0 && mb != 4'h0) begin
                prod = ma[MW-1:0] * mb[MW-1:0];
                e    = elem_exp(ca) + elem_exp(cb);
                sh   = e - FF - amax + F;              // <= F - FF, as e <= amax
                if (sh >= 0)
                    q = {{(QW-PW){1'b0}}, prod} << sh;
                else begin
                    r      = -sh;
                    q      = {{(QW-PW){1'b0}}, prod >> r};
                    prod_r = prod >> (r - 1);
                    half   = prod_r[0];
                    sticky = (prod & ~({PW{1'b1}} << (r - 1))) != 0;
                    if (RNE && half && (sticky || q[0]))
                        q = q + 1'b1;
                end
                qs = $signed({{(SW-QW){1'b0}}, q});
                if (elem_sign(ca) ^ elem_sign(cb))
                    sum = sum - qs;
                else
                    sum = sum + qs;
                if (WRP)
                    sum = {{(SW-W){sum[W-1]}}, sum[W-1:0]};
                else if (sum > maxv)
                    sum = maxv;
                else if (sum < minv)
                    sum = minv;
            end
        end
        acc    = sum[W-1:0];
        lsb_i  = amax - F;
        anchor = amax[15:0];
        lsb    = lsb_i[15:0];

        // result = acc * 2^(lsb + XA + XB), rounded once to fp32 (RNE, subnormals, overflow Inf)
        sa  = {24'b0, a_scale};
        sb  = {24'b0, b_scale};
        xe  = amax - F + sa + sb - 254;             // weight of the register LSB
        sgn = acc[W-1];
        mag = sgn ? -acc : acc;                     // |-2^(W-1)| fits W unsigned bits
        p   = 0;
        for (j = 0; j < W; j = j + 1)
            if (mag[j]) p = j;
        u = p + xe - 23;                            // ulp exponent of the result
        if (u < -149) u = -149;
        r = u - xe;                                 // register bits below the ulp (>= p - 23)
        if (r <= 0) begin
            tmp = {25'b0, mag} << (-r);
            sig = tmp[24:0];
        end else begin
            tmp    = {25'b0, mag} >> r;
            tmp_r  = {25'b0, mag} >> (r - 1);
            half   = tmp_r[0];
            sticky = ({25'b0, mag} & ~({(W+25){1'b1}} << (r - 1))) != 0;
            rs     = half && (sticky || tmp[0]);
            sig    = tmp[24:0] + {24'b0, rs};
        end
        if (sig[24]) begin                          // rounding carried into a new binade
            sig = sig >> 1;
            u   = u + 1;
        end
        biased = u + 150;
        if (a_scale == 8'hFF || b_scale == 8'hFF || any_nan)
            result = 32'h7FC0_0000;
        else if (mag == {W{1'b0}})
            result = 32'h0000_0000;
        else if (sig[23] && biased >= 255)
            result = {sgn, 8'hFF, 23'h0};
        else if (sig[23])
            result = {sgn, biased[7:0], sig[22:0]};
        else
            result = {sgn, 8'h00, sig[22:0]};
    end
endmodule
`default_nettype wire
