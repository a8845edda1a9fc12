// tb_quant: self-checking testbench of mx_block_quant against an mxsim golden quantize suite of an
// E8M0-scaled float format with the default options (golden/quantize/<mxfp8_e4m3|mxfp8_e5m2|
// mxfp6_e2m3|mxfp6_e3m2|mxfp4_e2m1>: x.hex (K fp32 inputs, input i at bits [32i, 32i+32)),
// scale.hex, scale_exp.hex (16-bit two's complement), codes.hex (element i at [EW*i, EW*i+EW)),
// one block a line).
//
//   iverilog -g2005 -I rtl -P tb_quant.EB=4 -P tb_quant.MB=3 -P tb_quant.SPECIALS=1 -o tb_quant.vvp \
//            rtl/tb_quant.v rtl/mx_block_quant.v rtl/mx_elem_encode.v
//   vvp -n tb_quant.vvp +dir=golden/quantize/mxfp8_e4m3 +count=<manifest count>
//
// Compares scale, scale_exp and codes for every vector, prints the first MAXSHOW mismatching
// fields (line, field, expected, got; for codes the first differing element) and ends with the
// line "N passed, N failed" (a vector passes when all three fields match).
`default_nettype none
module tb_quant;
    parameter EB       = 4;
    parameter MB       = 3;
    parameter SPECIALS = 1;       // 0 ieee, 1 fn, 2 none
    parameter K        = 32;
    parameter MAXN     = 65536;   // capacity of the vector memories (>= +count)
    parameter MAXSHOW  = 10;

    localparam EW = 1 + EB + MB;

    reg [32*K-1:0] x_mem         [0:MAXN-1];
    reg [7:0]      scale_mem     [0:MAXN-1];
    reg [15:0]     scale_exp_mem [0:MAXN-1];
    reg [EW*K-1:0] codes_mem     [0:MAXN-1];

    reg  [32*K-1:0]    x;
    wire [7:0]         scale;
    wire signed [15:0] scale_exp;
    wire [EW*K-1:0]    codes;

    mx_block_quant #(.EB(EB), .MB(MB), .SPECIALS(SPECIALS), .K(K))
        dut (.x(x), .scale(scale), .scale_exp(scale_exp), .codes(codes));

    `include "tb_golden.vh"
    integer i, j, first;
    reg bad;

    task mismatch;                // count a mismatching field; print the first MAXSHOW
        input [8*16-1:0] field;
        input integer    line;
        input [63:0]     expected;
        input [63:0]     got;
        begin
            bad = 1'b1;
            if (shown < MAXSHOW)
                $display("MISMATCH line %0d field %0s: expected %h got %h", line, field, expected, got);
            shown = shown + 1;
        end
    endtask

    initial begin
        golden_args;
        golden_file("x.hex");            $readmemh(fname, x_mem,         0, n - 1);
        golden_file("scale.hex");        $readmemh(fname, scale_mem,     0, n - 1);
        golden_file("scale_exp.hex");    $readmemh(fname, scale_exp_mem, 0, n - 1);
        golden_file("codes.hex");        $readmemh(fname, codes_mem,     0, n - 1);

        for (i = 0; i < n; i = i + 1) begin
            x = x_mem[i];
            #1;
            bad = 1'b0;
            if ((^x_mem[i] === 1'bx) || (^scale_mem[i] === 1'bx) || (^scale_exp_mem[i] === 1'bx) ||
                (^codes_mem[i] === 1'bx)) begin
                bad = 1'b1;
                golden_unreadable(i);
            end else begin
                if (scale !== scale_mem[i])
                    mismatch("scale", i + 1, scale_mem[i], scale);
                if (scale_exp !== scale_exp_mem[i])
                    mismatch("scale_exp", i + 1, scale_exp_mem[i], scale_exp);
                if (codes !== codes_mem[i]) begin
                    first = -1;
                    for (j = K - 1; j >= 0; j = j - 1)
                        if (codes[EW*j +: EW] !== codes_mem[i][EW*j +: EW]) first = j;
                    if (shown < MAXSHOW)
                        $display("MISMATCH line %0d field codes element %0d: x %h expected %h got %h", i + 1, first,
                                 x_mem[i][32*first +: 32], codes_mem[i][EW*first +: EW], codes[EW*first +: EW]);
                    bad = 1'b1;
                    shown = shown + 1;
                end
            end
            golden_tally(bad);
        end
        golden_summary;
    end
endmodule
`default_nettype wire
