"""A simulated device: a suite's own inputs computed under another configuration, written as the
device's result files (``<field>.hex`` per output field, what ``mxsim golden check`` reads).

This is how to try ``check`` and ``check --explain`` without hardware, and how their tests plant
a device that differs from the suite in a known way::

    from mxsim.golden.device.simulate import plant_device
    plant_device("out/quantize/mxfp8_e4m3", "dut_ceil", options={"scale_rule": "ceil"})
    # mxsim golden check out/quantize/mxfp8_e4m3 dut_ceil --explain   -> names scale_rule=ceil

``changes`` are suite parameters (the keys of ``--params``, :mod:`..kinds.params`) replacing the
manifest's: a whole value, or for an object-valued key (``options``, ``accumulator``) the fields
given, merged into the manifest's object. The expected values come from the reference model
(each suite's ``compute``), a chunk of lines at a time (:func:`.limits.chunk_vectors`), so memory
stays bounded; each value is written with :meth:`.fields.Field.to_hex` (fixed-width lower-case hex,
two's complement for a signed field).
"""

from __future__ import annotations

from pathlib import Path

from ...writing import naming_file
from ..compute import limits
from ..compute import pipeline
from ..storage.columns import RecordReader, field_values
from ..kinds.registry import suite_from_spec
from ..storage.verify import load_suite

__all__ = ["plant_device"]


def plant_device(suite_dir, out_dir, **changes) -> Path:
    """Write into ``out_dir`` (created) the output files of a device that computes the inputs of
    the suite in ``suite_dir`` with the suite's parameters changed by ``changes``; returns
    ``out_dir``. ValueError for changes that do not make a suite of the same kind and fields."""
    suite_dir, out_dir = Path(suite_dir), Path(out_dir)
    manifest, suite = load_suite(suite_dir)
    params = dict(manifest["params"])
    for key, value in changes.items():
        merged = isinstance(value, dict) and isinstance(params.get(key), dict)
        params[key] = {**params[key], **value} if merged else value
    device = suite_from_spec(manifest["kind"], **params)
    if [f.describe() for f in device.fields] != [f.describe() for f in suite.fields]:
        raise ValueError(f"{changes}: the changed suite has other fields than {suite.kind}/{suite.name}")
    out_dir.mkdir(parents=True, exist_ok=True)
    count = manifest["count"]
    chunk = limits.chunk_vectors(limits.suite_bytes(suite, 1), pipeline.CHUNK)
    sources = {f.name: open(suite_dir / f.file, "rb") for f in suite.inputs}  # noqa: SIM115 - closed below
    targets = {f.name: open(out_dir / f.file, "w", encoding="ascii", newline="\n")  # noqa: SIM115 - closed below
               for f in device.outputs}
    try:
        readers = {f.name: RecordReader(sources[f.name], [f], str(suite_dir / f.file)) for f in suite.inputs}
        for start in range(0, count, chunk):
            size = min(chunk, count - start)
            inputs = {}
            for f in suite.inputs:
                values = field_values(readers[f.name].read(size)[:, :f.hex_digits], f)
                inputs[f.name] = values.tolist() if hasattr(values, "tolist") else values
            outputs, _ = pipeline.reference_expected(device, inputs)
            for f in device.outputs:
                with naming_file(out_dir / f.file):  # a full disk names the file
                    targets[f.name].write(f.to_hex_lines(outputs[f.name]))
    finally:
        for file in sources.values():
            file.close()
        for f in device.outputs:
            with naming_file(out_dir / f.file):
                targets[f.name].close()
    return out_dir
