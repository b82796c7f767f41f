#pragma once

// Serving a parsed completion request: its prompts are built (the chat template for messages; the tokenizer for
// text) and checked against the model (ids, context, logit_bias), each choice becomes a sequence for the model's
// scheduler, and the answer is the whole response or, for `stream`, a CompletionStream.

#include <functional>
#include <memory>

#include "nuvec/serve/http_types.h"
#include "nuvec/serve/model_registry.h"
#include "nuvec/serve/request.h"
#include "nuvec/serve/request_log.h"

namespace nuvec::serve {

/// Answers `request`; throws ApiError for what the client got wrong (and for a full queue). `record` is filled in;
/// for a stream, `on_end` gets it once the stream ends (for a whole response the caller logs it).
HttpResponse serve_completion(ModelRegistry& registry, const CompletionRequest& request,
                              const std::shared_ptr<RequestRecord>& record,
                              const std::function<void(const RequestRecord&)>& on_end);

}  // namespace nuvec::serve
