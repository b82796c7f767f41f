// MLX's io.h (and the Reader/Writer of mlx/io/load.h), called as MLX code calls it: a declaration that changes or
// goes missing fails to compile here. Each format is written and read back.

#include <gtest/gtest.h>

#include <memory>

#include "nuvec/nuvec.h"
#include "tests/io/io_test_util.h"

namespace nuvec::test {
namespace {

TEST(MlxApiIo, NpyThroughFilesAndStreams) {
  TempDir dir;
  const Stream s = default_stream(Device::cpu);
  auto a = reshape(arange(6.0F), {2, 3});
  save(dir.path("a.npy"), a);
  EXPECT_TRUE(array_equal(load(dir.path("a.npy"), s), a).item<bool>());
  EXPECT_TRUE(array_equal(load(dir.path("a.npy")), a).item<bool>());
  save(std::make_shared<io::FileWriter>(dir.path("b.npy")), a);
  std::shared_ptr<io::Reader> reader = std::make_shared<io::ParallelFileReader>(dir.path("b.npy"));
  EXPECT_TRUE(array_equal(load(reader, s), a).item<bool>());
}

TEST(MlxApiIo, Safetensors) {
  TempDir dir;
  const Stream s = default_stream(Device::cpu);
  std::unordered_map<std::string, array> arrays{{"w", ones({2, 2})}, {"b", array({1, 2, 3})}};
  save_safetensors(dir.path("a.safetensors"), arrays, {{"format", "mlx"}});
  save_safetensors(dir.path("b.safetensors"), arrays);
  save_safetensors(std::make_shared<io::FileWriter>(dir.path("c.safetensors")), arrays, {{"k", "v"}});
  save_safetensors(std::make_shared<io::FileWriter>(dir.path("d.safetensors")), arrays);
  SafetensorsLoad loaded = load_safetensors(dir.path("a.safetensors"), s);
  EXPECT_TRUE(array_equal(loaded.first.at("b"), array({1, 2, 3})).item<bool>());
  EXPECT_EQ(loaded.second.at("format"), "mlx");
  EXPECT_EQ(load_safetensors(dir.path("b.safetensors")).first.size(), 2U);
  auto [streamed, metadata] = load_safetensors(std::make_shared<io::ParallelFileReader>(dir.path("c.safetensors")), s);
  EXPECT_TRUE(array_equal(streamed.at("w"), ones({2, 2})).item<bool>());
  EXPECT_EQ(metadata.at("k"), "v");
  EXPECT_EQ(load_safetensors(std::make_shared<io::ParallelFileReader>(dir.path("d.safetensors"))).first.size(), 2U);
}

TEST(MlxApiIo, Gguf) {
  TempDir dir;
  const Stream s = default_stream(Device::cpu);
  std::unordered_map<std::string, GGUFMetaData> metadata{{"general.name", std::string("tiny")},
                                                         {"tokenizer.tokens", std::vector<std::string>{"a", "b"}},
                                                         {"answer", array(42)}};
  save_gguf(dir.path("a.gguf"), {{"w", ones({2, 4})}}, metadata);
  save_gguf(dir.path("b.gguf"), {{"w", ones({2, 4})}});
  GGUFLoad loaded = load_gguf(dir.path("a.gguf"), s);
  EXPECT_TRUE(array_equal(loaded.first.at("w"), ones({2, 4})).item<bool>());
  EXPECT_EQ(std::get<std::string>(loaded.second.at("general.name")), "tiny");
  EXPECT_EQ(std::get<std::vector<std::string>>(loaded.second.at("tokenizer.tokens")).size(), 2U);
  EXPECT_EQ(std::get<array>(loaded.second.at("answer")).item<int>(), 42);
  EXPECT_EQ(load_gguf(dir.path("b.gguf")).first.size(), 1U);
}

}  // namespace
}  // namespace nuvec::test
