"""Golden-vector expected values: the reference ``compute`` beside the fast ``compute_batch``.

Prints, in one run:

* the reference's element rates: ``ref.encode`` (fp32 values -> FP8 E4M3) and
  ``ref.quantize_block`` (MXFP8 E4M3 blocks), elements/s;
* per suite (dot mxfp8_e4m3 aligned F=13 W=24; quantize mxfp8_e4m3): ``compute`` vector by vector
  and ``compute_batch`` on the same vectors, vectors/s, and their ratio. Each timed run takes
  vectors it has not seen (the suite's own stimulus with a fresh seed, shuffled), after one
  warm-up run on other vectors: per-format tables are warm, per-value caches are not, as in a long
  generation. Medians of ``--repeat`` runs, in CPU time (see :func:`_median_time`);
* ``--million`` vectors (default 10^6) of each suite through ``compute_batch`` in chunks of
  ``--chunk``, each in a fresh child process: the compute time, the total time (with making the
  random inputs as the lists of Python ints a pipeline hands over), wall and CPU, and the child's
  peak resident memory (ru_maxrss);
* ``--pipeline N`` (default 10^6; 0 skips; ``benchmarks/update_speed_table.py`` runs this part and
  writes it into docs/verification-flow.md): the commands as a user runs them, each in a fresh
  child process (wall time, CPU time, peak resident memory): ``golden generate --count N`` of each
  suite (fast path, the reference recomputing the catalogue and a seeded sample of
  max(10,000, N/100)), ``golden verify --sample 1000`` of the dot suite, full ``golden verify``
  of a ``--verify-count`` (default 20,000) vector suite of each kind, and ``golden check`` of the N
  dot results (a device that gives exactly the expected outputs).

* ``--presets N`` (default 2,000; 0 skips): ``golden generate --count N`` (in this process,
  ``mxsim.golden.generate``) of a dot suite of every fused preset of a real unit (docs/numerics.md
  section 6.1) on the formats it takes, beside ``blackwell_mxf8f6f4``: vectors per CPU second, and the
  ratio to blackwell_mxf8f6f4 (medians of ``--repeat`` runs, each into a fresh directory).
* ``--fused N`` (default 20,000; 0 skips): ``golden generate --count N`` of each fused preset's
  suite (hopper_fp8_wgmma, blackwell_mxf8f6f4, blackwell_mxf4nvf4, mxdotp_fp8) beside the aligned
  dot suite above, in turn, ``--fused-repeat`` times: median CPU seconds and the ratio of vectors
  per CPU second to the aligned suite's;
* ``--kinds N`` (default 200,000; 0 skips): ``golden generate --count N`` of the aligned dot suite,
  MXFP8 quantize, NVFP4 quantize and NVFP4 quantize ``--reference-only`` (:data:`KIND_SUITES`), in
  turn, ``--fused-repeat`` times, each a fresh process: median CPU seconds and vectors per CPU
  second (issue 33's targets: 40,000, 50,000, 20,000 and NVFP4 never slower than --reference-only);
* ``--main-job`` (default on; ``--no-main-job`` skips): the main job, ``golden generate DIR`` of the
  canonical suite then ``golden verify DIR``, each in a fresh child process: CPU and wall seconds
  of each and their sum (printed after ``--fused``, in the same run), counted from after the
  imports; of that CPU, the seconds spent in the reference model's expected values
  (``crosscheck.reference_expected``, timed by a wrapper in the child) and the rest; and the whole
  processes' CPU (interpreter start and imports included);
* ``--collection FILE``: the main job on the suites FILE lists (a JSON list of ``[kind, params]``)
  instead of the canonical suite: all generated in one fresh process
  (:func:`mxsim.golden.storage.files.generate_suites`, as ``golden generate`` does the canonical
  one), then ``golden verify DIR``. ``benchmarks/collection_2026-11-23.json`` is the canonical
  collection of 2026-11-23 (68 suites, 40,483 vectors then; its suites draw today's stimulus);
* ``--explain N`` (default 100,000; 0 skips): ``golden check --explain`` with its default budget
  of an N-vector blackwell_mxf8f6f4 suite against a device computed with ``output_rounding=rne``.

    python benchmarks/bench_golden.py [--vectors 400] [--repeat 5] [--million 1000000] [--chunk 65536]
                                      [--pipeline 1000000] [--verify-count 20000] [--workdir /tmp/bench_golden]
                                      [--presets 2000] [--preset-only] [--fused 20000] [--fused-repeat 3] [--kinds 200000]
                                      [--explain 100000] [--only-fused] [--no-main-job]

Run it with PYTHONPATH pointing at an older checkout to measure that version's reference (the
rows of a version without ``compute_batch`` say so).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from fractions import Fraction

import numpy as np

from mxsim.golden.kinds.registry import suite_from_spec
from mxsim.ref.block import quantize_block
from mxsim.ref.encode import encode
from mxsim.ref.exact import Exact

# the dot suite of each fused preset of a real unit, on formats it takes (params of ``golden generate``)
_FNUZ_BLOCK = {"name": "mx_fp8_e4m3fnuz", "element": "fp8_e4m3fnuz", "block_size": 32, "scale": "e8m0"}
PRESET_SUITES = [
    {"block_a": "mxfp8_e4m3", "block_b": "mxfp4_e2m1", "preset": "blackwell_mxf8f6f4", "steps": True},
    {"block_a": "mxfp8_e4m3", "preset": "hopper_fp8_wgmma", "unit_scales": True},
    {"block_a": "mxfp8_e4m3", "preset": "hopper_fp8_wgmma_f16", "unit_scales": True},
    {"block_a": "mxfp8_e4m3", "block_b": "mxfp8_e5m2", "preset": "ada_fp8_mma", "unit_scales": True, "steps": True},
    {"block_a": "mxfp8_e4m3", "preset": "ada_fp8_mma_f16", "unit_scales": True, "steps": True},
    {"block_a": "mxfp8_e5m2", "block_b": "mxfp4_e2m1", "preset": "rtx_blackwell_f8f6f4", "unit_scales": True},
    {"block_a": "mxfp8_e5m2", "preset": "rtx_blackwell_f8f6f4_f16", "unit_scales": True},
    {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True},
    {"block_a": "mxfp8_e5m2", "preset": "mxdotp_fp8_bf16", "steps": True},
    {"block_a": "mxfp6_e3m2", "preset": "mxdotp_fp6", "steps": True},
    {"block_a": "mxfp6_e2m3", "preset": "mxdotp_fp6_bf16", "steps": True},
    {"block_a": "mxfp4_e2m1", "preset": "mxdotp_fp4", "steps": True},
    {"block_a": "mxfp4_e2m1", "preset": "mxdotp_fp4_bf16", "steps": True},
    {"block_a": "mxint8", "preset": "mxdotp_int8", "steps": True},
    {"block_a": "mxint8", "preset": "mxdotp_int8_bf16", "steps": True},
    {"block_a": _FNUZ_BLOCK, "preset": "cdna3_fp8_mfma", "unit_scales": True, "steps": True},
]
# the fused presets' suites beside the aligned dot suite (--fused): as a hardware team generates them
FUSED_SUITES = {
    "hopper_fp8_wgmma": ("dot", {"block_a": "mxfp8_e4m3", "preset": "hopper_fp8_wgmma", "unit_scales": True}),
    "blackwell_mxf8f6f4": ("dotgeneral", {"block_a": "mxfp8_e4m3", "block_b": "mxfp4_e2m1",
                                          "preset": "blackwell_mxf8f6f4", "n_blocks": 2}),
    "blackwell_mxf4nvf4": ("dotgeneral", {"block_a": "nvfp4", "preset": "blackwell_mxf4nvf4", "n_blocks": 4}),
    "mxdotp_fp8": ("dot", {"block_a": "mxfp8_e4m3", "preset": "mxdotp_fp8", "steps": True}),
}
# the suites of --kinds: (label, kind, params, extra generate arguments)
KIND_SUITES = [
    ("aligned dot", "dot", {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "aligned", "frac_bits": 13, "width": 24}}, []),
    ("quantize mxfp8_e4m3", "quantize", {"block": "mxfp8_e4m3"}, []),
    ("quantize nvfp4", "quantize", {"block": "nvfp4"}, []),
    ("quantize nvfp4 --reference-only", "quantize", {"block": "nvfp4"}, ["--reference-only"]),
]
EXPLAIN_PLANT = {"output_rounding": "rne"}  # the device's one planted option (the preset rounds toward zero)

SUITES = {
    "dot": ("dot", {"block_a": "mxfp8_e4m3", "accumulator": {"mode": "aligned", "frac_bits": 13, "width": 24}}),
    "quantize": ("quantize", {"block": "mxfp8_e4m3"}),
}


def _median_time(function, repeat: int, make_input) -> float:
    """Median CPU seconds of ``function(make_input(i))`` over ``repeat`` runs, each on fresh input,
    after one warm-up run. CPU time (of every thread of the process) rather than wall time: on a
    shared machine the wall time of single-threaded code swings with the load, its CPU time does
    not; for the two-thread fast path CPU time is the sum of both threads (a conservative rate)."""
    function(make_input(-1))
    times = []
    for i in range(repeat):
        data = make_input(i)
        start = time.process_time()
        function(data)
        times.append(time.process_time() - start)
    return statistics.median(times)


def _random_values(seed: int, n: int) -> list[Exact]:
    """fp32 values with random 24-bit significands at exponents -10 .. 10, random signs."""
    rng = random.Random(seed)
    return [Exact(rng.getrandbits(1), Fraction(rng.getrandbits(23) | 1 << 23, 1 << 23) * Fraction(2) ** rng.randint(-10, 10))
            for _ in range(n)]


def element_rates(n: int, repeat: int) -> list[tuple[str, float]]:
    encode_time = _median_time(lambda xs: [encode(x, "fp8_e4m3") for x in xs], repeat, lambda i: _random_values(i, n))
    blocks = lambda i: [xs[j : j + 32] for xs in [_random_values(i, n)] for j in range(0, n - 31, 32)]  # noqa: E731
    block_time = _median_time(lambda bs: [quantize_block(b, "mxfp8_e4m3") for b in bs], repeat, blocks)
    return [("ref.encode fp8_e4m3", n / encode_time), ("ref.quantize_block mxfp8_e4m3", (n // 32 * 32) / block_time)]


def _suite_vectors(suite, seed: int, count: int) -> list[dict]:
    rows = [row for row, _ in suite.stimulus(random.Random(f"bench:{seed}"), 2)]
    random.Random(seed).shuffle(rows)
    while len(rows) < count:
        rows += [row for row, _ in suite.stimulus(random.Random(f"bench:{seed}:{len(rows)}"), 2)]
    return rows[:count]


def suite_rates(name: str, count: int, repeat: int) -> tuple[float, float | None]:
    kind, params = SUITES[name]
    suite = suite_from_spec(kind, **params)
    vectors = {i: _suite_vectors(suite, i, count) for i in range(-1, repeat)}
    reference = count / _median_time(lambda rows: [suite.compute(r) for r in rows], repeat, vectors.__getitem__)
    if not hasattr(suite, "compute_batch"):
        return reference, None
    names = [f.name for f in suite.inputs]
    columns = {i: {n: [r[n] for r in rows] for n in names} for i, rows in vectors.items()}
    batch = count / _median_time(suite.compute_batch, repeat, columns.__getitem__)
    return reference, batch


# --- a million vectors, in a child process ------------------------------------------------------
def _words(items: np.ndarray) -> list[int]:
    """(N, bytes) uint8 rows -> N little-endian ints (field words, as a pipeline holds them)."""
    data, size = items.tobytes(), items.shape[1]
    return [int.from_bytes(data[i * size : (i + 1) * size], "little") for i in range(items.shape[0])]


def _dot_inputs(rng: np.random.Generator, n: int) -> dict:
    inputs = {}
    for side in "ab":
        codes = rng.integers(0, 256, size=(n, 32), dtype=np.uint8)
        nan = (codes & 0x7F) == 0x7F
        codes[nan & (rng.random((n, 32)) < 0.97)] = 0  # about 3% of vectors hold a NaN element, as in the suite
        inputs[f"{side}_scale"] = (127 + rng.integers(-8, 9, size=n)).tolist()
        inputs[f"{side}_elems"] = _words(codes)
    return inputs


def _quantize_inputs(rng: np.random.Generator, n: int) -> dict:
    x = rng.standard_normal((n, 32)).astype(np.float32) * np.ldexp(np.float32(1), rng.integers(-30, 30, size=(n, 1)))
    return {"x": _words(x.astype("<f4").view(np.uint8))}


def million_child(name: str, total: int, chunk: int) -> None:
    kind, params = SUITES[name]
    suite = suite_from_spec(kind, **params)
    make = _dot_inputs if kind == "dot" else _quantize_inputs
    rng = np.random.default_rng(0)
    compute = compute_cpu = 0.0
    start, start_cpu = time.perf_counter(), time.process_time()
    checksum = 0
    for first in range(0, total, chunk):
        inputs = make(rng, min(chunk, total - first))
        t, t_cpu = time.perf_counter(), time.process_time()
        outputs, flags = suite.compute_batch(inputs)
        compute += time.perf_counter() - t
        compute_cpu += time.process_time() - t_cpu
        checksum ^= hash(tuple(flags)) ^ hash(tuple(outputs[suite.outputs[-1].name]))
        del inputs, outputs, flags
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    print(json.dumps({"compute": compute, "compute_cpu": compute_cpu, "wall": wall, "cpu": cpu, "peak": peak,
                      "checksum": checksum}))


def million(name: str, total: int, chunk: int) -> dict:
    command = [sys.executable, __file__, "--child", name, "--million", str(total), "--chunk", str(chunk)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=400, help="vectors per timed run of compute / compute_batch")
    parser.add_argument("--elements", type=int, default=4096, help="elements per timed run of ref.encode / quantize_block")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--million", type=int, default=1_000_000, help="vectors of the chunked compute_batch runs (0: skip)")
    parser.add_argument("--chunk", type=int, default=1 << 16)
    parser.add_argument("--pipeline", type=int, default=1_000_000, help="vectors of the generate/verify/check runs (0: skip)")
    parser.add_argument("--verify-count", type=int, default=20_000, help="vectors of the suites verified in full")
    parser.add_argument("--workdir", default="/tmp/bench_golden", help="where the pipeline runs write (removed after)")
    parser.add_argument("--presets", type=int, default=2000, help="vectors per preset suite generated (0: skip)")
    parser.add_argument("--preset-only", action="store_true", help="only the preset part")
    parser.add_argument("--fused", type=int, default=20_000,
                        help="vectors of the fused preset suites generated beside the aligned dot suite (0: skip)")
    parser.add_argument("--fused-repeat", type=int, default=3, help="runs of each fused/aligned generation (median)")
    parser.add_argument("--kinds", type=int, default=200_000,
                        help="vectors of the dot / quantize / NVFP4 suites generated side by side (0: skip)")
    parser.add_argument("--explain", type=int, default=100_000,
                        help="vectors of the blackwell_mxf8f6f4 suite checked with --explain against a planted "
                             "device (0: skip)")
    parser.add_argument("--only-fused", action="store_true",
                        help="run the --fused, --kinds, main job and --explain parts only")
    parser.add_argument("--no-main-job", dest="main_job", action="store_false",
                        help="skip the main job (generate + verify of the canonical suite)")
    parser.add_argument("--collection", help="run the main job on the suites this JSON file lists ([kind, params] "
                                             "each) instead of the canonical suite")
    parser.add_argument("--child", choices=sorted(SUITES), help=argparse.SUPPRESS)
    parser.add_argument("--collection-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--cli-child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        million_child(args.child, args.million, args.chunk)
        return
    if args.cli_child is not None:
        cli_child(args.cli_child)
        return
    if args.collection_child:
        collection_child(*args.collection_child)
        return
    if args.presets:
        preset_runs(args.presets, args.repeat, Path(args.workdir))
    if args.fused:
        fused_runs(args.fused, args.fused_repeat, Path(args.workdir))
    if args.kinds:
        kind_runs(args.kinds, args.fused_repeat, Path(args.workdir))
    if args.main_job:
        main_job(Path(args.workdir), args.collection)
    if args.explain:
        explain_run(args.explain, Path(args.workdir))
    if args.preset_only or args.only_fused:
        return
    print(f"medians of {args.repeat} runs, each on unseen inputs; rates per CPU second")
    for label, rate in element_rates(args.elements, args.repeat):
        print(f"{label:40} {rate:12,.0f} elements/s")
    print(f"\n{'suite (' + str(args.vectors) + ' vectors a run)':52} {'compute':>12} {'compute_batch':>14} {'ratio':>7}")
    for name, (kind, params) in SUITES.items():
        reference, batch = suite_rates(name, args.vectors, args.repeat)
        label = f"{kind}/{suite_from_spec(kind, **params).name}"
        shown = ("n/a", "") if batch is None else (f"{batch:,.0f}", f"{batch / reference:6.0f}x")
        print(f"{label:52} {reference:10,.0f}/s {shown[0]:>12}/s {shown[1]:>7}")
    has_batch = hasattr(suite_from_spec(SUITES["dot"][0], **SUITES["dot"][1]), "compute_batch")
    if args.million and has_batch:
        print(f"\n{args.million:,} vectors through compute_batch in chunks of {args.chunk:,} (a fresh process each)")
        for name, (kind, params) in SUITES.items():
            r = million(name, args.million, args.chunk)
            print(f"{kind}/{suite_from_spec(kind, **params).name:46} compute_batch {r['compute']:5.1f} s wall "
                  f"({r['compute_cpu']:5.1f} s CPU); with making the inputs {r['wall']:5.1f} s wall ({r['cpu']:5.1f} s CPU); "
                  f"peak memory {r['peak'] / 2**20:5.0f} MiB")

    if args.pipeline and has_batch:
        pipeline_runs(args.pipeline, args.verify_count, Path(args.workdir))


# --- fused presets of real units --------------------------------------------------------------------
def preset_runs(count: int, repeat: int, workdir: Path) -> None:
    """``golden generate --count`` of each preset's dot suite: vectors per CPU second (median of
    ``repeat`` generations into fresh directories) and the ratio to blackwell_mxf8f6f4 (the first)."""
    from mxsim.golden.storage.files import generate

    print(f"golden generate --count {count} of each fused preset's dot suite; medians of {repeat} runs, CPU time")
    print(f"{'suite':64} {'vectors/s':>10} {'x / blackwell_mxf8f6f4':>24}")
    first = None
    for params in PRESET_SUITES:
        try:
            suite = suite_from_spec("dot", **params)
        except ValueError as error:  # e.g. a format this build lacks
            print(f"{params['preset']:64} skipped: {error}")
            continue
        runs = iter(range(repeat + 1))

        def run(_, suite=suite):
            root = workdir / f"presets-{next(runs)}"
            shutil.rmtree(root, ignore_errors=True)
            generate(suite, root, count=count)
            shutil.rmtree(root, ignore_errors=True)

        rate = count / _median_time(run, repeat, lambda i: i)
        first = first or rate
        print(f"{'dot/' + suite.name:64} {rate:10,.0f} {rate / first:24.2f}")


# --- the commands as a user runs them -------------------------------------------------------------
def cli_child(argv: list[str]) -> None:
    """Run ``mxsim <argv>`` in this (fresh) process; print its exit code, wall and CPU time, peak memory."""
    from mxsim.cli import main as cli

    reference = _timed_reference()
    start, start_cpu = time.perf_counter(), time.process_time()
    code = cli(argv)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"code": code, "wall": wall, "cpu": cpu, "peak": peak, "reference": reference[0],
                      "process": time.process_time()}))


def _timed_reference() -> list[float]:
    """Count the CPU seconds this process spends in the reference model's expected values
    (``crosscheck.reference_expected``: outputs and classes, as generation's check and ``verify``
    call it): a one-item list that the wrapper adds to."""
    from mxsim.golden.compute import crosscheck, pipeline

    spent = [0.0]
    original = crosscheck.reference_expected

    def timed(suite, inputs):
        start = time.process_time()
        try:
            return original(suite, inputs)
        finally:
            spent[0] += time.process_time() - start

    crosscheck.reference_expected = pipeline.reference_expected = timed
    return spent


def collection_child(collection: str, root: str) -> None:
    """Generate the suites the JSON file ``collection`` lists into ``root`` in this (fresh)
    process; print the exit code, wall and CPU time and peak memory, as :func:`cli_child`."""
    from mxsim.golden.kinds.registry import suite_from_spec
    from mxsim.golden.storage.files import generate_suites

    reference = _timed_reference()
    start, start_cpu = time.perf_counter(), time.process_time()
    generate_suites([suite_from_spec(kind, **params) for kind, params in json.loads(Path(collection).read_text())], root)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"code": 0, "wall": wall, "cpu": cpu, "peak": peak, "reference": reference[0],
                      "process": time.process_time()}))


def run_cli(argv: list[str]) -> dict:
    result = subprocess.run([sys.executable, __file__, "--cli-child", *argv], capture_output=True, text=True)
    if result.returncode != 0 or not result.stdout.strip():
        raise RuntimeError(f"mxsim {' '.join(argv)} failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def _row(key: str, label: str, vectors: int, r: dict, unit: str = "vectors") -> dict:
    """Print one measured command; return it as a row (``key`` names it for
    ``benchmarks/update_speed_table.py``)."""
    print(f"{label:58} {vectors:>10,} {unit:8} {r['wall']:7.1f} s wall {r['cpu']:7.1f} s CPU "
          f"{vectors / r['cpu']:>10,.0f}/CPU s  peak {r['peak'] / 2**20:5.0f} MiB  exit {r['code']}")
    return {"key": key, "vectors": vectors, "unit": unit, **r}


def _generate_argv(root: Path, kind: str, params: dict, count: int) -> list[str]:
    return ["golden", "generate", str(root), "--suite", kind, "--params", json.dumps(params), "--count", str(count),
            "--no-progress"]


def fused_runs(count: int, repeat: int, workdir: Path) -> None:
    """``golden generate --count N`` of the aligned dot suite and of each fused preset's suite, in
    turn, ``repeat`` times (a fresh process each): median CPU seconds, vectors per CPU second and
    the ratio to the aligned suite's rate."""
    suites = {"aligned (dot)": SUITES["dot"], **FUSED_SUITES}
    cpu: dict[str, list[float]] = {name: [] for name in suites}
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        for _ in range(repeat):
            for name, (kind, params) in suites.items():
                r = run_cli(_generate_argv(workdir / "fused", kind, params, count))
                cpu[name].append(r["cpu"])
                shutil.rmtree(workdir / "fused", ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    aligned = count / statistics.median(cpu["aligned (dot)"])
    print(f"\ngenerate --count {count:,}, each a fresh process, median of {repeat} runs (CPU seconds)")
    for name, (kind, params) in suites.items():
        median = statistics.median(cpu[name])
        label = f"{name}: {kind}/{suite_from_spec(kind, **params).name}"
        rate = count / median
        print(f"{label:70} {median:7.2f} s CPU {rate:>9,.0f} vectors/CPU s  {rate / aligned:5.2f}x aligned")


def kind_runs(count: int, repeat: int, workdir: Path) -> None:
    """``golden generate --count N`` of each of :data:`KIND_SUITES`, in turn, ``repeat`` times (a
    fresh process each): median CPU seconds and vectors per CPU second."""
    cpu: dict[str, list[float]] = {label: [] for label, *_ in KIND_SUITES}
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        for _ in range(repeat):
            for label, kind, params, extra in KIND_SUITES:
                cpu[label].append(run_cli(_generate_argv(workdir / "kinds", kind, params, count) + extra)["cpu"])
                shutil.rmtree(workdir / "kinds", ignore_errors=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\ngenerate --count {count:,} side by side, each a fresh process, median of {repeat} runs (CPU seconds)")
    for label, *_ in KIND_SUITES:
        median = statistics.median(cpu[label])
        print(f"{label:40} {median:7.2f} s CPU {count / median:>9,.0f} vectors/CPU s")


def main_job(workdir: Path, collection: str | None = None) -> None:
    """The main job: ``golden generate DIR`` of the canonical suite (or of the suites the JSON file
    ``collection`` lists, :func:`collection_child`) into a fresh directory, then ``golden verify
    DIR``, each in a fresh process: CPU and wall seconds of each and the sum."""
    root = workdir / "main-job"
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        if collection is None:
            generate = run_cli(["golden", "generate", str(root), "--no-progress"])
        else:
            result = subprocess.run([sys.executable, __file__, "--collection-child", collection, str(root)],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"generating {collection} failed: {result.stderr[-2000:]}")
            generate = json.loads(result.stdout.splitlines()[-1])
        verify = run_cli(["golden", "verify", str(root), "--no-progress"])
        if verify["code"] != 0:
            raise RuntimeError(f"golden verify of {root} exited with {verify['code']}")
        vectors = sum(entry["count"] for entry in json.loads((root / "index.json").read_text())["suites"].values())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    what = "canonical suite" if collection is None else collection
    print(f"\nthe main job ({what}: {vectors:,} vectors), each a fresh process (CPU after the imports; of it, the "
          "reference model's expected values and everything else)")
    for label, r in (("golden generate", generate), ("golden verify", verify)):
        print(f"{label:20} {r['cpu']:7.1f} s CPU {r['wall']:7.1f} s wall   reference {r['reference']:6.1f} s   "
              f"the rest {r['cpu'] - r['reference']:6.1f} s")
    cpu, wall = generate["cpu"] + verify["cpu"], generate["wall"] + verify["wall"]
    reference = generate["reference"] + verify["reference"]
    print(f"{'main job':20} {cpu:7.1f} s CPU {wall:7.1f} s wall   reference {reference:6.1f} s   "
          f"the rest {cpu - reference:6.1f} s")
    process = generate["process"] + verify["process"]
    print(f"{'':20} whole processes (the interpreter's start and the imports too): {process:.1f} s CPU")


def explain_run(count: int, workdir: Path) -> None:
    """``golden check --explain`` (default budget) of a ``count``-vector blackwell_mxf8f6f4 suite
    against a device computed with one planted option (:data:`EXPLAIN_PLANT`)."""
    from mxsim.golden.compute import pipeline

    kind, params = FUSED_SUITES["blackwell_mxf8f6f4"]
    suite = suite_from_spec(kind, **params)
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        run_cli(_generate_argv(workdir / "explain", kind, params, count))
        suite_dir = workdir / "explain" / kind / suite.name
        planted = suite_from_spec(kind, **{**params, "accumulator": EXPLAIN_PLANT})
        columns = {f.name: [int(line, 16) for line in (suite_dir / f.file).read_text().split()] for f in suite.inputs}
        device = workdir / "device"
        device.mkdir()
        outputs = {f.name: [] for f in planted.outputs}
        for start in range(0, count, pipeline.CHUNK):
            values, _ = pipeline.expected(planted, {name: column[start : start + pipeline.CHUNK]
                                                    for name, column in columns.items()})
            for name, column in values.items():
                outputs[name] += column
        for f in planted.outputs:
            (device / f.file).write_text("".join(f.to_hex(v) + "\n" for v in outputs[f.name]))
        argv = ["--cli-child", "golden", "check", str(suite_dir), str(device), "--explain"]
        result = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True)
        r = json.loads(result.stdout.splitlines()[-1])
        lines = [line for line in result.stdout.splitlines() if line.startswith(("explain:", "best:", "  1."))]
        print(f"\ncheck --explain (default budget) of a {count:,}-vector {kind}/{suite.name} suite, device "
              f"planted with {EXPLAIN_PLANT}: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU")
        for line in lines:
            print(f"    {line}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def pipeline_runs(count: int, verify_count: int, workdir: Path) -> list[dict]:
    """The commands as a user runs them (a fresh process each): ``generate --count`` of each suite,
    ``verify --sample 1000`` of the dot suite, full ``verify`` of a ``verify_count``-vector suite of
    each kind, ``check`` of the dot results. Prints them; returns them as rows keyed
    ``generate-dot``, ``generate-quantize``, ``verify-sample``, ``verify-dot``, ``verify-quantize``,
    ``check`` (a generate row also carries its manifest's ``reference_check``)."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    print("\nthe commands, each in a fresh process (rates per CPU second; the machine is shared)")
    rows = []
    try:
        for name, (kind, params) in SUITES.items():
            suite = suite_from_spec(kind, **params)
            argv = ["golden", "generate", str(workdir / "big"), "--suite", kind, "--params", json.dumps(params),
                    "--count", str(count), "--no-progress"]
            rows.append(_row(f"generate-{name}", f"generate --count {count:,} {kind}/{suite.name}", count,
                             run_cli(argv)))
            manifest = json.loads((workdir / "big" / kind / suite.name / "manifest.json").read_text())
            check = rows[-1]["reference_check"] = manifest["reference_check"]
            print(f"{'':4}reference recomputed {check['reference_checked']:,} of {check['vectors']:,} "
                  f"({check['catalogue_checked']:,} catalogue + {check['sample_checked']:,} sampled)")
        dot_kind, dot_params = SUITES["dot"]
        dot_dir = workdir / "big" / dot_kind / suite_from_spec(dot_kind, **dot_params).name
        r = run_cli(["golden", "verify", str(dot_dir), "--sample", "1000", "--no-progress"])
        rows.append(_row("verify-sample", f"verify --sample 1000 of the {count:,}-vector dot suite", count, r,
                         "lines"))
        for name, (kind, params) in SUITES.items():
            suite = suite_from_spec(kind, **params)
            root = workdir / "verify"
            run_cli(["golden", "generate", str(root), "--suite", kind, "--params", json.dumps(params),
                     "--count", str(verify_count), "--no-progress"])
            r = run_cli(["golden", "verify", str(root / kind / suite.name), "--no-progress"])
            rows.append(_row(f"verify-{name}", f"verify (in full, the reference) {kind}/{suite.name}", verify_count,
                             r))
        device = workdir / "device"
        device.mkdir()
        suite = suite_from_spec(dot_kind, **dot_params)
        for field in suite.outputs:
            (device / field.file).symlink_to(dot_dir / field.file)
        r = run_cli(["golden", "check", str(dot_dir), str(device)])
        rows.append(_row("check", f"check of {count:,} device results (dot, all matching)", count, r, "results"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


if __name__ == "__main__":
    main()
