// Talks to a running nuvec server with OpenAI's own JavaScript SDK (npm `openai`) and prints what it got as one
// JSON object, for tests/serve/http_server_test.cpp to check against the server's in-process answers.
// usage: node openai_client.mjs NPM_DIR BASE_URL API_KEY MODEL
import { createRequire } from 'node:module';

const [npmDir, baseURL, apiKey, model] = process.argv.slice(2);
const require = createRequire(`${npmDir}/`);
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });

const out = {};
const chat = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'w33 w34' }], max_tokens: 12, temperature: 0,
});
out.chat = { text: chat.choices[0].message.content, finish_reason: chat.choices[0].finish_reason, usage: chat.usage };

const completion = await client.completions.create({ model, prompt: 'w10 w11', max_tokens: 12, temperature: 0 });
out.completion = { text: completion.choices[0].text, finish_reason: completion.choices[0].finish_reason };

const stream = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'w33 w34' }], max_tokens: 12, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
let text = '';
let usage = null;
let finish = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    text += choice.delta.content ?? '';
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
out.stream = { text, finish_reason: finish, usage };

// The tiny model's template shows no tools, so its answer stays text; the request's shape is what is checked.
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];
const withTools = await client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'w33 w34' }], max_tokens: 12, temperature: 0, tools, tool_choice: 'auto',
});
out.tools = { text: withTools.choices[0].message.content, finish_reason: withTools.choices[0].finish_reason };

async function error(request) {
  try {
    await request();
    return null;
  } catch (e) {
    return { status: e.status, type: e.type ?? null, param: e.param ?? null, message: e.message };
  }
}
out.bad_temperature = await error(() => client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'w1' }], temperature: 'hot' }));
out.bad_tool_choice = await error(() => client.chat.completions.create({
  model, messages: [{ role: 'user', content: 'w1' }], tools,
  tool_choice: { type: 'function', function: { name: 'no_such_tool' } } }));
out.unknown_model = await error(() => client.completions.create({ model: 'no-such-model', prompt: 'w1' }));
out.wrong_key = await error(() => new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 }).models.list());
// The SDK asks for base64 and decodes it to floats.
const embedding = await client.embeddings.create({ model, input: ['w33 w34', 'w10'] });
out.embeddings = { vectors: embedding.data.map((d) => d.embedding), usage: embedding.usage };
const models = await client.models.list();
out.models = models.data.map((m) => m.id);

console.log(JSON.stringify(out));
