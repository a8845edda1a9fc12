// mx_elem_decode: one MX element code to the exact IEEE binary32 bit pattern of its value.
//
//   FMT = 0  OCP FP8 E4M3 (code[7:0]): bias 7, subnormals, max 448, no Inf;
//            S.1111.111 is NaN -> {S, 0x7FC00000 without sign} (the sign bit is kept).
//   FMT = 1  OCP FP4 E2M1 (code[3:0], code[7:4] ignored): bias 1, values 0, 0.5, 1, 1.5, 2, 3,
//            4, 6 with sign; no Inf, no NaN.
// Every E4M3 and E2M1 value is exact in binary32 (normal there), so no rounding happens.
// -0 decodes to 0x80000000. Combinational, synthesizable Verilog-2005.
`default_nettype none
module mx_elem_decode #(
    parameter FMT = 0
) (
    input  wire [7:0]  code,
    output reg  [31:0] fp32
);
    reg       s;
    reg [3:0] e;
    reg [2:0] m;

    always @* begin
        fp32 = 32'h0000_0000;
        if (FMT == 0) begin
            s = code[7];
            e = code[6:3];
            m = code[2:0];
            if (e == 4'hF && m == 3'h7)
                fp32 = {s, 31'h7FC0_0000};                          // NaN (quiet, sign kept)
            else if (e != 4'h0)
                fp32 = {s, {4'b0, e} + 8'd120, m, 20'h0};           // normal: 2^(e-7) * 1.m
            else begin                                              // zero / subnormal m * 2^-9
                case (m)
                    3'd0: fp32 = {s, 31'h0};
                    3'd1: fp32 = {s, 8'd118, 23'h000000};           // 2^-9
                    3'd2: fp32 = {s, 8'd119, 23'h000000};           // 2^-8
                    3'd3: fp32 = {s, 8'd119, 23'h400000};           // 1.5 * 2^-8
                    default: fp32 = {s, 8'd120, m[1:0], 21'h0};     // (4..7)/4 * 2^-7
                endcase
            end
        end else begin
            s = code[3];
            e = {2'b00, code[2:1]};
            m = {2'b00, code[0]};
            if (e != 4'h0)
                fp32 = {s, {4'b0, e} + 8'd126, m[0], 22'h0};        // normal: 2^(e-1) * 1.m
            else if (m[0])
                fp32 = {s, 8'd126, 23'h0};                          // subnormal 0.5
            else
                fp32 = {s, 31'h0};                                  // +-0
        end
    end
endmodule
`default_nettype wire
