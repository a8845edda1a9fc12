// mx_dequant: one MXFP8 block (K element codes and a power-of-two scale byte) to K IEEE binary32
// words, element * 2^X, with the dequantization options of mxsim's contract (conventions.md 3.1).
//
//   FMT        0 = OCP FP8 E4M3 (bias 7, no Inf, S.1111.111 NaN), 1 = OCP FP8 E5M2 (bias 15, IEEE
//              Inf and NaN)
//   K          elements per block; elems[8*i +: 8] is element i (element 0 in the low bits)
//   SCALE_INT8 0 = E8M0 scale byte (X = scale - 127, 0xFF = NaN), 1 = int8 exponent (X = scale as
//              a two's-complement byte, -128..127, no NaN: pulp-platform iDMA)
//   SATURATE   dequant_overflow: 0 = a finite value beyond binary32 gives +-Inf, 1 = +-max finite
//              (0x7F7FFFFF with the sign); an Inf element stays +-Inf either way
//   FTZ        dequant_ftz: 1 = a subnormal result becomes a zero of its sign
//   NAN_CANON  dequant_nan: 0 = a NaN element gives {S, 0x7FC00000} (keep_sign), 1 = 0x7FC00000
//
// Every FP8 value times 2^X, X in [-128, 127], is exact in binary32 unless it overflows (the
// smallest, 2^-16 * 2^-128 = 2^-144, is a binary32 subnormal), so no rounding is needed: the
// result is the normalized element with its exponent shifted, denormalized by an exact right
// shift below 2^-126. A NaN scale gives 0x7FC00000 for every element; -0 gives 0x80000000.
// Combinational, synthesizable Verilog-2005.
//
// Teeth: -DMUTATE_FTZ inverts FTZ, -DMUTATE_SATURATE inverts SATURATE, -DMUTATE_NAN inverts
// NAN_CANON; the golden testbench must then report failures.
`default_nettype none
module mx_dequant #(
    parameter FMT        = 0,
    parameter K          = 32,
    parameter SCALE_INT8 = 0,
    parameter SATURATE   = 0,
    parameter FTZ        = 0,
    parameter NAN_CANON  = 0
) (
    input  wire [8*K-1:0]  elems,
    input  wire [7:0]      scale,
    output wire [32*K-1:0] values
);
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
    localparam [31:0] QNAN = 32'h7FC0_0000;

    // the scale: its exponent X (signed) and whether it is NaN
    wire signed [9:0] x = SCALE_INT8 ? {{2{scale[7]}}, scale} : $signed({2'b00, scale}) - 10'sd127;
    wire              scale_nan = !SCALE_INT8 && scale == 8'hFF;

    // one element code times 2^x -> binary32 bits
    function [31:0] dequant;
        input [7:0]        code;
        input signed [9:0] xs;
        input              snan;
        reg                s, is_nan, is_inf, is_zero;
        reg [4:0]          field;
        reg [2:0]          frac;        // the fraction after the hidden bit, 3 bits (E5M2: {m, 0})
        reg signed [9:0]   e;           // unbiased element exponent of the normalized value
        reg signed [10:0]  biased;      // binary32 biased exponent of the result
        reg [23:0]         sig;
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
            biased = $signed({e[9], e}) + $signed({xs[9], xs}) + 11'sd127;
            sig    = {1'b1, frac, 20'h0};
            if (snan)
                dequant = QNAN;
            else if (is_nan)
                dequant = DO_CANON ? QNAN : {s, QNAN[30:0]};
            else if (is_inf)
                dequant = {s, 8'hFF, 23'h0};
            else if (is_zero)
                dequant = {s, 31'h0};
            else if (biased >= 11'sd255)                      // overflow
                dequant = DO_SAT ? {s, 8'hFE, 23'h7FFFFF} : {s, 8'hFF, 23'h0};
            else if (biased >= 11'sd1)                        // normal
                dequant = {s, biased[7:0], frac, 20'h0};
            else if (DO_FTZ)                                  // subnormal, flushed
                dequant = {s, 31'h0};
            else                                              // subnormal: exact shift by 1 - biased <= 18
                dequant = {s, 8'h00, sig[23:1] >> (-biased)};
        end
    endfunction

    genvar i;
    generate
        for (i = 0; i < K; i = i + 1) begin : lane
            assign values[32*i +: 32] = dequant(elems[8*i +: 8], x, scale_nan);
        end
    endgenerate
endmodule
`default_nettype wire
