#pragma once

// The endpoints around generation: GET /v1/models (and /v1/models/NAME), GET /health, GET /metrics, and
// POST /tokenize and /detokenize (vLLM's shapes).

#include <nlohmann/json.hpp>
#include <memory>
#include <string>

#include "nuvec/serve/http_types.h"
#include "nuvec/serve/metrics.h"
#include "nuvec/serve/model_registry.h"

namespace nuvec::serve {

/// The model a request's "model" field names (the first one when it names none); 503 while it loads, 404 when it is
/// not served.
std::shared_ptr<ServedModel> requested_model(const ModelRegistry& registry, const nlohmann::json& body);

HttpResponse list_models(const ModelRegistry& registry);
/// 404 (OpenAI's error) for a model that is not served.
HttpResponse describe_model(const ModelRegistry& registry, const std::string& name);
/// 200 {"status": "ok"} once every model is loaded; 503 {"status": "loading"} before, and {"status":
/// "shutting_down"} once `shutting_down`.
HttpResponse health(const ModelRegistry& registry, bool shutting_down);
HttpResponse metrics_text(const Metrics& metrics);
/// {"model"?, "prompt": text, "add_special_tokens"?: true} or {"model"?, "messages": [...]} ->
/// {"tokens": [...], "count": n, "max_model_len": context}.
HttpResponse tokenize(const ModelRegistry& registry, const nlohmann::json& body);
/// {"model"?, "tokens": [...]} -> {"prompt": text}.
HttpResponse detokenize(const ModelRegistry& registry, const nlohmann::json& body);

}  // namespace nuvec::serve
