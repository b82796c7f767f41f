// Reads a GGUF file with Hugging Face's independent parser (@huggingface/gguf) and prints its metadata and tensor
// infos as JSON (64-bit integers as strings). Usage: node gguf_read.js <node_modules dir> <file.gguf>
const path = require("path");
const { gguf } = require(path.join(process.argv[2], "@huggingface/gguf"));

gguf(process.argv[3], { allowLocalFile: true }).then(({ metadata, tensorInfos }) => {
  const plain = (_, v) => (typeof v === "bigint" ? v.toString() : v);
  console.log(JSON.stringify({ metadata, tensorInfos }, plain));
}).catch((e) => {
  console.error(e);
  process.exit(1);
});
