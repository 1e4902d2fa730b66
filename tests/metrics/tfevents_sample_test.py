#!/usr/bin/env python3
"""Runs write_tfevents_sample and reads its file back with tfevents.py (an independent
reader): every scalar, step and wall time must be what the program wrote, in order.
Usage: tfevents_sample_test.py WRITER WORK_DIR"""
import math
import pathlib
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import tfevents  # noqa: E402

writer, work = sys.argv[1], pathlib.Path(sys.argv[2])
shutil.rmtree(work, ignore_errors=True)
path = pathlib.Path(subprocess.run([writer, str(work / "run")], check=True, capture_output=True, text=True).stdout.strip())
assert path.parent == work / "run" and path.name.startswith("events.out.tfevents."), path


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


expected = []
for step in range(50):
    t = 1700000000.0 + 0.25 * step
    expected.append((t, step, "train/loss", f32(2.5 * math.exp(-step / 10.0))))
    expected.append((t, step, "test/accuracy", f32(step / 50.0)))
expected += [(1.5, 1 << 40, "edge/big_step", f32(-1e30)), (2.5, -5, "edge/negative_step", 3.0),
             (3.5, 7, "edge/\u00fcnicode", math.inf), (4.5, 8, "edge/nan", math.nan)]

events = tfevents.read_events(path)
assert events[0]["file_version"] == "brain.Event:2" and events[0]["values"] == [], events[0]
got = [(e["wall_time"], e["step"], *e["values"][0]) for e in events[1:]]
assert all(len(e["values"]) == 1 for e in events[1:])
assert len(got) == len(expected), f"{len(got)} scalar events, expected {len(expected)}"
for g, x in zip(got, expected):
    same_value = (math.isnan(g[3]) and math.isnan(x[3])) or g[3] == x[3]
    assert g[:3] == x[:3] and same_value, f"read {g}, wrote {x}"
print(f"OK: {len(got)} scalars read back from {path.name}")
