// tb_dequant: self-checking testbench of mx_dequant against an mxsim golden dequantize suite of
// MXFP8 (golden/dequantize/<mxfp8_e4m3|mxfp8_e5m2>-<fp32|fp16|bf16>[-options]: scale.hex, codes.hex,
// values.hex, one block a line; element i at bits [8i, 8i+8) of codes and [Wi, Wi+W) of values,
// W = 32 for OUT=0 (fp32), 16 for OUT=1 (fp16) and OUT=2 (bf16)).
//
//   iverilog -g2005 -I rtl -P tb_dequant.FMT=1 -P tb_dequant.OUT=0 -P tb_dequant.SCALE_INT8=1 \
//            -P tb_dequant.SATURATE=1 -P tb_dequant.FTZ=1 -P tb_dequant.NAN_CANON=1 -o tb_dequant.vvp \
//            rtl/tb_dequant.v rtl/mx_dequant.v
//   vvp -n tb_dequant.vvp +dir=golden/dequantize/<suite> +count=<manifest count>
//
// Compares every element word of every vector, prints the first MAXSHOW mismatching vectors (line,
// element, scale, code, expected, got) and ends with the line "N passed, N failed" (per vector).
`default_nettype none
module tb_dequant;
    parameter FMT        = 0;      // 0 = E4M3, 1 = E5M2
    parameter OUT        = 0;      // 0 = fp32, 1 = fp16, 2 = bf16
    parameter K          = 32;
    parameter SCALE_INT8 = 0;
    parameter SATURATE   = 0;
    parameter FTZ        = 0;
    parameter NAN_CANON  = 0;
    parameter MAXN       = 4096;   // capacity of the vector memories (>= +count)
    parameter MAXSHOW    = 10;
    localparam W         = OUT == 0 ? 32 : 16;  // output word bits

    reg [7:0]      scale_mem  [0:MAXN-1];
    reg [8*K-1:0]  codes_mem  [0:MAXN-1];
    reg [W*K-1:0]  values_mem [0:MAXN-1];

    reg  [7:0]      scale;
    reg  [8*K-1:0]  elems;
    wire [W*K-1:0]  values;

    mx_dequant #(.FMT(FMT), .OUT(OUT), .K(K), .SCALE_INT8(SCALE_INT8), .SATURATE(SATURATE), .FTZ(FTZ),
                 .NAN_CANON(NAN_CANON))
        dut (.elems(elems), .scale(scale), .values(values));

    `include "tb_golden.vh"
    integer i, j, first;
    reg bad;

    initial begin
        golden_args;
        golden_file("scale.hex");
        $readmemh(fname, scale_mem, 0, n - 1);
        golden_file("codes.hex");
        $readmemh(fname, codes_mem, 0, n - 1);
        golden_file("values.hex");
        $readmemh(fname, values_mem, 0, n - 1);

        for (i = 0; i < n; i = i + 1) begin
            scale = scale_mem[i];
            elems = codes_mem[i];
            #1;
            bad = 1'b0;
            if ((^scale_mem[i] === 1'bx) || (^codes_mem[i] === 1'bx) || (^values_mem[i] === 1'bx)) begin
                bad = 1'b1;
                golden_unreadable(i);
            end else if (values !== values_mem[i]) begin
                bad = 1'b1;
                first = -1;
                for (j = K - 1; j >= 0; j = j - 1)
                    if (values[W*j +: W] !== values_mem[i][W*j +: W]) first = j;
                if (shown < MAXSHOW)
                    $display("MISMATCH line %0d field values element %0d: scale %h code %h expected %h got %h",
                             i + 1, first, scale, elems[8*first +: 8], values_mem[i][W*first +: W],
                             values[W*first +: W]);
                shown = shown + 1;
            end
            golden_tally(bad);
        end
        golden_summary;
    end
endmodule
`default_nettype wire
