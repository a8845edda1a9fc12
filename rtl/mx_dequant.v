// mx_dequant: one MXFP8 block (K element codes and a power-of-two scale byte) to K IEEE words of
// binary32, binary16 or bfloat16, element * 2^X, with the dequantization options of mxsim's
// contract (docs/numerics.md section 3.1).
//
//   FMT        0 = OCP FP8 E4M3 (bias 7, no Inf, S.1111.111 NaN), 1 = OCP FP8 E5M2 (bias 15, IEEE
//              Inf and NaN)
//   OUT        0 = binary32 (32-bit words), 1 = binary16 (16), 2 = bfloat16 (16)
//   K          elements per block; elems[8*i +: 8] is element i (element 0 in the low bits)
//   SCALE_INT8 0 = E8M0 scale byte (X = scale - 127, 0xFF = NaN), 1 = int8 exponent (X = scale as
//              a two's-complement byte, -128..127, no NaN: pulp-platform iDMA)
//   SATURATE   dequant_overflow: 0 = a finite value beyond the output's range gives +-Inf, 1 = +-max
//              finite with the sign; an Inf element stays +-Inf either way
//   FTZ        dequant_ftz: 1 = a subnormal result word becomes a zero of its sign (after rounding:
//              a value that rounds up to the smallest normal stays)
//   NAN_CANON  dequant_nan: 0 = a NaN element gives the quiet NaN with its sign (keep_sign), 1 = the
//              positive quiet NaN (0x7FC00000 / 0x7E00 / 0x7FC0)
//
// An FP8 value has at most 4 significant bits and every output has at least 8, so a result in
// the output's normal range is exact: the normalized element with its exponent shifted by X.
// Overflow is decided on the exact exponent (a 4-bit significand never rounds up past the
// largest finite value). Below the smallest normal the result is denormalized: the significand
// shifted right by 1 - biased places (at most OM + 2: further down every bit is sticky), the
// first bit shifted out is the guard, the OR of the others the sticky bit, rounded once to
// nearest even; a carry out of the largest subnormal gives the smallest normal (the exponent
// field and the mantissa are one adder), a value below half the smallest subnormal gives a zero
// of its sign. A NaN scale gives the positive quiet NaN for every element; -0 gives -0.
// Binary32 never rounds (the smallest result, 2^-16 * 2^-128 = 2^-144, is a binary32 subnormal).
// Combinational, synthesizable Verilog-2005.
//
// Teeth: -DMUTATE_FTZ inverts FTZ, -DMUTATE_SATURATE inverts SATURATE, -DMUTATE_NAN inverts
// NAN_CANON; the golden testbench must then report failures.
`default_nettype none
module mx_dequant #(
    parameter FMT        = 0,
    parameter OUT        = 0,
    parameter K          = 32,
    parameter SCALE_INT8 = 0,
    parameter SATURATE   = 0,
    parameter FTZ        = 0,
    parameter NAN_CANON  = 0
) (
    input  wire [8*K-1:0]  elems,
    input  wire [7:0]      scale,
    output wire [(OUT == 0 ? 32 : 16)*K-1:0] values
);
    // the output format: word width, exponent and mantissa bits, bias
    localparam OW = OUT == 0 ? 32 : 16;
    localparam OE = OUT == 1 ? 5 : 8;
    localparam OM = OUT == 0 ? 23 : OUT == 1 ? 10 : 7;
    localparam OB = (1 << (OE - 1)) - 1;
`ifdef MUTATE_FTZ
    localparam DO_FTZ = !FTZ;
`else
    localparam DO_FTZ = FTZ;
`endif
`ifdef MUTATE_SATURATE
    localparam DO_SAT = !SATURATE;
`else
    localparam DO_SAT = SATURATE;
`endif
`ifdef MUTATE_NAN
    localparam DO_CANON = !NAN_CANON;
`else
    localparam DO_CANON = NAN_CANON;
`endif
    localparam [OW-1:0] QNAN   = {1'b0, {OE{1'b1}}, 1'b1, {(OM - 1){1'b0}}};  // positive quiet NaN
    localparam [OW-1:0] INF    = {1'b0, {OE{1'b1}}, {OM{1'b0}}};
    localparam [OW-1:0] MAXFIN = {1'b0, {(OE - 1){1'b1}}, 1'b0, {OM{1'b1}}};

    // the scale: its exponent X (signed) and whether it is NaN
    wire signed [9:0] x = SCALE_INT8 ? {{2{scale[7]}}, scale} : $signed({2'b00, scale}) - 10'sd127;
    wire              scale_nan = !SCALE_INT8 && scale == 8'hFF;

    // one element code times 2^x -> an output word
    function [OW-1:0] dequant;
        input [7:0]        code;
        input signed [9:0] xs;
        input              snan;
        reg                s, is_nan, is_inf, is_zero;
        reg [4:0]          field;
        reg [2:0]          frac;        // the fraction after the hidden bit, 3 bits (E5M2: {m, 0})
        reg signed [9:0]   e;           // unbiased element exponent of the normalized value
        reg signed [10:0]  biased;      // the output's biased exponent of the result
        reg [OM:0]         sig;         // 1.frac with OM fraction bits
        reg [10:0]         sh;          // denormalizing right shift, 1 .. OM + 2
        reg [OM:0]         kept;        // the subnormal mantissa before rounding
        reg                guard, sticky;
        reg [OE+OM-1:0]    rounded;     // {exponent field, mantissa}: a carry gives the smallest normal
        begin
            s = code[7];
            if (FMT == 0) begin                               // E4M3
                field   = {1'b0, code[6:3]};
                is_nan  = code[6:0] == 7'h7F;
                is_inf  = 1'b0;
                is_zero = code[6:0] == 7'h00;
                if (field != 0) begin
                    e = $signed({5'b0, field}) - 10'sd7;  frac = code[2:0];
                end else if (code[2]) begin               // subnormal m * 2^-9: normalize
                    e = -10'sd7;  frac = {code[1:0], 1'b0};
                end else if (code[1]) begin
                    e = -10'sd8;  frac = {code[0], 2'b00};
                end else begin
                    e = -10'sd9;  frac = 3'b000;
                end
            end else begin                                    // E5M2
                field   = code[6:2];
                is_nan  = field == 5'h1F && code[1:0] != 2'b00;
                is_inf  = field == 5'h1F && code[1:0] == 2'b00;
                is_zero = code[6:0] == 7'h00;
                if (field != 0) begin
                    e = $signed({5'b0, field}) - 10'sd15;  frac = {code[1:0], 1'b0};
                end else if (code[1]) begin               // subnormal m * 2^-16: normalize
                    e = -10'sd15;  frac = {code[0], 2'b00};
                end else begin
                    e = -10'sd16;  frac = 3'b000;
                end
            end
            biased = $signed({e[9], e}) + $signed({xs[9], xs}) + OB;
            sig    = {1'b1, frac, {(OM - 3){1'b0}}};
            sh     = biased < -OM - 1 ? OM + 2 : 11'sd1 - biased;
            kept   = sig >> sh;
            guard  = (sig >> (sh - 1)) & 1'b1;
            sticky = (sig & ((1 << (sh - 1)) - 1)) != 0;
            rounded = kept + (guard && (sticky || kept[0]));
            if (snan)
                dequant = QNAN;
            else if (is_nan)
                dequant = DO_CANON ? QNAN : {s, QNAN[OW-2:0]};
            else if (is_inf)
                dequant = {s, INF[OW-2:0]};
            else if (is_zero)
                dequant = {s, {(OW - 1){1'b0}}};
            else if (biased >= (1 << OE) - 1)                 // overflow
                dequant = DO_SAT ? {s, MAXFIN[OW-2:0]} : {s, INF[OW-2:0]};
            else if (biased >= 11'sd1)                        // normal: exact
                dequant = {s, biased[OE-1:0], sig[OM-1:0]};
            else if (DO_FTZ && rounded[OE+OM-1:OM] == 0)      // a subnormal word, flushed
                dequant = {s, {(OW - 1){1'b0}}};
            else                                              // subnormal, rounded to nearest even
                dequant = {s, rounded};
        end
    endfunction

    genvar i;
    generate
        for (i = 0; i < K; i = i + 1) begin : lane
            assign values[OW*i +: OW] = dequant(elems[8*i +: 8], x, scale_nan);
        end
    endgenerate
endmodule
`default_nettype wire
