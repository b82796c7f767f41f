// Module trees: dotted names of nested modules, trainable parameters and freezing, train/eval modes, apply,
// update, strict and non-strict weight loading with the errors they list, tree flattening, child replacement, and
// layer errors that name the layer by its path.

#include <gtest/gtest.h>

#include <memory>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

using test::error_of;

/// A small two-level model: blocks.0/1 each hold an attention-like pair of projections and a norm.
class Block : public nn::Module {
 public:
  explicit Block(int dims)
      : q_proj(std::make_shared<nn::Linear>(dims, dims)),
        o_proj(std::make_shared<nn::Linear>(dims, dims, false)),
        norm(std::make_shared<nn::LayerNorm>(dims)) {
    register_module("q_proj", q_proj);
    register_module("o_proj", o_proj);
    register_module("norm", norm);
  }
  [[nodiscard]] std::string type_name() const override { return "Block"; }
  array forward(const array& x) { return o_proj->forward(norm->forward(q_proj->forward(x))); }

  std::shared_ptr<nn::Linear> q_proj;
  std::shared_ptr<nn::Linear> o_proj;
  std::shared_ptr<nn::LayerNorm> norm;
};

class Model : public nn::Module {
 public:
  Model() : blocks{std::make_shared<Block>(4), std::make_shared<Block>(4)}, scale(ones({4})) {
    register_module("blocks.0", blocks[0]);
    register_module("blocks.1", blocks[1]);
    register_parameter("scale", scale);
  }
  [[nodiscard]] std::string type_name() const override { return "Model"; }

  std::vector<std::shared_ptr<Block>> blocks;
  array scale;
};

std::vector<std::string> names(const nn::Params& params) {
  std::vector<std::string> out;
  for (const auto& [name, value] : params) {
    out.push_back(name);
  }
  return out;
}

TEST(Module, NestedNamesInRegistrationOrder) {
  Model model;
  std::vector<std::string> expected{"scale",
                                    "blocks.0.q_proj.weight",
                                    "blocks.0.q_proj.bias",
                                    "blocks.0.o_proj.weight",
                                    "blocks.0.norm.weight",
                                    "blocks.0.norm.bias",
                                    "blocks.1.q_proj.weight",
                                    "blocks.1.q_proj.bias",
                                    "blocks.1.o_proj.weight",
                                    "blocks.1.norm.weight",
                                    "blocks.1.norm.bias"};
  EXPECT_EQ(names(model.parameters()), expected);
  EXPECT_EQ(model.blocks[1]->q_proj->path(), "blocks.1.q_proj");
  EXPECT_EQ(model.modules().size(), 9U);
  EXPECT_EQ(model.children().size(), 2U);
}

TEST(Module, FreezeAndUnfreeze) {
  Model model;
  model.freeze();
  EXPECT_TRUE(model.trainable_parameters().empty());
  model.unfreeze();
  EXPECT_EQ(model.trainable_parameters().size(), model.parameters().size());
  model.blocks[0]->freeze(true, {"bias"});
  auto trainable = names(model.trainable_parameters());
  EXPECT_EQ(std::count(trainable.begin(), trainable.end(), "blocks.0.q_proj.bias"), 0);
  EXPECT_EQ(std::count(trainable.begin(), trainable.end(), "blocks.0.norm.bias"), 0);
  EXPECT_EQ(std::count(trainable.begin(), trainable.end(), "blocks.1.q_proj.bias"), 1);
  EXPECT_EQ(trainable.size(), model.parameters().size() - 2);
  model.blocks[0]->unfreeze(true, {"bias"});
  EXPECT_EQ(model.trainable_parameters().size(), model.parameters().size());
  // Not recursive: only the module's own parameters.
  model.freeze(false);
  EXPECT_EQ(model.trainable_parameters().size(), model.parameters().size() - 1);
}

TEST(Module, TrainAndEvalReachTheWholeTree) {
  Model model;
  EXPECT_TRUE(model.blocks[1]->norm->training());
  model.eval();
  for (auto& [path, m] : model.modules()) {
    EXPECT_FALSE(m->training()) << path;
  }
  model.train();
  EXPECT_TRUE(model.blocks[0]->q_proj->training());
}

TEST(Module, ApplyUpdateAndTrees) {
  Model model;
  model.apply([](const std::string&, const array& a) { return astype(a, float16); },
              [](const std::string& name, const array&) { return name.find("norm") != std::string::npos; });
  EXPECT_EQ(model.blocks[1]->norm->weight->dtype(), float16);
  EXPECT_EQ(model.blocks[1]->q_proj->weight.dtype(), float32);

  model.update({{"blocks.1.q_proj.bias", full({4}, 3.0F)}});
  EXPECT_EQ(sum(model.blocks[1]->q_proj->bias.value()).item<float>(), 12.0F);
  EXPECT_NE(error_of([&] {
              model.update({{"blocks.7.q_proj.bias", zeros({4})}});
            }).find("blocks.7.q_proj.bias"),
            std::string::npos);

  auto tree = model.parameter_tree();
  ASSERT_TRUE(tree.children.contains("blocks"));
  ASSERT_TRUE(tree.children.at("blocks").children.at("1").children.at("q_proj").children.at("bias").value);
  auto flat = nn::tree_flatten(tree);
  EXPECT_EQ(flat.size(), model.parameters().size());
  auto round_trip = nn::tree_unflatten(flat);
  EXPECT_EQ(nn::tree_flatten(round_trip).size(), flat.size());
  model.update(tree);
}

TEST(Module, LoadWeightsListsEveryProblem) {
  Model model;
  auto weights = model.parameters();
  // Drop one, add one, mis-shape one.
  weights.erase(weights.begin() + 1);
  weights.emplace_back("blocks.0.extra", zeros({2}));
  for (auto& [name, value] : weights) {
    if (name == "blocks.1.norm.weight") {
      value = zeros({5});
    }
  }
  auto message = error_of([&] { model.load_weights(weights); });
  EXPECT_NE(message.find("missing blocks.0.q_proj.weight"), std::string::npos) << message;
  EXPECT_NE(message.find("unexpected blocks.0.extra"), std::string::npos) << message;
  EXPECT_NE(message.find("blocks.1.norm.weight: expected (4), given (5)"), std::string::npos) << message;

  auto before = model.blocks[0]->q_proj->bias.value();
  for (auto& [name, value] : weights) {
    if (name == "blocks.0.q_proj.bias") {
      value = full({4}, 7.0F);
    }
  }
  auto report = model.load_weights(weights, false);
  EXPECT_EQ(report.missing, std::vector<std::string>{"blocks.0.q_proj.weight"});
  EXPECT_EQ(report.unexpected, std::vector<std::string>{"blocks.0.extra"});
  EXPECT_EQ(report.mismatched.size(), 1U);
  EXPECT_EQ(sum(model.blocks[0]->q_proj->bias.value()).item<float>(), 28.0F);
  EXPECT_EQ(model.blocks[1]->norm->weight->shape(), Shape{4});
}

TEST(Module, SaveAndLoadRoundTripThroughParams) {
  Model a;
  Model b;
  b.load_weights(a.parameters());
  auto pa = a.parameters();
  auto pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(array_equal(pa[i].second, pb[i].second).item<bool>()) << pa[i].first;
  }
}

TEST(Module, LayerErrorsNameThePath) {
  Model model;
  auto message = error_of([&] { model.blocks[1]->forward(zeros({2, 3})); });
  EXPECT_EQ(message, "[Linear blocks.1.q_proj] expected input of shape (..., 4); given shape (2,3).");
  message = error_of([&] { model.blocks[0]->forward(zeros({2, 4}, int32)); });
  EXPECT_EQ(message, "[Linear blocks.0.q_proj] expected a floating-point input; given dtype int32.");
  nn::Conv2d conv(3, 8, 3);
  message = error_of([&] { conv(zeros({1, 3, 8, 8})); });
  EXPECT_EQ(message, "[Conv2d] expected input of shape (N, H, W, 3) (channels last); given (1,3,8,8).");
  nn::Embedding embedding(10, 4);
  EXPECT_EQ(error_of([&] { embedding(zeros({3})); }), "[Embedding] expected integer indices; given dtype float32.");
}

TEST(Module, SetChildChecksTheType) {
  Model model;
  model.blocks[0]->set_child("q_proj", std::make_shared<nn::Linear>(4, 4, false));
  EXPECT_FALSE(model.blocks[0]->q_proj->bias.has_value());
  EXPECT_EQ(model.blocks[0]->q_proj->path(), "blocks.0.q_proj");
  auto message = error_of([&] { model.blocks[0]->set_child("q_proj", std::make_shared<nn::ReLU>()); });
  EXPECT_EQ(message, "[Block blocks.0] cannot put a ReLU in place of child 'q_proj'.");
  EXPECT_EQ(error_of([&] { model.set_child("nope", std::make_shared<nn::ReLU>()); }),
            "[Model] has no child called 'nope'.");
}

TEST(Module, SequentialNamesFollowPyTorch) {
  nn::Sequential seq(
      {std::make_shared<nn::Linear>(3, 5), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(5, 2)});
  EXPECT_EQ(names(seq.parameters()), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  auto x = random::normal({4, 3});
  auto h = nn::relu(std::dynamic_pointer_cast<nn::Linear>(seq[0])->forward(x));
  auto expected = std::dynamic_pointer_cast<nn::Linear>(seq[2])->forward(h);
  EXPECT_TRUE(allclose(seq(x), expected).item<bool>());
  EXPECT_EQ(error_of([&] { seq(zeros({4, 4})); }), "[Linear 0] expected input of shape (..., 3); given shape (4,4).");
}

}  // namespace
}  // namespace nuvec
