// Asks a running nuvec server for forced tool calls (tool_choice "required" and a named function) with OpenAI's own
// JavaScript SDK (npm `openai`) and prints what the SDK made of the answers as one JSON object, for
// tests/serve/tool_choice_test.cpp to check.
// usage: node openai_tool_choice.mjs NPM_DIR BASE_URL TOOLS_JSON
import { createRequire } from 'node:module';

const [npmDir, baseURL, toolsJson] = process.argv.slice(2);
const require = createRequire(`${npmDir}/`);
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
const tools = JSON.parse(toolsJson);

// Sampled, with a bias towards closing quotes (id 2) and braces (id 93) that keeps the random model's calls short.
const request = (tool_choice) => ({
  model: 'json', messages: [{ role: 'user', content: 'Call a tool.' }], tools, tool_choice,
  temperature: 1, seed: 3, max_tokens: 2000, logit_bias: { 2: 3, 93: 4 },
});
const answer = (completion) => ({
  message: completion.choices[0].message, finish_reason: completion.choices[0].finish_reason,
});

const out = {};
out.required = answer(await client.chat.completions.create(request('required')));
// The SDK's own accumulator, which checks each tool-call delta's shape as it folds it in.
const runner = client.chat.completions.stream({ ...request('required'), stream: true });
out.required_stream = answer(await runner.finalChatCompletion());
out.named = answer(await client.chat.completions.create(request({ type: 'function', function: { name: 'search' } })));
try {
  await client.chat.completions.create(request({ type: 'function', function: { name: 'get_time' } }));
  out.unknown_name = null;
} catch (e) {
  out.unknown_name = { status: e.status, param: e.param ?? null };
}

console.log(JSON.stringify(out));
