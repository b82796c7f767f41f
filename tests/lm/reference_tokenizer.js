// Encodes and decodes a batch with Hugging Face's tokenizers (the Rust library through its Node binding), the
// reference for nuvec's tokenizer tests. One process per tokenizer file, for the whole batch.
// Usage: node reference_tokenizer.js NPM_DIR TOKENIZER_JSON REQUESTS_JSONL OUTPUT_JSONL
// Each request line is {"text": string} or {"ids": [int]}; each output line answers the request on the same line:
//   text: {"ids": ids with special tokens, "plain": ids without, "decoded": decode(ids, false),
//          "decoded_skip": decode(ids, true)}
//   ids:  {"decoded": decode(ids, false), "decoded_skip": decode(ids, true)}
const fs = require('fs');
const path = require('path');

async function main() {
  const [npmDir, tokenizerPath, requestsPath, outputPath] = process.argv.slice(2);
  const { Tokenizer } = require(path.resolve(npmDir, 'node_modules', 'tokenizers'));
  const tokenizer = Tokenizer.fromFile(tokenizerPath);
  const lines = fs.readFileSync(requestsPath, 'utf8').split('\n').filter((line) => line.length > 0);
  const out = [];
  for (const line of lines) {
    const request = JSON.parse(line);
    if (request.text !== undefined) {
      const ids = (await tokenizer.encode(request.text, null, { addSpecialTokens: true })).getIds();
      const plain = (await tokenizer.encode(request.text, null, { addSpecialTokens: false })).getIds();
      out.push(JSON.stringify({
        ids: Array.from(ids),
        plain: Array.from(plain),
        decoded: await tokenizer.decode(Array.from(ids), false),
        decoded_skip: await tokenizer.decode(Array.from(ids), true),
      }));
    } else {
      out.push(JSON.stringify({
        decoded: await tokenizer.decode(request.ids, false),
        decoded_skip: await tokenizer.decode(request.ids, true),
      }));
    }
  }
  fs.writeFileSync(outputPath, out.join('\n') + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
