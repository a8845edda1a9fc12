// tb_decode: self-checking testbench of mx_elem_decode against an mxsim golden decode suite
// (golden/decode/fp8_e4m3 or golden/decode/fp4_e2m1: code.hex, value.hex, one vector a line).
//
//   iverilog -g2005 -I rtl -P tb_decode.FMT=0 -o tb_decode.vvp rtl/tb_decode.v rtl/mx_elem_decode.v
//   vvp -n tb_decode.vvp +dir=golden/decode/fp8_e4m3 +count=256
//
// Compares the field `value` (fp32 bits) for every vector, prints the first MAXSHOW mismatches
// (line number, field, expected, got) and ends with the line "N passed, N failed".
`default_nettype none
module tb_decode;
    parameter FMT     = 0;        // 0 = FP8 E4M3, 1 = FP4 E2M1
    parameter MAXN    = 65536;    // capacity of the vector memories (>= +count)
    parameter MAXSHOW = 10;       // mismatches printed in full

    reg [7:0]  code_mem  [0:MAXN-1];
    reg [31:0] value_mem [0:MAXN-1];

    reg  [7:0]  code;
    wire [31:0] fp32;

    mx_elem_decode #(.FMT(FMT)) dut (.code(code), .fp32(fp32));

    `include "tb_golden.vh"
    integer i;
    reg bad;

    initial begin
        golden_args;
        golden_file("code.hex");
        $readmemh(fname, code_mem, 0, n - 1);
        golden_file("value.hex");
        $readmemh(fname, value_mem, 0, n - 1);

        for (i = 0; i < n; i = i + 1) begin
            code = code_mem[i];
            #1;
            bad = 1'b0;
            if ((^code_mem[i] === 1'bx) || (^value_mem[i] === 1'bx)) begin
                bad = 1'b1;
                golden_unreadable(i);
            end else if (fp32 !== value_mem[i]) begin
                bad = 1'b1;
                if (shown < MAXSHOW)
                    $display("MISMATCH line %0d field value: code %h expected %h got %h",
                             i + 1, code_mem[i], value_mem[i], fp32);
                shown = shown + 1;
            end
            golden_tally(bad);
        end
        golden_summary;
    end
endmodule
`default_nettype wire
