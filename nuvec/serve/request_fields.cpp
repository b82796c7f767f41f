// The fields both completion endpoints share, and the body's JSON itself.

#include <cstdint>
#include <limits>
#include <string>

#include "nuvec/serve/api_error.h"
#include "nuvec/serve/json_fields.h"
#include "nuvec/serve/request.h"

namespace nuvec::serve {

namespace {

constexpr int64_t max_int32 = std::numeric_limits<int32_t>::max();
/// OpenAI's limit on `n`.
constexpr int64_t max_choices = 128;
/// Stop strings per request; OpenAI's limit is 4, vLLM's none: a bound that keeps the per-token check cheap.
constexpr size_t max_stop_strings = 16;

std::map<int32_t, float> parse_logit_bias(const nlohmann::json& value) {
  if (!value.is_object()) {
    throw invalid_request("'logit_bias' must be an object mapping token ids to biases; got " + field::show(value) + ".",
                          "logit_bias");
  }
  std::map<int32_t, float> bias;
  for (const auto& [key, entry] : value.items()) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (key.empty() || used != key.size() || id < 0 || id > max_int32) {
      throw invalid_request(std::string("'logit_bias' keys must be token ids; got \"").append(key).append("\"."),
                            "logit_bias");
    }
    bias[static_cast<int32_t>(id)] = static_cast<float>(field::number(entry, "logit_bias." + key, -100.0, 100.0));
  }
  return bias;
}

std::vector<std::string> parse_stop(const nlohmann::json& value) {
  std::vector<std::string> stop;
  if (value.is_string()) {
    stop.push_back(value.get<std::string>());
  } else if (value.is_array()) {
    if (value.size() > max_stop_strings) {
      throw invalid_request("'stop' holds " + std::to_string(value.size()) + " strings; at most " +
                                std::to_string(max_stop_strings) + " are allowed.",
                            "stop");
    }
    for (size_t i = 0; i < value.size(); ++i) {
      stop.push_back(field::string(value[i], "stop[" + std::to_string(i) + "]"));
    }
  } else {
    throw invalid_request("'stop' must be a string or a list of strings; got " + field::show(value) + ".", "stop");
  }
  for (const std::string& s : stop) {
    if (s.empty()) {
      throw invalid_request("'stop' strings must not be empty.", "stop");
    }
  }
  return stop;
}

SamplingFields parse_sampling(const nlohmann::json& body) {
  SamplingFields s;
  auto as_float = [](std::optional<double> x) { return x ? std::optional(static_cast<float>(*x)) : std::nullopt; };
  s.temperature = as_float(field::optional_number(body, "temperature", 0.0, 2.0));
  s.top_p = as_float(field::optional_number(body, "top_p", 0.0, 1.0));
  if (s.top_p && *s.top_p == 0.0F) {
    // OpenAI accepts 0: only the most likely token is kept, which the smallest positive mass also does.
    s.top_p = std::numeric_limits<float>::min();
  }
  if (auto top_k = field::optional_integer(body, "top_k", -1, max_int32)) {
    s.top_k = *top_k < 0 ? 0 : static_cast<int>(*top_k);  // vLLM's -1 and 0 both switch it off
  }
  s.min_p = as_float(field::optional_number(body, "min_p", 0.0, 1.0));
  s.repetition_penalty = as_float(field::optional_number(body, "repetition_penalty", 0.0, 100.0));
  if (s.repetition_penalty && *s.repetition_penalty <= 0.0F) {
    throw invalid_request("'repetition_penalty' must be greater than 0 (1: off); got 0.", "repetition_penalty");
  }
  s.presence_penalty = static_cast<float>(field::optional_number(body, "presence_penalty", -2.0, 2.0).value_or(0.0));
  s.frequency_penalty = static_cast<float>(field::optional_number(body, "frequency_penalty", -2.0, 2.0).value_or(0.0));
  if (const nlohmann::json* bias = field::find(body, "logit_bias")) {
    s.logit_bias = parse_logit_bias(*bias);
  }
  if (auto seed = field::optional_integer(body, "seed", std::numeric_limits<int64_t>::min(),
                                          std::numeric_limits<int64_t>::max())) {
    s.seed = static_cast<uint64_t>(*seed);
  }
  return s;
}

}  // namespace

nlohmann::ordered_json parse_body(const std::string& body) {
  nlohmann::ordered_json parsed;
  try {
    parsed = nlohmann::ordered_json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw invalid_request(std::string("The body of the request is not valid JSON: ").append(e.what()));
  }
  if (!parsed.is_object()) {
    throw invalid_request("The body of the request must be a JSON object; got " + field::show(nlohmann::json(parsed)) +
                          ".");
  }
  return parsed;
}

namespace detail {

void parse_common_fields(const nlohmann::json& body, CompletionRequest& request) {
  request.model = field::optional_string(body, "model");
  const auto max_tokens = field::optional_integer(body, "max_tokens", 1, max_int32);
  const auto max_completion_tokens = field::optional_integer(body, "max_completion_tokens", 1, max_int32);
  if (max_completion_tokens || max_tokens) {
    request.max_tokens = static_cast<int>(max_completion_tokens ? *max_completion_tokens : *max_tokens);
  }
  request.sampling = parse_sampling(body);
  if (const nlohmann::json* stop = field::find(body, "stop")) {
    request.stop = parse_stop(*stop);
  }
  request.n = static_cast<int>(field::optional_integer(body, "n", 1, max_choices).value_or(1));
  request.stream = field::optional_boolean(body, "stream").value_or(false);
  if (const nlohmann::json* options = field::find(body, "stream_options")) {
    if (!options->is_object()) {
      throw invalid_request("'stream_options' must be an object; got " + field::show(*options) + ".", "stream_options");
    }
    if (!request.stream) {
      throw invalid_request("'stream_options' is only allowed when 'stream' is true.", "stream_options");
    }
    if (const nlohmann::json* usage = field::find(*options, "include_usage")) {
      request.include_usage = field::boolean(*usage, "stream_options.include_usage");
    }
  }
  request.response_schema = parse_response_format(body);
  (void)field::optional_string(body, "user");  // read only to check its type: nothing depends on it
}

}  // namespace detail

}  // namespace nuvec::serve
