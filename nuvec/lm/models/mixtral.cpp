#include "nuvec/lm/models/mixtral.h"

#include "nuvec/lm/models/config.h"
#include "nuvec/lm/models/moe.h"

namespace nuvec::lm {

std::shared_ptr<LanguageModel> make_mixtral(const nlohmann::json& config) {
  TransformerConfig c = TransformerConfig::from_json(config);
  if (!config.contains("layer_types")) {
    // transformers' MixtralConfig has no window unless sliding_window says so.
    c.set_all_windows(config_field::optional_integer(config, "sliding_window"));
  }
  // Renormalizing the top k of the softmax over all experts is the softmax over the chosen logits.
  const MoeOptions moe{c.hidden_size,
                       c.intermediate_size,
                       config_field::integer(config, "num_local_experts", 8),
                       config_field::integer(config, "num_experts_per_tok", 2),
                       true,
                       activation(c.hidden_act)};
  const std::shared_ptr<const RoPE> rope = make_rope(c);
  const NormFactory norm = rms_norm(c.rms_norm_eps);
  std::vector<std::shared_ptr<DecoderLayer>> layers;
  layers.reserve(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    layers.push_back(std::make_shared<TransformerBlock>(std::make_shared<Attention>(attention_options(c, i, rope)),
                                                        std::make_shared<SparseMoeBlock>(moe), c.hidden_size, norm,
                                                        "block_sparse_moe"));
  }
  return std::make_shared<MoeModel>(c, std::move(layers),
                                    ExpertNames{{"gate_proj", "w1"}, {"up_proj", "w3"}, {"down_proj", "w2"}});
}

}  // namespace nuvec::lm
