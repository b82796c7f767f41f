#pragma once

// Serving a parsed completion request: its prompts are built (the chat template for messages; the tokenizer for
// text) and checked against the model (ids, context, logit_bias), each choice becomes a sequence for the model's
// scheduler, and the answer is the whole response or, for `stream`, a CompletionStream.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nuvec/lm/chat_template.h"
#include "nuvec/serve/http_types.h"
#include "nuvec/serve/model_registry.h"
#include "nuvec/serve/request.h"
#include "nuvec/serve/request_channel.h"
#include "nuvec/serve/request_log.h"
#include "nuvec/serve/response_json.h"

namespace nuvec::serve {

/// Answers `request`; throws ApiError for what the client got wrong (and for a full queue). `record` is filled in;
/// for a stream, `on_end` gets it once the stream ends (for a whole response the caller logs it).
HttpResponse serve_completion(ModelRegistry& registry, const CompletionRequest& request,
                              const std::shared_ptr<RequestRecord>& record,
                              const std::function<void(const RequestRecord&)>& on_end,
                              const std::function<bool()>& client_gone = {});

/// The chat template's variables for a chat request: its extra variables, the generation prompt, and the tools it
/// shows (none for tool_choice "none", only the named one for a named choice).
lm::ChatTemplateOptions chat_template_options(const CompletionRequest& request);

/// Waits for every sequence of `channel` and builds the whole response, filling in `record`'s completion fields.
/// `prefixes` (echo) go before each choice's text when not empty. When `client_gone` says the client left, the
/// request is cancelled (its sequences leave the batch) and a 499 ApiError thrown.
HttpResponse collect_response(RequestChannel& channel, const ResponseContext& context, int choices,
                              const std::vector<std::string>& prefixes, int prompt_tokens, RequestRecord& record,
                              const std::function<bool()>& client_gone = {});

}  // namespace nuvec::serve
