// tb_dot: self-checking testbench of mx_dot against an mxsim golden dot suite, e.g.
// golden/dot/mxfp8_e4m3-aligned-f8-w14-truncate-saturate/ (a_scale.hex, a_elems.hex,
// b_scale.hex, b_elems.hex, acc.hex, lsb.hex, anchor.hex, result.hex; one vector a line,
// plain fixed-width hex, signed fields in two's complement of their bit width).
//
//   iverilog -g2005 -I rtl -P tb_dot.FMT=0 -P tb_dot.F=8 -P tb_dot.W=14 -o tb_dot.vvp \
//            rtl/tb_dot.v rtl/mx_dot.v
//   vvp -n tb_dot.vvp +dir=golden/dot/mxfp8_e4m3-aligned-f8-w14-truncate-saturate +count=N
//
// Compares acc, lsb, anchor and result for every vector, prints the first MAXSHOW mismatching
// fields (line number, field, expected, got) and ends with the line "N passed, N failed"
// (a vector passes when all four fields match).
`default_nettype none
module tb_dot;
    parameter FMT       = 0;      // 0 = MXFP8 E4M3, 1 = MXFP4 E2M1
    parameter K         = 32;
    parameter F         = 8;
    parameter W         = 14;
    parameter SHIFT_RNE = 0;
    parameter WRAP      = 0;
    parameter MAXN      = 65536;  // capacity of the vector memories (>= +count)
    parameter MAXSHOW   = 10;     // mismatching fields printed in full

    localparam EW = (FMT == 0) ? 8 : 4;
    localparam BW = K * EW;

    reg [7:0]    a_scale_mem [0:MAXN-1];
    reg [7:0]    b_scale_mem [0:MAXN-1];
    reg [BW-1:0] a_elems_mem [0:MAXN-1];
    reg [BW-1:0] b_elems_mem [0:MAXN-1];
    reg [W-1:0]  acc_mem     [0:MAXN-1];
    reg [15:0]   lsb_mem     [0:MAXN-1];
    reg [15:0]   anchor_mem  [0:MAXN-1];
    reg [31:0]   result_mem  [0:MAXN-1];

    reg  [7:0]         a_scale, b_scale;
    reg  [BW-1:0]      a_elems, b_elems;
    wire signed [W-1:0] acc;
    wire signed [15:0] lsb, anchor;
    wire [31:0]        result;

    mx_dot #(.FMT(FMT), .K(K), .F(F), .W(W), .SHIFT_RNE(SHIFT_RNE), .WRAP(WRAP)) dut (
        .a_elems(a_elems), .b_elems(b_elems), .a_scale(a_scale), .b_scale(b_scale),
        .acc(acc), .lsb(lsb), .anchor(anchor), .result(result)
    );

    `include "tb_golden.vh"
    integer i;
    reg bad, show;

    task note;                    // count a mismatching field; true while it is to be printed
        output show;
        begin
            bad   = 1'b1;
            show  = (shown < MAXSHOW);
            shown = shown + 1;
        end
    endtask

    initial begin
        golden_args;
        golden_file("a_scale.hex");      $readmemh(fname, a_scale_mem, 0, n - 1);
        golden_file("b_scale.hex");      $readmemh(fname, b_scale_mem, 0, n - 1);
        golden_file("a_elems.hex");      $readmemh(fname, a_elems_mem, 0, n - 1);
        golden_file("b_elems.hex");      $readmemh(fname, b_elems_mem, 0, n - 1);
        golden_file("acc.hex");          $readmemh(fname, acc_mem,     0, n - 1);
        golden_file("lsb.hex");          $readmemh(fname, lsb_mem,     0, n - 1);
        golden_file("anchor.hex");       $readmemh(fname, anchor_mem,  0, n - 1);
        golden_file("result.hex");       $readmemh(fname, result_mem,  0, n - 1);

        for (i = 0; i < n; i = i + 1) begin
            a_scale = a_scale_mem[i];
            b_scale = b_scale_mem[i];
            a_elems = a_elems_mem[i];
            b_elems = b_elems_mem[i];
            #1;
            bad = 1'b0;
            if ((^a_scale_mem[i] === 1'bx) || (^b_scale_mem[i] === 1'bx) ||
                (^a_elems_mem[i] === 1'bx) || (^b_elems_mem[i] === 1'bx) ||
                (^acc_mem[i] === 1'bx) || (^lsb_mem[i] === 1'bx) ||
                (^anchor_mem[i] === 1'bx) || (^result_mem[i] === 1'bx)) begin
                bad = 1'b1;
                golden_unreadable(i);
            end else begin
                if (acc !== acc_mem[i]) begin
                    note(show);
                    if (show) $display("MISMATCH line %0d field acc: expected %h (%0d) got %h (%0d)",
                                       i + 1, acc_mem[i], $signed(acc_mem[i]), acc, acc);
                end
                if (lsb !== lsb_mem[i]) begin
                    note(show);
                    if (show) $display("MISMATCH line %0d field lsb: expected %h (%0d) got %h (%0d)",
                                       i + 1, lsb_mem[i], $signed(lsb_mem[i]), lsb, lsb);
                end
                if (anchor !== anchor_mem[i]) begin
                    note(show);
                    if (show) $display("MISMATCH line %0d field anchor: expected %h (%0d) got %h (%0d)",
                                       i + 1, anchor_mem[i], $signed(anchor_mem[i]), anchor, anchor);
                end
                if (result !== result_mem[i]) begin
                    note(show);
                    if (show) $display("MISMATCH line %0d field result: expected %h got %h",
                                       i + 1, result_mem[i], result);
                end
            end
            golden_tally(bad);
        end
        golden_summary;
    end
endmodule
`default_nettype wire
