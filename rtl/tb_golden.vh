// tb_golden.vh: what every golden-suite testbench shares; `include it inside the testbench module
// after its MAXN parameter (compile with -I rtl).
//
//   dir, fname            the suite directory (+dir=...) and the last file named by golden_file
//   n, passed, failed, fd vector count (+count=N, 1..MAXN), tallies, scratch file descriptor
//   golden_args           read +dir and +count; on a missing or out-of-range one print the error
//                         and "0 passed, 1 failed" and stop
//   golden_file(name)     fname = <dir>/<name>; if it cannot be opened print the error and
//                         "0 passed, <n> failed" and stop (a missing golden file fails loudly)
    reg [8*1024-1:0] dir;
    reg [8*1100-1:0] fname;
    integer n, passed, failed, fd;

    task golden_args;
        begin
            passed = 0;
            failed = 0;
            n = 0;
            if (!$value$plusargs("dir=%s", dir)) begin
                $display("ERROR: missing +dir=<golden suite directory>");
                $display("0 passed, 1 failed");
                $finish;
            end
            if (!$value$plusargs("count=%d", n) || n <= 0 || n > MAXN) begin
                $display("ERROR: +count=N missing or outside [1, MAXN=%0d]", MAXN);
                $display("0 passed, 1 failed");
                $finish;
            end
        end
    endtask

    task golden_file;
        input [8*64-1:0] name;
        begin
            $sformat(fname, "%0s/%0s", dir, name);
            fd = $fopen(fname, "r");
            if (fd == 0) begin
                $display("ERROR: cannot open %0s", fname);
                $display("0 passed, %0d failed", n);
                $finish;
            end
            $fclose(fd);
        end
    endtask
