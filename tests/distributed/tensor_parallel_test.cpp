// The tensor-parallel layers in one process: on a group of one they are the layers they shard (the expected values
// are the unsharded layers' own outputs), and their arguments are checked before anything is built (the expected
// values are the messages). The multi-rank behaviour is tested by tests/distributed/ranks/tensor_parallel.cpp.

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "nuvec/lm/lm.h"
#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::nn {
namespace {

distributed::Group one_process() {
  for (const char* name : {"NUVEC_HOSTFILE", "MLX_HOSTFILE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    ::unsetenv(name);
  }
  return distributed::init();
}

TEST(TensorParallelOneProcess, ShardedLayersOfAGroupOfOneAreTheLayerItself) {
  const distributed::Group g = one_process();
  random::seed(1);
  Linear linear(12, 10);
  const array x = random::normal({3, 12});
  const array y = linear(x);
  for (Sharding sharding : {Sharding::all_to_sharded, Sharding::sharded_to_all}) {
    auto sharded = shard_linear(linear, sharding, 1, g);
    EXPECT_EQ(sharded->input_dims(), 12);
    EXPECT_EQ(sharded->output_dims(), 10);
    EXPECT_TRUE(allclose((*sharded)(x), y, 1e-6, 1e-6).item<bool>()) << sharded->type_name();
  }
  EXPECT_EQ(shard_linear(linear, Sharding::all_to_sharded)->type_name(), "AllToShardedLinear");
  EXPECT_EQ(shard_linear(linear, Sharding::sharded_to_all)->type_name(), "ShardedToAllLinear");
  QuantizedLinear quantized(64, 8, true, 32, 4);
  EXPECT_EQ(shard_linear(quantized, Sharding::all_to_sharded)->type_name(), "QuantizedAllToShardedLinear");
  EXPECT_EQ(shard_linear(quantized, Sharding::sharded_to_all)->type_name(), "QuantizedShardedToAllLinear");
}

TEST(TensorParallelOneProcess, BadSizesAndSegmentsAreNamed) {
  const distributed::Group g = one_process();
  Linear linear(12, 10);
  EXPECT_EQ(test::error_of([&] { AllToShardedLinear(12, 10, true, g, std::vector<int>{4}); }),
            "[AllToShardedLinear] expected 1 sizes that sum to the output size 10; given (4).");
  EXPECT_EQ(test::error_of([&] { (void)shard_linear(linear, Sharding::all_to_sharded, 2, g, std::vector<int>{10}); }),
            "[AllToShardedLinear] explicit sizes need a single segment.");
  EXPECT_EQ(test::error_of([&] { (void)shard_linear(linear, Sharding::all_to_sharded, 3, g); }),
            "[shard] weight: cannot split an axis of 10 into 3 equal segments.");
  EXPECT_EQ(test::error_of([&] {
              (void)shard_linear(linear, Sharding::all_to_sharded, std::vector<double>{0.6, 0.5}, g);
            }),
            "[shard] weight: segment fractions must increase inside (0, 1); given 0.500000 after a boundary at 6 of "
            "10.");
  EXPECT_EQ(test::error_of([&] { QuantizedShardedToAllLinear(64, 8, true, 32, 4, "affine", g, std::vector<int>{64}); }),
            "(no error)");
  // A quantized sharded-to-all layer's shares must be whole groups of 32.
  EXPECT_EQ(test::error_of([&] { QuantizedShardedToAllLinear(48, 8, true, 32, 4, "affine", g); }),
            "[QuantizedShardedToAllLinear] expected 1 sizes that sum to the input size 48; given (32).");
}

TEST(TensorParallelOneProcess, ExpertsTooSmallToSplitAreNamed) {
  const nlohmann::json config = {{"model_type", "mixtral"},      {"vocab_size", 32},         {"hidden_size", 32},
                                 {"num_hidden_layers", 1},       {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                 {"intermediate_size", 64},      {"num_local_experts", 2},   {"num_experts_per_tok", 1},
                                 {"max_position_embeddings", 64}};
  auto model = lm::create_model(config);
  // A group of one keeps every expert whole.
  model->shard(one_process());
  auto& experts = dynamic_cast<lm::SparseMoeBlock&>(
      *dynamic_cast<lm::TransformerBlock&>((*dynamic_cast<lm::TransformerModel&>(*model).model->layers)[0])
           .feed_forward);
  EXPECT_EQ(experts.switch_mlp->down_proj->input_dims(), 64);
  // Quantized in groups of 32, 64 features are two groups: three ranks cannot each take one.
  auto quantized = lm::QuantizedSwitchLinear(*experts.switch_mlp->down_proj, 32, 4);
  EXPECT_EQ(test::error_of([&] { quantized.keep_inputs(16, 48); }),
            "[QuantizedSwitchLinear] can keep whole groups of 32 input features only; asked for [16, 48).");
}

}  // namespace
}  // namespace nuvec::nn
