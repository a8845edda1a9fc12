// tb_golden.vh: what every golden-suite testbench shares; `include it inside the testbench module
// after its MAXN and MAXSHOW parameters (compile with -I rtl).
//
//   dir, fname            the suite directory (+dir=...) and the last file named by golden_file
//   n, passed, failed, fd vector count (+count=N, 1..MAXN), tallies, scratch file descriptor
//   shown                 mismatch messages so far (the first MAXSHOW are printed)
//   golden_args           read +dir and +count; on a missing or out-of-range one print the error
//                         and "0 passed, 1 failed" and stop
//   golden_file(name)     fname = <dir>/<name>; if it cannot be opened print the error and
//                         "0 passed, <n> failed" and stop (a missing golden file fails loudly)
//   golden_unreadable(i)  report line i + 1 as unreadable (a golden file shorter than +count)
//   golden_tally(bad)     count the vector as failed (bad) or passed
//   golden_summary        print "N passed, N failed" and stop
    reg [8*896-1:0] dir;      // (Verilator: at most 8192 bits per $display argument)
    reg [8*1000-1:0] fname;
    integer n, passed, failed, fd, shown;

    task golden_args;
        begin
            passed = 0;
            failed = 0;
            shown = 0;
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

    task golden_unreadable;
        input integer i;
        begin
            if (shown < MAXSHOW)
                $display("MISMATCH line %0d: golden entry unreadable (file shorter than count?)", i + 1);
            shown = shown + 1;
        end
    endtask

    task golden_tally;
        input bad;
        begin
            if (bad) failed = failed + 1;
            else     passed = passed + 1;
        end
    endtask

    task golden_summary;
        begin
            $display("%0d passed, %0d failed", passed, failed);
            $finish;
        end
    endtask
