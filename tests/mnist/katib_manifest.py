#!/usr/bin/env python3
"""examples/katib/experiment.yaml fits the MNIST example: every flag its trial command
passes exists (mnist --help), every tuned parameter reaches the command, the container
Katib collects from is the one that runs, and Katib's default StdOut filter finds the
objective and additional metrics in the example's real output.
Usage: katib_manifest.py MNIST_BINARY MANIFEST STDOUT_SAMPLE"""
import re
import subprocess
import sys

import yaml

binary, manifest, sample = sys.argv[1:4]
exp = yaml.safe_load(open(manifest))
assert exp["kind"] == "Experiment" and exp["apiVersion"] == "kubeflow.org/v1beta1"
spec = exp["spec"]
assert spec["metricsCollectorSpec"]["collector"]["kind"] == "StdOut"
metrics = [spec["objective"]["objectiveMetricName"], *spec["objective"].get("additionalMetricNames", [])]
assert spec["objective"]["type"] == "maximize" and metrics[0] == "accuracy", spec["objective"]

template = spec["trialTemplate"]
job = template["trialSpec"]
container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
assert container["name"] == template["primaryContainerName"] == "pytorch"  # the PyTorchJob container name
command = container["command"]

# Every tuned parameter is a trial parameter, and every trial parameter is used.
tuned = {p["name"] for p in spec["parameters"]}
assert {p["reference"] for p in template["trialParameters"]} == tuned
for p in template["trialParameters"]:
    assert any("${trialParameters.%s}" % p["name"] in arg for arg in command), p

# Every flag exists in this build of the example.
help_text = subprocess.run([binary, "--help"], check=True, capture_output=True, text=True).stdout
for arg in command[1:]:
    flag = arg.split("=", 1)[0]
    assert re.search(r"(^|\s)%s\b" % re.escape(flag), help_text), f"{flag} is not a flag of the example"

# Katib's default StdOut filter, applied to the example's output as Katib does: each
# metric it is told to collect must be found, with a number.
katib_filter = re.compile(r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)")
found = {}
for line in open(sample):
    for m in katib_filter.finditer(line):
        found.setdefault(m.group(1), []).append(float(m.group(2)))
for name in metrics:
    assert found.get(name), f"Katib would find no {name}= in the example's output"
assert set(found) == set(metrics), f"other key=value pairs in stdout would confuse a collector: {found}"
print(f"OK: {len(command) - 1} flags, parameters {sorted(tuned)}, metrics {found}")
