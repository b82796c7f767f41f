#include "apps/gpt/model.h"

#include <algorithm>

#include "apps/gpt/byte_tokenizer.h"

namespace nuvec::gpt {

namespace {

constexpr int longest_conversation = 2048;

}  // namespace

nlohmann::json llama_config(const GptConfig& config) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", byte_vocabulary},
          {"hidden_size", config.dims},
          {"intermediate_size", 4 * config.dims},
          {"num_hidden_layers", config.layers},
          {"num_attention_heads", config.heads},
          {"num_key_value_heads", config.heads},
          // RoPE attends by relative position, so the model runs past the windows it trained on (with less
          // accuracy); conversations in nuvec chat outgrow one window quickly.
          {"max_position_embeddings", std::max(config.context, longest_conversation)},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", true},
          {"torch_dtype", "float32"},
          {"eos_token_id", byte_vocabulary - 1}};
}

}  // namespace nuvec::gpt
