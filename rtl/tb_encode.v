// tb_encode: self-checking testbench of mx_elem_encode against an mxsim golden encode suite of a
// float element format (golden/encode/<element>-<rounding>-<overflow>: x.hex (fp32 bits),
// code.hex (the element code), one vector a line).
//
//   iverilog -g2005 -I rtl -P tb_encode.EB=4 -P tb_encode.MB=3 -P tb_encode.SPECIALS=1 -P tb_encode.RM=0 \
//            -o tb_encode.vvp rtl/tb_encode.v rtl/mx_elem_encode.v
//   vvp -n tb_encode.vvp +dir=golden/encode/fp8_e4m3-rne-saturate +count=<manifest count>
//
// Compares the field `code` for every vector, prints the first MAXSHOW mismatches (line number,
// input, expected, got) and ends with the line "N passed, N failed".
`default_nettype none
module tb_encode;
    parameter EB       = 4;
    parameter MB       = 3;
    parameter SPECIALS = 1;       // 0 ieee, 1 fn, 2 none
    parameter RM       = 0;       // 0 RNE, 1 RTZ, 2 RDN, 3 RUP, 4 RNA
    parameter OVF_IEEE = 0;       // 0 saturate, 1 ieee
    parameter MAXN     = 65536;   // capacity of the vector memories (>= +count)
    parameter MAXSHOW  = 10;

    localparam EW = 1 + EB + MB;

    reg [31:0]   x_mem    [0:MAXN-1];
    reg [EW-1:0] code_mem [0:MAXN-1];

    reg  [31:0]   x;
    wire [EW-1:0] code;

    mx_elem_encode #(.EB(EB), .MB(MB), .SPECIALS(SPECIALS), .RM(RM), .OVF_IEEE(OVF_IEEE))
        dut (.x(x), .xshift(10'sd0), .code(code));

    `include "tb_golden.vh"
    integer i;
    reg bad;

    initial begin
        golden_args;
        golden_file("x.hex");
        $readmemh(fname, x_mem, 0, n - 1);
        golden_file("code.hex");
        $readmemh(fname, code_mem, 0, n - 1);

        for (i = 0; i < n; i = i + 1) begin
            x = x_mem[i];
            #1;
            bad = 1'b0;
            if ((^x_mem[i] === 1'bx) || (^code_mem[i] === 1'bx)) begin
                bad = 1'b1;
                golden_unreadable(i);
            end else if (code !== code_mem[i]) begin
                bad = 1'b1;
                if (shown < MAXSHOW)
                    $display("MISMATCH line %0d field code: x %h expected %h got %h",
                             i + 1, x_mem[i], code_mem[i], code);
                shown = shown + 1;
            end
            golden_tally(bad);
        end
        golden_summary;
    end
endmodule
`default_nettype wire
