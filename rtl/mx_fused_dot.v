// mx_fused_dot: one fused multiply-accumulate step of an MXDOTP-style unit (docs/numerics.md section 4.1;
// reference model mxsim.ref.fused with Accumulator.preset("mxdotp_fp8", output_rounding=...)):
//
//   D = C + sum_{i<N} a_i * b_i * 2^(XA + XB),   rounded once to fp32
//
// N FP8 E4M3 products sharing one E8M0 scale per operand (XA = a_scale - 127, XB = b_scale - 127),
// summed exactly on the fixed grid 2^(XA + XB - F); the fp32 accumulator input C is aligned to
// that grid exactly (its bits below the grid take part in the rounding); one rounding to fp32.
//
// Parameters
//   N          products per step (element i at bits [8*i +: 8] of a_elems / b_elems)
//   F          grid fraction bits: the grid LSB weighs 2^(XA + XB - F); F >= 18 keeps every E4M3
//              product exact on the grid (MXDOTP: 34)
//   USE_BYPASS 1: if C's LSB 2^(e_C - 23) lies more than BYPASS bits above the grid LSB, D = C
//   BYPASS     (MXDOTP: 70)
//   CZE        the exponent e_C of a zero C (MXDOTP reads exponent field 0: -127; fp32's -126)
//   RM         output rounding, RISC-V frm encoding: 0 RNE, 1 RTZ, 2 RDN, 3 RUP, 4 RNA (RMM)
//   NAN_BITS   the NaN result (MXDOTP: 32'h7FC00000)
//   PASS_C     1: a step whose product sum is exactly zero gives D = C, -0 included (MXDOTP;
//              zero_product_sum="pass_c"); 0: C + 0, so a zero C gives +0 ("add")
//   PASS_BELOW with PASS_C: C is passed only where its LSB lies more than PASS_BELOW bits below the
//              grid LSB (lc - g < -PASS_BELOW; zero_product_sum="pass_c_outside_window": 24), else
//              C + 0; -1: always ("pass_c")
// Behaviour
//   NaN if C is NaN, a scale is 0xFF, or an element is NaN (E4M3 S.1111.111); else +-Inf if C is
//   +-Inf (E4M3 has no Inf); else the bypass; else, a zero product sum: C passed (PASS_C, PASS_BELOW), or
//   C + 0 (+0 for a zero C); else the
//   exact sum C + products: exactly zero gives +0, otherwise it is rounded with RM, subnormals kept, a value below the smallest subnormal
//   gives a zero of its sign, IEEE overflow: +-Inf, or +-max finite where RM rounds toward zero
//   for that sign (RTZ; RDN of a positive; RUP of a negative).
// Mutations for testbench teeth (each flips exactly one behaviour):
//   `define MUTATE_NO_FUSION  the product sum is rounded to fp32 (with RM) before C is added
//   `define MUTATE_NO_BYPASS  the bypass rule is never applied
//   `define MUTATE_CZERO      a zero C counts with exponent -126 instead of CZE
//
// Datapath: S = sum of the products in grid units (exact, signed); C = (-1)^sc * mc * 2^(e_C - 23)
// placed on the finer grid U = 2^(XA + XB - F - GB) (GB = 27 guard bits): exactly when its LSB is
// on or above U, else truncated toward -inf with a sticky bit (C is then below 2^(grid - 4), so its
// lost bits lie below the round bit of any result with S != 0); T = S * 2^GB + C; sign-magnitude,
// leading-one search, one rounding. S = 0 gives C itself (with PASS_C = 0, +0 for a zero C).
//
// Combinational, Verilog-2005 (constant-bound loops only).
`default_nettype none
module mx_fused_dot #(
    parameter N          = 8,
    parameter F          = 34,
    parameter USE_BYPASS = 1,
    parameter BYPASS     = 70,
    parameter CZE        = -127,
    parameter RM         = 0,
    parameter [31:0] NAN_BITS = 32'h7FC0_0000,
    parameter PASS_C     = 1,
    parameter PASS_BELOW = 24
) (
    input  wire [8*N-1:0] a_elems,
    input  wire [8*N-1:0] b_elems,
    input  wire [7:0]     a_scale,
    input  wire [7:0]     b_scale,
    input  wire [31:0]    c,
    output reg  [31:0]    d
);
    localparam GB  = 27;                        // guard bits below the product grid
    localparam PSW = F + 18;                    // |product| in grid units < 2^PSW (Ea+Eb <= 16)
    localparam SW  = PSW + 6;                   // signed product sum (N <= 16)
    // C's LSB relative to U: at most 104 - (-254 - F) + GB; a fp32 rounding of S (MUTATE_NO_FUSION)
    // puts its LSB at most 24 below the grid: 24 more
    localparam SHMAX = 358 + F + GB + 24;
    localparam TW  = SHMAX + 24 + 2;            // T: C on U plus S * 2^GB, with a carry and sign

`ifdef MUTATE_CZERO
    localparam CZERO = -126;
`else
    localparam CZERO = CZE;
`endif
`ifdef MUTATE_NO_BYPASS
    localparam BYP = 0;
`else
    localparam BYP = USE_BYPASS;
`endif

    initial begin
        if (F < 18 || N < 1 || N > 16 || RM < 0 || RM > 4) begin
            $display("ERROR: mx_fused_dot needs F >= 18, 1 <= N <= 16, 0 <= RM <= 4 (F=%0d N=%0d RM=%0d)", F, N, RM);
            $finish;
        end
    end

    // ---- E4M3 element fields ---------------------------------------------------------------
    function elem_nan;
        input [7:0] x;
        elem_nan = (x[6:0] == 7'h7F);
    endfunction

    function [3:0] elem_sig;                    // M, hidden bit included (0 for a zero)
        input [7:0] x;
        elem_sig = {(x[6:3] != 4'h0), x[2:0]};
    endfunction

    function integer elem_exp;                  // E unbiased; subnormals at -6
        input [7:0] x;
        elem_exp = (x[6:3] == 4'h0) ? -6 : $signed({28'b0, x[6:3]}) - 7;
    endfunction

    // ---- one rounding of (-1)^sgn * (mag + sticky) * 2^lsb to fp32 -------------------------
    // sticky: a nonzero fraction of a unit is lost below mag (only when the round bit is above it)
    function [31:0] round_fp32;
        input          sgn;
        input [TW-1:0] mag;
        input          sticky;
        input integer  lsb;
        integer p, u, r, j, biased;
        reg [TW-1:0] sh, sh1, top;
        reg [24:0] sig;
        reg rb, st, inc;
        begin
            p = 0;                              // leading one of mag: binary search
            top = mag;
            for (j = 1 << ($clog2(TW) - 1); j >= 1; j = j / 2)
                if ((top >> j) != {TW{1'b0}}) begin
                    top = top >> j;
                    p   = p + j;
                end
            u = p + lsb - 23;                   // ulp exponent of the result
            if (u < -149) u = -149;
            r = u - lsb;                        // bits of mag below the ulp
            rb = 1'b0;
            st = sticky;
            if (r <= 0) begin
                sh  = mag << (-r);
                sig = sh[24:0];
            end else begin
                sh  = mag >> r;
                sh1 = mag >> (r - 1);
                sig = sh[24:0];
                rb  = sh1[0];
                st  = sticky | ((mag & ~({TW{1'b1}} << (r - 1))) != {TW{1'b0}});
            end
            case (RM)
                0:       inc = rb & (st | sig[0]);
                1:       inc = 1'b0;
                2:       inc = sgn & (rb | st);
                3:       inc = ~sgn & (rb | st);
                default: inc = rb;
            endcase
            sig = sig + {24'b0, inc};
            if (sig[24]) begin
                sig = sig >> 1;
                u   = u + 1;
            end
            biased = u + 150;
            if (sig[23] && biased >= 255) begin
                if (RM == 1 || (RM == 2 && !sgn) || (RM == 3 && sgn))
                    round_fp32 = {sgn, 8'hFE, 23'h7F_FFFF};
                else
                    round_fp32 = {sgn, 8'hFF, 23'h0};
            end else if (sig[23])
                round_fp32 = {sgn, biased[7:0], sig[22:0]};
            else
                round_fp32 = {sgn, 8'h00, sig[22:0]};
        end
    endfunction

    // ---- datapath ----------------------------------------------------------------------------
    integer i, e, g, ec, lc, shc, lp, xa, xb;
    reg any_nan, c_nan, c_inf, c_zero, csticky, sgn, st;
    reg [7:0] ca, cb;
    reg [7:0] prod;
    reg signed [SW-1:0] s;
    reg signed [SW-1:0] q;
    reg [23:0] mc;
    reg [TW-1:0] cu, mag, smag;
    reg signed [TW-1:0] t, cs;
    reg [31:0] pf;

    always @* begin
        // defaults, so that no path leaves a temporary unassigned
        e = 0; lp = 0; shc = 0; prod = 8'h0; q = {SW{1'b0}}; cu = {TW{1'b0}}; csticky = 1'b0;
        mag = {TW{1'b0}}; smag = {TW{1'b0}}; t = {TW{1'b0}}; cs = {TW{1'b0}}; sgn = 1'b0; st = 1'b0;
        pf = 32'h0;

        // products on the grid 2^(XA + XB - F), exact
        any_nan = (a_scale == 8'hFF) || (b_scale == 8'hFF);
        s = {SW{1'b0}};
        for (i = 0; i < N; i = i + 1) begin
            ca = a_elems[8*i +: 8];
            cb = b_elems[8*i +: 8];
            if (elem_nan(ca) || elem_nan(cb))
                any_nan = 1'b1;
            else begin
                prod = elem_sig(ca) * elem_sig(cb);
                e    = elem_exp(ca) + elem_exp(cb) - 6 + F;     // >= F - 18 >= 0
                q    = $signed({{(SW-8){1'b0}}, prod}) <<< e;
                s    = (ca[7] ^ cb[7]) ? s - q : s + q;
            end
        end
        xa = $signed({24'b0, a_scale}) - 127;
        xb = $signed({24'b0, b_scale}) - 127;
        g  = xa + xb - F;                                        // exponent of the grid LSB

        // C
        c_nan  = (c[30:23] == 8'hFF) && (c[22:0] != 23'h0);
        c_inf  = (c[30:23] == 8'hFF) && (c[22:0] == 23'h0);
        c_zero = (c[30:0] == 31'h0);
        mc     = {(c[30:23] != 8'h00), c[22:0]};
        ec     = c_zero ? CZERO : (c[30:23] == 8'h00) ? -126 : $signed({24'b0, c[30:23]}) - 127;
        lc     = ec - 23;                                        // exponent of C's LSB

        if (any_nan || c_nan)
            d = NAN_BITS;
        else if (c_inf)
            d = c;
        else if (BYP != 0 && lc - g > BYPASS)
            d = c;                                               // the bypass: D = C unchanged
        else if (s == {SW{1'b0}})
            d = (c_zero && !(PASS_C != 0 && (PASS_BELOW < 0 || lc - g < -PASS_BELOW)))
                ? 32'h0000_0000 : c;                             // D = C (pass_c), or C + 0
        else begin
`ifdef MUTATE_NO_FUSION
            // the product sum rounded to fp32 first, then added to C as a 24-bit significand
            pf = round_fp32(s[SW-1], s[SW-1] ? -{{(TW-SW){s[SW-1]}}, s} : {{(TW-SW){1'b0}}, s}, 1'b0, g);
            if (pf[30:23] == 8'hFF) begin
                d = pf;
            end else begin
                lp = (pf[30:23] == 8'h00) ? -149 : $signed({24'b0, pf[30:23]}) - 150;
                s  = $signed({{(SW-24){1'b0}}, (pf[30:23] != 8'h00), pf[22:0]});
                if (pf[31]) s = -s;
                g  = lp;
            end
`endif
            // C on the grid U = 2^(g - GB): exact, or floored with a sticky bit
            shc = lc - (g - GB);
            if (shc >= 0)
                cu = {{(TW-24){1'b0}}, mc} << shc;
            else begin
                cu      = {{(TW-24){1'b0}}, mc} >> (-shc);
                csticky = ({{(TW-24){1'b0}}, mc} & ~({TW{1'b1}} << (-shc))) != {TW{1'b0}};
            end
            cs = c[31] ? -$signed(cu + {{(TW-1){1'b0}}, csticky}) : $signed(cu);
            t  = ($signed({{(TW-SW){s[SW-1]}}, s}) <<< GB) + cs;  // exact value: t + (0 or a fraction)
            sgn = t[TW-1];
            if (!sgn) begin
                mag = t;
                st  = csticky;
            end else begin
                smag = -t;
                mag  = csticky ? smag - 1'b1 : smag;
                st   = csticky;
            end
`ifdef MUTATE_NO_FUSION
            if (pf[30:23] != 8'hFF)
`endif
            if (mag == {TW{1'b0}} && !st)
                d = 32'h0000_0000;
            else
                d = round_fp32(sgn, mag, st, g - GB);
        end
    end
endmodule
`default_nettype wire
