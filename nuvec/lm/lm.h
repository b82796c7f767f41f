#pragma once

// nuvec's language-model library: tokenizers (tokenizer.json, model folders, GGUF) and chat templates; models
// of the Llama, Mistral, Qwen, Phi-3, Gemma and mixture-of-experts families loaded from Hugging Face and MLX folders
// and GGUF files; KV caches; sampling; generation (streamed, batched, speculative, constrained to JSON or a JSON
// schema).

#include "nuvec/lm/cache/cache.h"
#include "nuvec/lm/chat_template.h"
#include "nuvec/lm/constrain/json_constraint.h"
#include "nuvec/lm/constrain/json_schema.h"
#include "nuvec/lm/generate/batch_cache.h"
#include "nuvec/lm/generate/batch_generator.h"
#include "nuvec/lm/generate/block_pool.h"
#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/generate/paged_cache.h"
#include "nuvec/lm/generate/speculative.h"
#include "nuvec/lm/generate/token_constraint.h"
#include "nuvec/lm/load_model.h"
#include "nuvec/lm/models/config.h"
#include "nuvec/lm/models/gemma.h"
#include "nuvec/lm/models/gguf_model.h"
#include "nuvec/lm/models/llama.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/lm/models/mixtral.h"
#include "nuvec/lm/models/moe.h"
#include "nuvec/lm/models/qwen3_moe.h"
#include "nuvec/lm/models/registry.h"
#include "nuvec/lm/models/rope.h"
#include "nuvec/lm/models/transformer.h"
#include "nuvec/lm/sample/sampling.h"
#include "nuvec/lm/tokenizer/tokenizer.h"
