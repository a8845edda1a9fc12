// mx_block_quant: one block of K IEEE binary32 values to an OCP MX block: an E8M0 scale and K
// element codes (docs/numerics.md section 2 with the default options; reference model
// mxsim.ref.block.quantize_block(values, fmt)).
//
// Parameters
//   EB, MB, SPECIALS  the element format, as for mx_elem_encode (MXFP8 E4M3 4,3,1; MXFP8 E5M2
//                     5,2,0; MXFP6 E2M3 2,3,2; MXFP6 E3M2 3,2,2; MXFP4 E2M1 2,1,2)
//   K                 elements per block; x[32*i +: 32] is input i, codes[EW*i +: EW] its code
//                     (EW = 1 + EB + MB)
// Behaviour
//   NaN block: a NaN or an Inf anywhere (specials='block', inf_policy='nan') gives scale 0xFF,
//     scale_exp -128, and every element the format's positive NaN code (E4M3 0x7F, E5M2 0x7E;
//     0 for formats without NaN).
//   Scale (the OCP floor rule, section 2): E = floor(log2 amax) - EMAX_ELEM, amax the largest
//     magnitude (fp32 subnormals exact), clamped to [-127, 127]; an all-zero block gets E = -127.
//     scale = E + 127, scale_exp = E (16-bit two's complement).
//   Elements: x_i / 2^E, exact, rounded to nearest even on the element grid, saturating at +-max
//     (mx_elem_encode with RM = RNE, OVF_IEEE = 0); -0 and negative values that round to zero keep
//     their sign.
// fp32 magnitudes order like their bit patterns, so amax is the largest x[30:0]; floor(log2) is
// the exponent field - 127, or, for a subnormal, the leading one of the fraction - 149.
// Combinational, synthesizable Verilog-2005 (constant-bound loops only).
`default_nettype none
module mx_block_quant #(
    parameter EB       = 4,
    parameter MB       = 3,
    parameter SPECIALS = 1,
    parameter K        = 32
) (
    input  wire [32*K-1:0]         x,
    output reg  [7:0]              scale,
    output reg  signed [15:0]      scale_exp,
    output wire [(1+EB+MB)*K-1:0]  codes
);
    localparam EW        = 1 + EB + MB;
    localparam BIAS      = (1 << (EB - 1)) - 1;
    localparam TOPF      = (SPECIALS == 0) ? (1 << EB) - 2 : (1 << EB) - 1;
    localparam EMAX_ELEM = TOPF - BIAS;                 // floor(log2) of the element's max finite
    localparam [EW-1:0] NAN_BLOCK_CODE =
        (SPECIALS == 0) ? ((((1 << EB) - 1) << MB) | (1 << (MB - 1))) :
        (SPECIALS == 1) ? ((1 << (EB + MB)) - 1) : 0;

    integer      i, j, lead, e;
    reg          nan_block;
    reg  [30:0]  amax;
    reg  signed [9:0] shift;

    always @* begin
        nan_block = 1'b0;
        amax      = 31'h0;
        for (i = 0; i < K; i = i + 1) begin
            if (x[32*i + 23 +: 8] == 8'hFF)
                nan_block = 1'b1;                       // NaN, or Inf under inf_policy='nan'
            else if (x[32*i +: 31] > amax)
                amax = x[32*i +: 31];
        end
        if (amax[30:23] != 8'h00)
            lead = $signed({24'b0, amax[30:23]}) - 127;
        else begin
            lead = -150;                                 // (a zero block: E = -127 below)
            for (j = 0; j < 23; j = j + 1)
                if (amax[j]) lead = j - 149;
        end
        e = lead - EMAX_ELEM;
        if (amax == 31'h0 || e < -127) e = -127;
        else if (e > 127)              e = 127;
        shift = e[9:0];
        if (nan_block) begin
            scale     = 8'hFF;
            scale_exp = -16'sd128;
        end else begin
            scale     = e[7:0] + 8'd127;
            scale_exp = e[15:0];
        end
    end

    genvar g;
    generate
        for (g = 0; g < K; g = g + 1) begin : lane
            wire [EW-1:0] code;
            mx_elem_encode #(.EB(EB), .MB(MB), .SPECIALS(SPECIALS), .RM(0), .OVF_IEEE(0))
                enc (.x(x[32*g +: 32]), .xshift(shift), .code(code));
            assign codes[EW*g +: EW] = nan_block ? NAN_BLOCK_CODE : code;
        end
    endgenerate
endmodule
`default_nettype wire
