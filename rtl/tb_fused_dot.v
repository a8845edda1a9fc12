// tb_fused_dot: self-checking testbench of mx_fused_dot against an mxsim golden dot suite of fused
// steps, e.g. golden/dot/mxfp8_e4m3-mxdotp_fp8-steps/ (a_scale.hex, a_elems.hex, b_scale.hex,
// b_elems.hex, c.hex, result.hex and, with STEPS=1, steps.hex; one vector a line, plain hex).
//
// A vector is one block of K = NSTEP * N E4M3 elements per operand with one E8M0 scale each and an
// fp32 accumulator input C. One unit computes the NSTEP steps in turn: step j takes elements
// [N*j, N*(j+1)) and, as C, the D of step j-1 (the vector's C for step 0); the last D is the result. With STEPS=1 every
// step's D is compared with steps.hex (step j at bits [32*j +: 32]), and the result with result.hex.
//
//   iverilog -g2005 -I rtl -P tb_fused_dot.NSTEP=4 -P tb_fused_dot.RM=0 -P tb_fused_dot.STEPS=1 \
//            -o tb_fused_dot.vvp rtl/tb_fused_dot.v rtl/mx_fused_dot.v
//   vvp -n tb_fused_dot.vvp +dir=golden/dot/mxfp8_e4m3-mxdotp_fp8-steps +count=N
//
// Prints the first MAXSHOW mismatching fields (line, field, expected, got) and ends with the line
// "N passed, N failed" (a vector passes when every compared field matches).
`default_nettype none
module tb_fused_dot;
    parameter N          = 8;       // products per step
    parameter NSTEP      = 4;       // steps per vector (K = NSTEP * N)
    parameter F          = 34;
    parameter USE_BYPASS = 1;
    parameter BYPASS     = 70;
    parameter CZE        = -127;
    parameter RM         = 0;       // 0 RNE, 1 RTZ, 2 RDN, 3 RUP, 4 RNA
    parameter [31:0] NAN_BITS = 32'h7FC0_0000;
    parameter PASS_C     = 1;       // 1: a zero product sum gives D = C (zero_product_sum="pass_c")
    parameter PASS_BELOW = 24;      // ... only where C's LSB lies more than this below the grid (-1: always)
    parameter STEPS      = 1;       // 1: the suite has steps.hex
    parameter MAXN       = 65536;   // capacity of the vector memories (>= +count)
    parameter MAXSHOW    = 10;

    localparam K  = NSTEP * N;
    localparam BW = 8 * K;

    reg [7:0]          a_scale_mem [0:MAXN-1];
    reg [7:0]          b_scale_mem [0:MAXN-1];
    reg [BW-1:0]       a_elems_mem [0:MAXN-1];
    reg [BW-1:0]       b_elems_mem [0:MAXN-1];
    reg [31:0]         c_mem       [0:MAXN-1];
    reg [31:0]         result_mem  [0:MAXN-1];
    reg [32*NSTEP-1:0] steps_mem   [0:MAXN-1];

    reg  [7:0]         a_scale, b_scale;
    reg  [8*N-1:0]     a_step, b_step;  // the step's elements
    reg  [31:0]        c;               // the step's C
    wire [31:0]        d_step;          // the step's D
    reg  [32*NSTEP-1:0] d;              // D of step j at [32*j +: 32]

    mx_fused_dot #(.N(N), .F(F), .USE_BYPASS(USE_BYPASS), .BYPASS(BYPASS), .CZE(CZE), .RM(RM),
                   .NAN_BITS(NAN_BITS), .PASS_C(PASS_C), .PASS_BELOW(PASS_BELOW)) unit (
        .a_elems(a_step), .b_elems(b_step), .a_scale(a_scale), .b_scale(b_scale), .c(c), .d(d_step)
    );

    `include "tb_golden.vh"
    integer i, j;
    reg bad;

    task mismatch;                // count a mismatching field; print the first MAXSHOW
        input [8*16-1:0] field;
        input integer    line;
        input [31:0]     expected;
        input [31:0]     got;
        begin
            bad = 1'b1;
            if (shown < MAXSHOW)
                $display("MISMATCH line %0d field %0s: expected %h got %h", line, field, expected, got);
            shown = shown + 1;
        end
    endtask

    initial begin
        golden_args;
        golden_file("a_scale.hex");      $readmemh(fname, a_scale_mem, 0, n - 1);
        golden_file("b_scale.hex");      $readmemh(fname, b_scale_mem, 0, n - 1);
        golden_file("a_elems.hex");      $readmemh(fname, a_elems_mem, 0, n - 1);
        golden_file("b_elems.hex");      $readmemh(fname, b_elems_mem, 0, n - 1);
        golden_file("c.hex");            $readmemh(fname, c_mem,       0, n - 1);
        golden_file("result.hex");       $readmemh(fname, result_mem,  0, n - 1);
        if (STEPS) begin
            golden_file("steps.hex");        $readmemh(fname, steps_mem, 0, n - 1);
        end

        for (i = 0; i < n; i = i + 1) begin
            a_scale = a_scale_mem[i];
            b_scale = b_scale_mem[i];
            c       = c_mem[i];
            for (j = 0; j < NSTEP; j = j + 1) begin  // the steps in order, D of each the next C
                a_step = a_elems_mem[i][8*N*j +: 8*N];
                b_step = b_elems_mem[i][8*N*j +: 8*N];
                #1;
                d[32*j +: 32] = d_step;
                c = d_step;
            end
            bad = 1'b0;
            if ((^a_scale_mem[i] === 1'bx) || (^b_scale_mem[i] === 1'bx) || (^a_elems_mem[i] === 1'bx) ||
                (^b_elems_mem[i] === 1'bx) || (^c_mem[i] === 1'bx) || (^result_mem[i] === 1'bx) ||
                (STEPS && (^steps_mem[i] === 1'bx))) begin
                bad = 1'b1;
                golden_unreadable(i);
            end else begin
                if (STEPS)
                    for (j = 0; j < NSTEP; j = j + 1)
                        if (d[32*j +: 32] !== steps_mem[i][32*j +: 32])
                            mismatch("steps", i + 1, steps_mem[i][32*j +: 32], d[32*j +: 32]);
                if (d[32*NSTEP-1 -: 32] !== result_mem[i])
                    mismatch("result", i + 1, result_mem[i], d[32*NSTEP-1 -: 32]);
            end
            golden_tally(bad);
        end
        golden_summary;
    end
endmodule
`default_nettype wire
