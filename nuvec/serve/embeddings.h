#pragma once

// POST /v1/embeddings, OpenAI's shapes: {"model"?, "input": text | [texts] | [ids] | [[ids]], "encoding_format"?:
// "float" | "base64", "dimensions"?, "user"?} -> {"object": "list", "data": [{"object": "embedding", "index": i,
// "embedding": [...] or base64 of little-endian float32}], "model", "usage": {"prompt_tokens", "total_tokens"}}.

#include <nlohmann/json.hpp>

#include "nuvec/serve/http_types.h"
#include "nuvec/serve/model_registry.h"

namespace nuvec::serve {

/// Each input's embedding is the mean over its tokens of the model's last normalized hidden states, scaled to unit
/// length (as OpenAI's and llama-server's are, so that a dot product is the cosine similarity). Texts are tokenized
/// with the tokenizer's special tokens (a BOS where it adds one); an input longer than the context, an empty one, or
/// "dimensions" other than the model's hidden size get 400.
HttpResponse embeddings(const ModelRegistry& registry, const nlohmann::json& body);

}  // namespace nuvec::serve
