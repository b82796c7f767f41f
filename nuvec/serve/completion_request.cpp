// POST /v1/completions: the prompt in its four forms and the completion-only fields.

#include <limits>
#include <string>

#include "nuvec/lm/sample/sampling.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/json_fields.h"
#include "nuvec/serve/request.h"

namespace nuvec::serve {

namespace {

const char* const prompt_forms = "a string, a list of strings, a list of token ids or a list of such lists";

std::vector<int32_t> parse_ids(const nlohmann::json& list, const std::string& param) {
  if (list.empty()) {
    throw invalid_request("'" + param + "' must not be an empty list of token ids.", param);
  }
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    ids.push_back(static_cast<int32_t>(
        field::integer(list[i], param + "[" + std::to_string(i) + "]", 0, std::numeric_limits<int32_t>::max())));
  }
  return ids;
}

std::vector<PromptInput> parse_prompts(const nlohmann::json& prompt) {
  if (prompt.is_string()) {
    return {PromptInput{.text = prompt.get<std::string>(), .ids = {}}};
  }
  if (!prompt.is_array() || prompt.empty()) {
    throw invalid_request(
        std::string("'prompt' must be ").append(prompt_forms).append("; got ") + field::show(prompt) + ".", "prompt");
  }
  if (prompt[0].is_number()) {
    return {PromptInput{.text = std::nullopt, .ids = parse_ids(prompt, "prompt")}};
  }
  std::vector<PromptInput> prompts;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const std::string at = "prompt[" + std::to_string(i) + "]";
    if (prompt[i].is_string()) {
      prompts.push_back({.text = prompt[i].get<std::string>(), .ids = {}});
    } else if (prompt[i].is_array()) {
      prompts.push_back({.text = std::nullopt, .ids = parse_ids(prompt[i], at)});
    } else {
      throw invalid_request(std::string("'prompt' must be ").append(prompt_forms).append("; '") + at + "' is " +
                                field::show(prompt[i]) + ".",
                            at);
    }
  }
  return prompts;
}

}  // namespace

CompletionRequest parse_completion_request(const nlohmann::json& body) {
  CompletionRequest request;
  request.endpoint = Endpoint::completion;
  detail::parse_common_fields(body, request);
  const nlohmann::json* prompt = field::find(body, "prompt");
  if (prompt == nullptr) {
    throw invalid_request("'prompt' is required.", "prompt");
  }
  request.prompts = parse_prompts(*prompt);
  if (auto logprobs = field::optional_integer(body, "logprobs", 0, lm::max_top_logprobs)) {
    request.logprobs = true;
    request.top_logprobs = static_cast<int>(*logprobs);
  }
  request.echo = field::optional_boolean(body, "echo").value_or(false);
  if (request.echo && request.logprobs) {
    throw unsupported_field("echo", "'echo' with 'logprobs' (the prompt's log-probabilities)");
  }
  if (field::optional_string(body, "suffix")) {
    throw unsupported_field("suffix", "'suffix' (text insertion)");
  }
  if (auto best_of = field::optional_integer(body, "best_of", 1, 128); best_of && *best_of != request.n) {
    throw unsupported_field("best_of", "'best_of' other than 'n'");
  }
  return request;
}

}  // namespace nuvec::serve
