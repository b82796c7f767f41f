// The reference side of run_tokenizer.py: Hugging Face's tokenizers (the Rust library, through its Node binding)
// encoding the same documents as tokenizer_bench. Prints "<row> <median ms> <tokens>" lines like tokenizer_bench.
// encode_each is one encodeBatch call run on one thread (run_tokenizer.py sets RAYON_NUM_THREADS=1 for it): one
// call into the binding rather than one per document, so the binding's per-call cost does not count against it.
//
// usage: node bench/tokenizer_hf.js NODE_MODULES TOKENIZER_JSON DOCUMENTS_JSONL REPS

const fs = require('fs');
const path = require('path');

const [modules, tokenizerFile, documentsFile, repsText] = process.argv.slice(2);
const { Tokenizer } = require(path.join(modules, 'tokenizers'));
const tokenizer = Tokenizer.fromFile(tokenizerFile);
const documents = fs.readFileSync(documentsFile, 'utf8').split('\n').filter((l) => l.length > 0).map(JSON.parse);
const whole = documents.join('\n');
const reps = Number(repsText);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function time(run) {
  await run();  // warm-up
  const times = [];
  let tokens = 0;
  for (let i = 0; i < reps; ++i) {
    const start = process.hrtime.bigint();
    tokens = await run();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return [median(times), tokens];
}

(async () => {
  const [singleMs, singleTokens] = await time(async () => (await tokenizer.encode(whole, null, { addSpecialTokens: false })).getIds().length);
  console.log(`encode_single ${singleMs.toFixed(2)} ${singleTokens}`);
  const row = process.env.RAYON_NUM_THREADS === '1' ? 'encode_each' : 'encode_batch';
  const [batchMs, batchTokens] = await time(async () => {
    const encodings = await tokenizer.encodeBatch(documents, { addSpecialTokens: false });
    let n = 0;
    for (const e of encodings) n += e.getIds().length;
    return n;
  });
  console.log(`${row} ${batchMs.toFixed(2)} ${batchTokens}`);
})();
