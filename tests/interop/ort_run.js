// Runs an ONNX model with ONNX Runtime (the npm package onnxruntime-node) on a raw float32
// input file of shape [N, ...SAMPLE] in batches of at most 1000, and writes the raw float32
// outputs. Usage: node ort_run.js ORT_MODULE_DIR MODEL INPUT_BIN OUTPUT_BIN N D1 [D2 ...]
"use strict";
const fs = require("fs");
const [moduleDir, model, inputPath, outputPath, n, ...sample] = process.argv.slice(2);
const ort = require(moduleDir);

async function main() {
  const runner = await ort.InferenceSession.create(model, { intraOpNumThreads: 2, interOpNumThreads: 1 });
  const dims = sample.map(Number);
  const per = dims.reduce((a, b) => a * b, 1);
  const buf = fs.readFileSync(inputPath);
  const input = new Float32Array(buf.buffer, buf.byteOffset, Number(n) * per);
  const chunks = [];
  for (let start = 0; start < Number(n); start += 1000) {
    const count = Math.min(1000, Number(n) - start);
    const x = new ort.Tensor("float32", input.slice(start * per, (start + count) * per), [count, ...dims]);
    const out = await runner.run({ [runner.inputNames[0]]: x });
    const y = out[runner.outputNames[0]].data;
    chunks.push(Buffer.from(y.buffer, y.byteOffset, y.byteLength));
  }
  fs.writeFileSync(outputPath, Buffer.concat(chunks));
  console.log(`onnxruntime-node ${require(moduleDir + "/package.json").version}: ran ${model} on ${n} inputs`);
}
main().catch((e) => {
  console.error(`error: ${e.stack || e}`);
  process.exit(1);
});
