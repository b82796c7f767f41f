// Reads recorded tool-call responses with OpenAI's own JavaScript SDK (npm `openai`), its fetch answered from files,
// and prints what the SDK made of them as one JSON object, for tests/serve/tool_calls_test.cpp to check.
// usage: node openai_tool_calls.mjs NPM_DIR DIR   (DIR holds whole.json and stream.txt)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const [npmDir, dir] = process.argv.slice(2);
const require = createRequire(`${npmDir}/`);
const OpenAI = require('openai');

// The server's recorded answer for each request: the SSE body when the request streams, else the JSON body.
const fetch = async (_url, init) => {
  const streamed = JSON.parse(init.body).stream === true;
  return new Response(readFileSync(`${dir}/${streamed ? 'stream.txt' : 'whole.json'}`), {
    status: 200, headers: { 'content-type': streamed ? 'text/event-stream' : 'application/json' },
  });
};
const client = new OpenAI({ baseURL: 'http://127.0.0.1:1/v1', apiKey: 'k', maxRetries: 0, fetch });
const request = {
  model: 'tiny', messages: [{ role: 'user', content: 'w1' }],
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
};

const out = {};
const whole = await client.chat.completions.create(request);
out.whole = { message: whole.choices[0].message, finish_reason: whole.choices[0].finish_reason };

// The SDK's own accumulator, which checks each delta's shape as it folds it in.
const runner = client.chat.completions.stream({ ...request, stream: true });
const final = await runner.finalChatCompletion();
out.stream = { message: final.choices[0].message, finish_reason: final.choices[0].finish_reason };

console.log(JSON.stringify(out));
