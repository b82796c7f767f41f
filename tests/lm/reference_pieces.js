// Runs the text pipeline of Hugging Face's tokenizers (the Rust library through its Node binding) for the tests
// of normalizers, pre-tokenizers and added tokens. Usage: node reference_pieces.js NPM_DIR REQUESTS_JSON
// REQUESTS_JSON holds [{tokenizer: <tokenizer.json object>, mode: "normalize"|"pretokenize"|"encode",
// texts: [...]}, ...]; prints, for each request, the result for each text:
//   normalize:   the normalized string
//   pretokenize: the words (preTokenizeString on the whole text)
//   encode:      {ids, words} of encode(text) without special tokens added by a post-processor
const fs = require('fs');
const path = require('path');

async function main() {
  const [npmDir, requestsPath] = process.argv.slice(2);
  const { Tokenizer } = require(path.resolve(npmDir, 'node_modules', 'tokenizers'));
  const requests = JSON.parse(fs.readFileSync(requestsPath, 'utf8'));
  const results = [];
  for (const request of requests) {
    const tokenizer = Tokenizer.fromString(JSON.stringify(request.tokenizer));
    const out = [];
    for (const text of request.texts) {
      if (request.mode === 'normalize') {
        out.push(tokenizer.getNormalizer().normalizeString(text));
      } else if (request.mode === 'pretokenize') {
        out.push(tokenizer.getPreTokenizer().preTokenizeString(text).map((split) => split[0]));
      } else if (request.mode === 'encode') {
        const encoding = await tokenizer.encode(text, null, { addSpecialTokens: false });
        out.push({ ids: encoding.getIds(), words: encoding.getWordIds() });
      } else {
        throw new Error(`unknown mode ${request.mode}`);
      }
    }
    results.push(out);
  }
  process.stdout.write(JSON.stringify(results));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
