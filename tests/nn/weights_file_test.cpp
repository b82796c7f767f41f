// Weights and optimizer state through safetensors files: a nuvec round trip, and a PyTorch state dict written as
// safetensors (by a few lines of Python here, the format's layout) loading by name into the matching nuvec model.

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

using test::close;
using test::error_of;

TEST(WeightFiles, RoundTrip) {
  nn::Sequential a(
      {std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm>(4), std::make_shared<nn::Linear>(4, 2)});
  a(random::normal({5, 3}));  // moves the running statistics off their initial values
  auto file = test::temp_path("round_trip.safetensors");
  a.save_weights(file);
  nn::Sequential b(
      {std::make_shared<nn::Linear>(3, 4), std::make_shared<nn::BatchNorm>(4), std::make_shared<nn::Linear>(4, 2)});
  auto report = b.load_weights(file);
  EXPECT_TRUE(report.missing.empty() && report.unexpected.empty() && report.mismatched.empty());
  auto pa = a.parameters();
  auto pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(array_equal(pa[i].second, pb[i].second).item<bool>()) << pa[i].first;
  }
  nn::Sequential wrong({std::make_shared<nn::Linear>(3, 5)});
  auto message = error_of([&] { wrong.load_weights(file); });
  EXPECT_NE(message.find("0.weight: expected (5,3), given (4,3)"), std::string::npos) << message;
  EXPECT_NE(message.find("unexpected 1.bias"), std::string::npos) << message;

  optimizers::Adam opt(0.01);
  opt.update(a, {{"0.weight", ones({4, 3})}});
  auto state_file = test::temp_path("adam.safetensors");
  opt.save_state(state_file);
  optimizers::Adam restored(0.01);
  restored.load_state(state_file);
  EXPECT_EQ(restored.step(), 1);
  EXPECT_EQ(restored.state().size(), opt.state().size());
  std::filesystem::remove(file);
  std::filesystem::remove(state_file);
}

TEST(WeightFiles, LoadsAPyTorchStateDict) {
  auto file = test::temp_path("torch.safetensors");
  auto x = random::normal({4, 6});
  auto ref = test::torch_run(
      "import json, struct\n"
      "torch.manual_seed(0)\n"
      "m = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()\n"
      "header, blobs, offset = {}, [], 0\n"
      "for name, t in m.state_dict().items():\n"
      "    data = t.float().numpy().tobytes()\n"
      "    header[name] = {'dtype': 'F32', 'shape': list(t.shape), 'data_offsets': [offset, offset + len(data)]}\n"
      "    blobs.append(data); offset += len(data)\n"
      "h = json.dumps(header).encode()\n"
      "with open('" +
          file +
          "', 'wb') as f:\n"
          "    f.write(struct.pack('<Q', len(h))); f.write(h); f.write(b''.join(blobs))\n"
          "out = N(m(T(a)))",
      {x});
  nn::Sequential model(
      {std::make_shared<nn::Linear>(6, 8), std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(8, 3)});
  model.load_weights(file);
  EXPECT_TRUE(close(model(x), ref[0], 1e-5));
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace nuvec
