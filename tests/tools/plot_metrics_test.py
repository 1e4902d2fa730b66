#!/usr/bin/env python3
"""tools/plot_metrics turns a small metrics file into a valid PNG (signature, chunk CRCs,
IHDR size, image data, IEND), and refuses a file that is not JSON lines.
Usage: plot_metrics_test.py PYTHON_WITH_MATPLOTLIB PLOT_METRICS WORK_DIR
Exits 77 (skipped) when PYTHON_WITH_MATPLOTLIB is empty."""
import json
import pathlib
import shutil
import struct
import subprocess
import sys
import zlib

python, tool, work = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
if not python:
    print("SKIP: no python3 with matplotlib found (Debian: apt-get install python3-matplotlib)")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)

metrics = work / "m.jsonl"
rows = [{"kind": "step", "epoch": 1, "step": s, "loss": 2.3 / s, "accuracy": 1 - 0.9 / s, "lr": 1.0} for s in (1, 11, 21)]
rows += [{"kind": "epoch", "epoch": 1, "step": 30, "loss": 0.2, "accuracy": 0.94},
         {"kind": "step", "epoch": 2, "step": 31, "loss": None, "accuracy": 0.9},  # a diverged loss is null
         {"kind": "epoch", "epoch": 2, "step": 60, "loss": 0.1, "accuracy": 0.97}]
metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
png = work / "m.png"
subprocess.run([python, tool, str(metrics), str(png), "--title", "test"], check=True)

data = png.read_bytes()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
pos, chunks = 8, []
while pos < len(data):
    (length,) = struct.unpack(">I", data[pos:pos + 4])
    kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
    (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
    assert crc == zlib.crc32(kind + body), f"bad CRC in chunk {kind}"
    chunks.append((kind, body))
    pos += 12 + length
assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b""), [c[0] for c in chunks]
width, height = struct.unpack(">II", chunks[0][1][:8])
assert (width, height) == (640, 280), (width, height)
pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
assert len(set(pixels)) > 10, "the image is blank"  # curves, text and axes, not one colour

bad = work / "bad.jsonl"
bad.write_text('{"kind": "step", "step": 1}\nnot json\n')
result = subprocess.run([python, tool, str(bad), str(work / "bad.png")], capture_output=True, text=True)
assert result.returncode != 0 and "bad.jsonl:2: not JSON" in result.stderr, result.stderr
print(f"OK: {width}x{height} PNG, {len(data)} bytes")
