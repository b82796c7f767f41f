#include "nuvec/serve/info_handlers.h"

#include <limits>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/json_fields.h"
#include "nuvec/serve/request.h"

namespace nuvec::serve {

namespace {

nlohmann::json model_card(const ServedModel& model) {
  return {{"id", model.name},
          {"object", "model"},
          {"created", model.created},
          {"owned_by", "nuvec"},
          {"max_model_len", model.context}};
}

/// A route's card: what a model's says, with the models it sends requests to and their weights.
nlohmann::json route_card(const std::string& name, const std::vector<RouteTarget>& targets) {
  nlohmann::json routes_to = nlohmann::json::array();
  for (const RouteTarget& target : targets) {
    routes_to.push_back({{"model", target.model}, {"weight", target.weight}});
  }
  return {{"id", name}, {"object", "model"}, {"created", 0}, {"owned_by", "nuvec"}, {"routes_to", routes_to}};
}

}  // namespace

std::shared_ptr<ServedModel> requested_model(const ModelRegistry& registry, const nlohmann::json& body) {
  const std::string name = field::optional_string(body, "model").value_or("");
  if (auto model = registry.find(name)) {
    return model;
  }
  if (registry.is_loading(name) || name.empty()) {
    throw unavailable("The model is not loaded yet; retry shortly.");
  }
  throw model_not_found(name);
}

HttpResponse list_models(const ModelRegistry& registry) {
  nlohmann::json data = nlohmann::json::array();
  for (const auto& model : registry.models()) {
    data.push_back(model_card(*model));
  }
  for (const auto& [name, targets] : registry.routes()) {
    data.push_back(route_card(name, targets));
  }
  return json_response(200, {{"object", "list"}, {"data", data}});
}

HttpResponse describe_model(const ModelRegistry& registry, const std::string& name) {
  const auto routes = registry.routes();
  if (auto route = routes.find(name); route != routes.end()) {
    return json_response(200, route_card(name, route->second));
  }
  auto model = name.empty() ? nullptr : registry.find(name);
  if (!model) {
    throw model_not_found(name);
  }
  return json_response(200, model_card(*model));
}

HttpResponse health(const ModelRegistry& registry, bool shutting_down) {
  if (shutting_down) {
    return json_response(503, {{"status", "shutting_down"}});
  }
  if (registry.loading() || registry.models().empty()) {
    return json_response(503, {{"status", "loading"}});
  }
  return json_response(200, {{"status", "ok"}});
}

HttpResponse metrics_text(const Metrics& metrics) {
  HttpResponse response;
  response.content_type = "text/plain; version=0.0.4";
  response.body = metrics.render();
  return response;
}

HttpResponse tokenize(const ModelRegistry& registry, const nlohmann::json& body) {
  const auto model = requested_model(registry, body);
  const lm::Tokenizer& tokenizer = model->loaded.tokenizer;
  std::vector<int32_t> ids;
  if (const nlohmann::json* messages = field::find(body, "messages")) {
    const nlohmann::ordered_json request = {{"messages", nlohmann::ordered_json(*messages)}};
    const CompletionRequest chat = parse_chat_request(request);
    lm::ChatTemplateOptions options;
    options.add_generation_prompt = field::optional_boolean(body, "add_generation_prompt").value_or(true);
    try {
      ids = tokenizer.encode(tokenizer.apply_chat_template(chat.messages, options), false);
    } catch (const nuvec::error& e) {
      throw invalid_request(std::string("The chat template could not render the messages: ").append(e.what()),
                            "messages");
    }
  } else {
    const nlohmann::json* prompt = field::find(body, "prompt");
    if (prompt == nullptr) {
      throw invalid_request("'prompt' (or 'messages') is required.", "prompt");
    }
    const bool special = field::optional_boolean(body, "add_special_tokens").value_or(true);
    ids = tokenizer.encode(field::string(*prompt, "prompt"), special);
  }
  return json_response(200, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", model->context}});
}

HttpResponse detokenize(const ModelRegistry& registry, const nlohmann::json& body) {
  const auto model = requested_model(registry, body);
  const nlohmann::json* tokens = field::find(body, "tokens");
  if (tokens == nullptr || !tokens->is_array()) {
    throw invalid_request("'tokens' must be a list of token ids.", "tokens");
  }
  const int vocab = static_cast<int>(model->loaded.tokenizer.vocab_size());
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens->size(); ++i) {
    ids.push_back(static_cast<int32_t>(
        field::integer((*tokens)[i], "tokens[" + std::to_string(i) + "]", 0, static_cast<int64_t>(vocab) - 1)));
  }
  return json_response(200, {{"prompt", model->loaded.tokenizer.decode(ids)}});
}

}  // namespace nuvec::serve
