#include "nuvec/serve/embeddings.h"

#include <cstring>
#include <string>
#include <vector>

#include "nuvec/core/ops.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/info_handlers.h"
#include "nuvec/serve/json_fields.h"

namespace nuvec::serve {

namespace {

/// Standard base64 with padding, as OpenAI's "base64" encoding_format gives the float32 bytes.
std::string base64(const std::vector<float>& values) {
  static constexpr char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());  // x86: little-endian, as OpenAI's
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (size_t k = 0; k < 4; ++k) {
      out += k <= n ? digits[(chunk >> (18 - 6 * k)) & 63U] : '=';
    }
  }
  return out;
}

/// The inputs as token ids: a text, a list of texts, a list of ids or a list of lists of ids.
std::vector<std::vector<int32_t>> input_ids(const ServedModel& model, const nlohmann::json& input) {
  const lm::Tokenizer& tokenizer = model.loaded.tokenizer;
  const int64_t last_id = static_cast<int64_t>(tokenizer.vocab_size()) - 1;
  auto ids_of = [&](const nlohmann::json& list, const std::string& param) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < list.size(); ++i) {
      ids.push_back(static_cast<int32_t>(field::integer(list[i], param + "[" + std::to_string(i) + "]", 0, last_id)));
    }
    return ids;
  };
  std::vector<std::vector<int32_t>> inputs;
  if (input.is_string()) {
    inputs.push_back(tokenizer.encode(input.get<std::string>(), true));
  } else if (input.is_array() && !input.empty() && input[0].is_number()) {
    inputs.push_back(ids_of(input, "input"));
  } else if (input.is_array() && !input.empty()) {
    for (size_t i = 0; i < input.size(); ++i) {
      const std::string param = "input[" + std::to_string(i) + "]";
      if (input[i].is_string()) {
        inputs.push_back(tokenizer.encode(input[i].get<std::string>(), true));
      } else if (input[i].is_array()) {
        inputs.push_back(ids_of(input[i], param));
      } else {
        throw invalid_request("'" + param + "' must be a string or a list of token ids.", "input");
      }
    }
  } else {
    throw invalid_request("'input' must be a non-empty string, list of strings, list of token ids or list of lists "
                          "of token ids.",
                          "input");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      throw invalid_request("Input " + std::to_string(i) + " has no tokens.", "input");
    }
    if (model.context > 0 && static_cast<int>(inputs[i].size()) > model.context) {
      throw invalid_request("Input " + std::to_string(i) + " has " + std::to_string(inputs[i].size()) +
                                " tokens, more than the model's context of " + std::to_string(model.context) + ".",
                            "input");
    }
  }
  return inputs;
}

/// The unit-length mean of the last hidden states over the tokens.
std::vector<float> embed(lm::LanguageModel& model, const std::vector<int32_t>& ids) {
  const array tokens(ids.begin(), {1, static_cast<int>(ids.size())}, int32);
  const array pooled = mean(astype(model.hidden_states(tokens), float32), std::vector<int>{0, 1});
  const array norm = sqrt(sum(square(pooled)));
  array unit = pooled / maximum(norm, array(1e-12F));
  unit.eval();
  const float* data = unit.data<float>();
  return {data, data + unit.size()};
}

}  // namespace

HttpResponse embeddings(const ModelRegistry& registry, const nlohmann::json& body) {
  if (!body.is_object()) {
    throw invalid_request("The request body must be a JSON object.");
  }
  const auto model = requested_model(registry, body);
  if (model->sharded) {
    // Its forward passes need every rank, and the other ranks follow the scheduler's batches alone.
    throw invalid_request(
        std::string("Model '").append(model->name).append("' is sharded across ranks and serves no embeddings."),
        "model");
  }
  const nlohmann::json* input = field::find(body, "input");
  if (input == nullptr) {
    throw invalid_request("'input' is required.", "input");
  }
  const std::string format = field::optional_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64") {
    throw invalid_request("'encoding_format' must be \"float\" or \"base64\"; got \"" + format + "\".",
                          "encoding_format");
  }
  const auto dimensions = field::optional_integer(body, "dimensions", 1, 1 << 20);
  const auto inputs = input_ids(*model, *input);
  nlohmann::json data = nlohmann::json::array();
  size_t tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<float> values = embed(*model->loaded.model, inputs[i]);
    if (dimensions && *dimensions != static_cast<int64_t>(values.size())) {
      throw invalid_request("This model's embeddings have " + std::to_string(values.size()) +
                                " dimensions; 'dimensions' cannot ask for " + std::to_string(*dimensions) + ".",
                            "dimensions");
    }
    tokens += inputs[i].size();
    nlohmann::json item = {{"object", "embedding"}, {"index", i}};
    if (format == "base64") {
      item["embedding"] = base64(values);
    } else {
      item["embedding"] = values;
    }
    data.push_back(std::move(item));
  }
  return json_response(200, {{"object", "list"},
                             {"data", std::move(data)},
                             {"model", model->name},
                             {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

}  // namespace nuvec::serve
