#include "nuvec/serve/response_json.h"

#include <random>
#include <utility>

#include "nuvec/lm/utf8.h"

namespace nuvec::serve {

namespace {

/// A token's text as the logprobs show it: its bytes, with a part of a character as U+FFFD (the exact bytes go in
/// the "bytes" list).
std::string token_text(const lm::Tokenizer& tokenizer, int32_t id) {
  return lm::detail::utf8_lossy(tokenizer.token_bytes(id));
}

nlohmann::json byte_list(const lm::Tokenizer& tokenizer, int32_t id) {
  nlohmann::json bytes = nlohmann::json::array();
  for (unsigned char c : tokenizer.token_bytes(id)) {
    bytes.push_back(static_cast<int>(c));
  }
  return bytes;
}

/// Chat's form: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}], "refusal": null}.
nlohmann::json chat_logprobs(const lm::Tokenizer& tokenizer, const std::vector<lm::GenerationResponse>& tokens) {
  nlohmann::json content = nlohmann::json::array();
  for (const lm::GenerationResponse& t : tokens) {
    nlohmann::json top = nlohmann::json::array();
    for (const lm::TokenLogprob& candidate : t.top_logprobs) {
      top.push_back({{"token", token_text(tokenizer, candidate.token)},
                     {"logprob", candidate.logprob},
                     {"bytes", byte_list(tokenizer, candidate.token)}});
    }
    content.push_back({{"token", token_text(tokenizer, t.token)},
                       {"logprob", t.logprob},
                       {"bytes", byte_list(tokenizer, t.token)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

/// The completions' form: parallel lists of tokens, their log-probabilities, the top ones and text offsets.
nlohmann::json completion_logprobs(const lm::Tokenizer& tokenizer, const std::vector<lm::GenerationResponse>& tokens,
                                   size_t first_offset) {
  nlohmann::json texts = nlohmann::json::array();
  nlohmann::json logprobs = nlohmann::json::array();
  nlohmann::json tops = nlohmann::json::array();
  nlohmann::json offsets = nlohmann::json::array();
  size_t offset = first_offset;
  for (const lm::GenerationResponse& t : tokens) {
    const std::string text = token_text(tokenizer, t.token);
    texts.push_back(text);
    logprobs.push_back(t.logprob);
    nlohmann::json top = nlohmann::json::object();
    for (const lm::TokenLogprob& candidate : t.top_logprobs) {
      top[token_text(tokenizer, candidate.token)] = candidate.logprob;
    }
    tops.push_back(top);
    // Where the token's text starts in the choice's text: what earlier tokens made final (a token's own piece may
    // differ from its text there, such as a word's leading space).
    offsets.push_back(offset);
    offset += t.text.size();
  }
  return {{"tokens", texts}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

nlohmann::json logprobs_json(const ResponseContext& context, const std::vector<lm::GenerationResponse>& tokens,
                             size_t first_offset) {
  if (!context.logprobs) {
    return nullptr;
  }
  switch (context.endpoint) {
    case Endpoint::chat:
      return chat_logprobs(*context.tokenizer, tokens);
    case Endpoint::completion:
      return completion_logprobs(*context.tokenizer, tokens, first_offset);
  }
  return nullptr;
}

const char* object_name(Endpoint endpoint, bool chunk) {
  switch (endpoint) {
    case Endpoint::chat:
      return chunk ? "chat.completion.chunk" : "chat.completion";
    case Endpoint::completion:
      return "text_completion";
  }
  return "";
}

nlohmann::json envelope(const ResponseContext& context, bool chunk, nlohmann::json choices) {
  nlohmann::json out = {{"id", context.id},
                        {"object", object_name(context.endpoint, chunk)},
                        {"created", context.created},
                        {"model", context.model},
                        {"choices", std::move(choices)}};
  if (chunk && context.include_usage) {
    out["usage"] = nullptr;  // OpenAI's streams carry a null usage until the closing chunk
  }
  return out;
}

/// One streamed choice: chat's delta, or the completions' text.
nlohmann::json chunk_choice(const ResponseContext& context, int index, nlohmann::json delta, const std::string& text,
                            nlohmann::json logprobs, nlohmann::json finish_reason) {
  switch (context.endpoint) {
    case Endpoint::chat:
      return {{"index", index},
              {"delta", std::move(delta)},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", std::move(finish_reason)}};
    case Endpoint::completion:
      return {{"index", index},
              {"text", text},
              {"logprobs", std::move(logprobs)},
              {"finish_reason", std::move(finish_reason)}};
  }
  return nullptr;
}

nlohmann::json tool_call_json(const ToolCall& call) {
  return {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

/// A chat choice's message and finish reason: the calls parsed out of its text when tools were offered, with content
/// null when there was nothing else, as OpenAI answers.
std::pair<nlohmann::json, std::string> chat_message(const ResponseContext& context, const ChoiceOutput& choice) {
  nlohmann::json message = {{"role", "assistant"}, {"content", choice.text}, {"refusal", nullptr}};
  if (!context.tool_calls) {
    return {message, choice.finish_reason};
  }
  ParsedOutput parsed = parse_tool_calls(*context.tool_calls, choice.text);
  if (parsed.calls.empty()) {
    return {message, choice.finish_reason};
  }
  if (!context.parallel_tool_calls) {
    parsed.calls.resize(1);
  }
  message["content"] = parsed.content.empty() ? nlohmann::json(nullptr) : nlohmann::json(parsed.content);
  nlohmann::json calls = nlohmann::json::array();
  for (const ToolCall& call : parsed.calls) {
    calls.push_back(tool_call_json(call));
  }
  message["tool_calls"] = std::move(calls);
  return {message, "tool_calls"};
}

}  // namespace

void ChoiceOutput::add(const lm::GenerationResponse& response) {
  text.append(response.text);
  tokens.push_back(response);
  if (response.finish_reason) {
    finish_reason = *response.finish_reason;
  }
  prompt_tokens = response.stats.prompt_tokens;
}

std::string make_response_id(Endpoint endpoint) {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static const char* const digits = "0123456789abcdef";
  std::string id = endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) {
    id.push_back(digits[engine() % 16]);
  }
  return id;
}

nlohmann::json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

nlohmann::json completion_body(const ResponseContext& context, const std::vector<ChoiceOutput>& choices,
                               const Usage& usage, const std::vector<std::string>& prefixes) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& choice = choices[i];
    const std::string& prefix = i < prefixes.size() ? prefixes[i] : std::string();
    nlohmann::json logprobs = logprobs_json(context, choice.tokens, prefix.size());
    switch (context.endpoint) {
      case Endpoint::chat: {
        auto [message, finish_reason] = chat_message(context, choice);
        list.push_back({{"index", i},
                        {"message", std::move(message)},
                        {"logprobs", std::move(logprobs)},
                        {"finish_reason", std::move(finish_reason)}});
        break;
      }
      case Endpoint::completion:
        list.push_back({{"index", i},
                        {"text", prefix + choice.text},
                        {"logprobs", std::move(logprobs)},
                        {"finish_reason", choice.finish_reason}});
        break;
    }
  }
  nlohmann::json out = envelope(context, false, std::move(list));
  out["usage"] = usage_json(usage);
  return out;
}

nlohmann::json role_chunk(const ResponseContext& context, int index) {
  return envelope(context, true,
                  nlohmann::json::array(
                      {chunk_choice(context, index, {{"role", "assistant"}, {"content", ""}}, "", nullptr, nullptr)}));
}

nlohmann::json text_chunk(const ResponseContext& context, int index, const std::string& text,
                          const std::vector<lm::GenerationResponse>& tokens) {
  return envelope(context, true,
                  nlohmann::json::array({chunk_choice(context, index, {{"content", text}}, text,
                                                      logprobs_json(context, tokens, 0), nullptr)}));
}

nlohmann::json tool_call_chunk(const ResponseContext& context, int index, int call_index, const ToolCall& call) {
  nlohmann::json entry = tool_call_json(call);
  entry["index"] = call_index;
  return envelope(
      context, true,
      nlohmann::json::array({chunk_choice(context, index, {{"tool_calls", nlohmann::json::array({std::move(entry)})}},
                                          "", nullptr, nullptr)}));
}

nlohmann::json finish_chunk(const ResponseContext& context, int index, const std::string& finish_reason) {
  return envelope(
      context, true,
      nlohmann::json::array({chunk_choice(context, index, nlohmann::json::object(), "", nullptr, finish_reason)}));
}

nlohmann::json usage_chunk(const ResponseContext& context, const Usage& usage) {
  nlohmann::json out = envelope(context, true, nlohmann::json::array());
  out["usage"] = usage_json(usage);
  return out;
}

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::json& value) { return std::string("data: ").append(dump(value)).append("\n\n"); }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace nuvec::serve
