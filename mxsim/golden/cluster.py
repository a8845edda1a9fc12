"""Golden suites on a Dask distributed cluster (the optional extra ``mxsim[dist]``).

``generate``, ``verify`` and ``check`` split each suite into pieces of lines and run the pieces
as Dask tasks, one per worker thread at a time; the results are byte for byte those of one
process:

* **generate**: each task writes one shard (:func:`.files.write_suite`, lines
  [i*T//n, (i+1)*T//n)) into a staging directory ``.mxsim-shards-<random>`` inside the output
  root (held locked by the client: a later generate removes it if the client was killed,
  :func:`.storage.staging.remove_stale`); the client merges each suite's shards into place as
  soon as they are all written (:mod:`.storage.merge`: sizes and SHA-256 checked, temporary
  files renamed, the manifest last, so a suite is there whole or not at all) and removes them.
  The workers must see the output root at the same path (a shared file system; a local cluster
  always does);
* **verify**: the client checks the tree, the index and every file's hash, line count and
  format; the tasks recompute ranges of lines with the reference model
  (:func:`.verify.recompute`, ranges aligned to :data:`.pipeline.CHUNK`), and the client reports
  the first mismatching line of each suite, as one process does;
* **check**: with a device directory whose files have exactly the suite's size, the tasks compare
  ranges of lines (:func:`.check.compare_range`); any file error falls back to the one-process
  check, whose report names it.

How many pieces: a suite of T vectors becomes min(ceil(T / minimum), 4 * worker threads)
pieces, ``minimum`` 16,384 vectors for generate and verify, 4 * 65,536 lines for check: a small
suite is one task, a large one keeps every worker busy. The bytes do not depend on the number of
pieces.

:func:`open_cluster` connects to a scheduler (``--scheduler tcp://host:8786``: a cluster started
with ``dask scheduler`` / ``dask worker``, or dask-jobqueue on a Slurm or LSF farm) or starts a
``LocalCluster`` of worker processes (``--workers N``, one thread each). Dask is imported there
and nowhere else in mxsim.

Failures of the cluster itself are a :class:`ClusterError` with a one-line reason, never a Dask
traceback: workers that cannot start or a scheduler that does not answer within 30 s, a task
whose workers died (``KilledWorker``, e.g. killed for memory), no worker left for
:data:`NO_WORKER_SECONDS` while tasks wait. Each generate task writes into a directory of its
own, so a task run again after its worker died does not touch the first attempt's files.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from tqdm import tqdm

from .compute import pipeline
from .kinds.registry import suite_from_spec
from .storage import files, merge
from .storage.files import GenerationInterrupted
from .storage.staging import SHARDS_PREFIX, Staging, parent_locked

__all__ = ["Cluster", "ClusterError", "MissingExtra", "open_cluster", "generate_suites", "generate_piece",
           "GENERATE_VECTORS"]

GENERATE_VECTORS = 1 << 14  # at least this many vectors per generate or verify task
_TASKS_PER_THREAD = 4
_CONNECT_SECONDS = 30
NO_WORKER_SECONDS = 120  # how long tasks may wait with no worker in the cluster before the run fails
_POLL_SECONDS = 1.0  # how often a waiting client looks at the workers


class MissingExtra(ImportError):
    """Dask distributed is not installed (the extra ``mxsim[dist]``)."""


class ClusterError(RuntimeError):
    """The cluster failed the work, not the work itself: workers that could not start, a task whose
    workers died (Dask's ``KilledWorker``), no worker left for :data:`NO_WORKER_SECONDS`. The
    message says which and what to do; nothing half-written is left (the staging is removed)."""


def _distributed():
    try:
        import distributed
    except ImportError as error:
        raise MissingExtra(f"--scheduler and --workers need Dask distributed, which is not installed ({error}); "
                          "install the extra: pip install 'mxsim[dist]'") from None
    return distributed


class Cluster:
    """A connected Dask ``client`` (and the ``LocalCluster`` it runs on, if mxsim started one):
    :meth:`ranges` splits a suite's lines into tasks, :meth:`map` runs them."""

    def __init__(self, client, local=None):
        self.client, self.local = client, local

    @property
    def threads(self) -> int:
        """Worker threads in the cluster now (at least 1)."""
        return max(1, sum(self.client.nthreads().values()))

    def ranges(self, total: int, minimum: int, align: int = 1) -> list[tuple[int, int]]:
        """Lines [0, total) as consecutive [first, last) ranges of at least ``minimum`` lines
        (but the last), at most 4 per worker thread, every boundary a multiple of ``align``."""
        pieces = max(1, min(-(-total // minimum), _TASKS_PER_THREAD * self.threads))
        step = -(-max(1, -(-total // pieces)) // align) * align
        return [(first, min(first + step, total)) for first in range(0, total, step)] or [(0, 0)]

    def map(self, function, jobs: list[tuple], label: str | None = None) -> Iterator:
        """``function(*job)`` for every job, as Dask tasks all submitted at once; yields the
        results in the order of ``jobs`` (a task's exception is raised when its turn comes).
        Tasks not yet finished are cancelled when the iteration stops early."""
        futures = [self.client.submit(function, *job, pure=False) for job in jobs]
        try:
            with tqdm(total=len(futures), desc=label, disable=label is None, leave=False) as bar:
                for number, future in enumerate(futures, 1):
                    yield self._result(future, f"task {number} of {len(futures)} ({function.__name__})")
                    bar.update()
        finally:
            self.client.cancel([future for future in futures if not future.done()])

    def _result(self, future, task: str):
        """The task's result, waiting at most :data:`NO_WORKER_SECONDS` while the cluster has no
        worker; a task whose workers died is a :class:`ClusterError` (the task's own exceptions,
        a ValueError say, are raised as they are)."""
        distributed = _distributed()
        alone = 0.0
        while True:
            try:
                return future.result(timeout=_POLL_SECONDS)
            except distributed.TimeoutError:
                pass
            except distributed.KilledWorker as error:
                raise ClusterError(
                    f"{task}: the workers running it died ({type(error).__name__}: {_first_line(error)}); a worker "
                    "killed for memory (see the worker logs), or stopped: give the workers more memory, or lower "
                    "--count, and run again") from None
            except (OSError, distributed.CancelledError) as error:
                if future.status == "error":
                    raise  # the task's own OSError
                raise ClusterError(f"{task}: lost ({type(error).__name__}: {_first_line(error)}); the scheduler or the "
                                   "connection to it failed; run again") from None
            alone = alone + _POLL_SECONDS if not self.client.nthreads() else 0.0
            if alone >= NO_WORKER_SECONDS:
                raise ClusterError(f"{task}: no worker in the cluster for {NO_WORKER_SECONDS} s (all stopped or "
                                   "died); start workers (dask worker ADDRESS) or run without --scheduler/--workers")

    def close(self) -> None:
        self.client.close()
        if self.local is not None:
            self.local.close()


@contextlib.contextmanager
def open_cluster(scheduler: str | None = None, workers: int | None = None):
    """A :class:`Cluster`: connected to the scheduler at ``scheduler`` (e.g.
    ``tcp://10.0.0.1:8786``), or a local cluster of ``workers`` processes of one thread each;
    None when neither is given. Closed (the local cluster shut down) on exit."""
    if scheduler is None and workers is None:
        yield None
        return
    if scheduler is not None and workers is not None:
        raise ValueError("--scheduler and --workers exclude each other: --scheduler ADDRESS uses a running cluster, "
                         "--workers N starts a local one")
    if workers is not None and (type(workers) is not int or workers < 1):
        raise ValueError(f"--workers={workers!r} is not allowed; expected a positive integer")
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise ValueError(f"--scheduler={scheduler!r} is not allowed; expected an address such as tcp://host:8786")
    distributed = _distributed()
    local = None
    try:
        if workers is not None:
            local = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                             dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(local, timeout=_CONNECT_SECONDS)
        else:
            client = distributed.Client(scheduler, timeout=_CONNECT_SECONDS)
    except (KeyboardInterrupt, MemoryError):
        if local is not None:
            local.close()
        raise
    except Exception as error:  # Dask's own (e.g. "Nanny failed to start", a timeout): say what failed
        if local is not None:
            local.close()
        what = f"start a local cluster of {workers} worker(s)" if workers is not None else f"connect to {scheduler}"
        raise ClusterError(f"could not {what} ({type(error).__name__}: {_first_line(error)})"
                           + ("; is the scheduler running at that address?" if workers is None else
                              "; lower --workers or free memory")) from None
    cluster = Cluster(client, local)
    try:
        yield cluster
    finally:
        cluster.close()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 200 else line[:197] + "..."


# --- generate --------------------------------------------------------------------------------
def _spec(suite) -> tuple[str, dict]:
    """(kind, params) as a manifest records them: what a worker rebuilds the suite from."""
    return suite.kind, json.loads(json.dumps(suite.params(), default=str))


def generate_piece(kind: str, params: dict, seed: int, level: int, count: int | None, index: int, pieces: int,
                   staging: str, npz: bool, reference_only: bool = False) -> str:
    """A task: write shard ``index`` of ``pieces`` of the suite into a new directory of its own
    under ``staging`` (a task run again after its worker died, or twice at once, never touches
    another attempt's files); the shard's directory."""
    suite = suite_from_spec(kind, **params)
    plan = pipeline.plan(suite, level, count)
    attempt = Path(tempfile.mkdtemp(prefix=f"task-{index}-", dir=staging))
    try:
        directory, _, _ = files.write_suite(suite, plan, attempt, seed, level, (index, pieces), None, npz,
                                            reference_only)
    except BaseException:
        shutil.rmtree(attempt, ignore_errors=True)
        raise
    return str(directory)


def generate_suites(cluster: Cluster, suites: list, root, seed: int = 0, level: int = 1, progress: bool = False,
                    npz: bool = False, count: int | None = None, reference_only: bool = False) -> list[Path]:
    """:func:`.files.generate_suites` on ``cluster``: the same files, manifests and index (see
    the module docstring). The free space asked for is twice the suites' (shards and suites)."""
    seed = files.check_seed(seed)
    root, plans, keys = files.prepare_generation(suites, root, level, None, count, copies=2)
    root = root.resolve()
    with parent_locked(root):  # held locked while it lives: a later generate removes it only if this one died
        held = Staging(root, SHARDS_PREFIX)
    staging = held.path
    written: list[Path] = []
    try:
        jobs, pieces = [], []
        for suite, plan in zip(suites, plans):
            n = len(cluster.ranges(plan.total, GENERATE_VECTORS))
            jobs += [(*_spec(suite), seed, level, count, i, n, str(staging), npz, reference_only) for i in range(n)]
            pieces.append(n)
        label = f"generate {len(suites)} suite(s), {len(jobs)} task(s)" if progress else None
        with contextlib.closing(cluster.map(generate_piece, jobs, label)) as results:
            for suite, plan, n in zip(suites, plans, pieces):
                shards = [next(results) for _ in range(n)]
                written.append(_assemble(root, staging, suite, plan, shards))
    except KeyboardInterrupt:
        current = keys[min(len(written), len(keys) - 1)]
        kept = (root / current / files.MANIFEST).is_file()
        raise GenerationInterrupted(root, len(written), len(suites), current, kept) from None
    finally:
        held.remove()
    return written


def _assemble(root: Path, staging: Path, suite, plan, directories: list[str]) -> Path:
    """Merge one suite's staged shards into ``root``; remove them."""
    for directory in directories:
        if not Path(directory).is_dir():
            raise OSError(f"{directory}: a worker wrote this shard where this machine does not see it; with "
                          "--scheduler the output directory must be on a file system the workers share, at the "
                          "same path")
        if not (Path(directory) / files.MANIFEST).is_file():  # pragma: no cover - each attempt has its directory
            raise OSError(f"{directory}: the shard its task reported is incomplete (no {files.MANIFEST}); run again")
    shards = merge.find_shards(directories)
    (key, group), = shards.items()
    if merge.check_group(key, group) != plan:  # pragma: no cover - the tasks were given this plan
        raise AssertionError(f"{key}: the shards' plan differs from the generation's")
    directory = merge.merge_group(root, group, plan)
    for shard in directories:  # the attempts' directories (task-<i>-<random>/<kind>/<suite>/shard-...)
        attempt = Path(shard).parents[2]
        if attempt.parent == staging:
            shutil.rmtree(attempt, ignore_errors=True)
    return directory
