#pragma once

// What the serve tests share: a tiny random-weight chat model written as a Hugging Face folder (a word-level
// tokenizer with a chat template), an in-process server (registry, metrics, API) over it, and helpers to build
// requests and read responses, server-sent events included.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/serve/api.h"
#include "nuvec/serve/http_types.h"
#include "nuvec/serve/metrics.h"
#include "nuvec/serve/model_registry.h"
#include "nuvec/serve/request_log.h"

namespace nuvec::serve::test {

/// The folder of a 2-layer Llama over a 96-word vocabulary ("<unk>", "<s>", "</s>", "user", "assistant", "system",
/// then words w6 ... w95, a few of them multi-byte), whose chat template writes "ROLE CONTENT " per message and
/// "assistant" to prompt the answer. Its lm_head is scaled so greedy choices are far from ties. Written once per
/// process.
const std::string& chat_model_dir();
/// Another random model (other weights) over the chat model's vocabulary: a draft for speculative decoding.
const std::string& draft_model_dir();
/// A 2-layer Llama over the 95 printable ASCII characters, one token each (id: the character minus ' '), and
/// "<|end|>" (95, EOS), with a chat template that joins the messages' contents: a vocabulary that can write any
/// JSON. Written once per process.
const std::string& json_model_dir();
/// The chat model's weights under a vocabulary with byte tokens: "<unk>", "<s>", "</s>", '"', then <0xE2>, <0x82>
/// and <0xAC> (the UTF-8 bytes of "€", which no token holds whole), then words w7 ... w95. No chat template.
const std::string& byte_model_dir();

/// A registry, metrics and API serving the chat model as "tiny" (loaded once per process, its own scheduler per
/// server).
struct TestServer {
  explicit TestServer(SchedulerOptions scheduler = {}, ApiOptions api_options = {}, ModelOptions model = {});

  Metrics metrics;
  ModelRegistry registry{metrics};
  RequestLog log{nullptr};
  Api api;
};

/// A registry, metrics and API serving the JSON model (json_model_dir) as "json".
struct JsonServer {
  JsonServer();

  Metrics metrics;
  ModelRegistry registry{metrics};
  RequestLog log{nullptr};
  Api api{registry, metrics, ApiOptions{}, &log};
};

HttpRequest post(const std::string& path, const nlohmann::json& body);
HttpRequest get(const std::string& path);
/// The response's (whole) body as JSON.
nlohmann::json body_json(HttpResponse& response);
/// The JSON of each `data:` event of an SSE body, in order; fails the test unless the body ends with
/// "data: [DONE]".
std::vector<nlohmann::json> sse_events(const std::string& body);
/// The text of each choice, put back together from chat or completion chunks.
std::vector<std::string> assemble(const std::vector<nlohmann::json>& events, int choices);

/// Runs a shell command and returns its standard output.
std::string run_command(const std::string& command);

}  // namespace nuvec::serve::test
