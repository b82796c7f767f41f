#include <gtest/gtest.h>

#include <random>

#include "nuvec/nuvec.h"
#include "tests/io/io_test_util.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

// A safetensors file assembled by hand from the specification: u64 header length, JSON header, data buffer.
std::vector<unsigned char> file_from(const std::string& header, const std::vector<unsigned char>& data) {
  std::vector<unsigned char> out;
  put<uint64_t>(out, header.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

TEST(Safetensors, LoadsBytesBuiltFromTheSpecification) {
  // A one-byte U8 tensor first, so the F32 tensor after it starts at an odd offset (loaded through a copy), and an
  // F64 and a BOOL tensor; the header is padded with spaces, which the specification allows.
  std::string header =
      R"({"__metadata__":{"format":"pt","note":"caf\u00e9 \"q\""},"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
      R"("w":{"dtype":"F32","shape":[2,2],"data_offsets":[1,17]},"d":{"dtype":"F64","shape":[],"data_offsets":[17,25]},)"
      R"("m":{"dtype":"BOOL","shape":[3],"data_offsets":[25,28]},"e":{"dtype":"I64","shape":[0,4],"data_offsets":[28,28]}}   )";
  std::vector<unsigned char> data = {200};
  for (float v : {1.5f, -2.0f, 3.25f, 1e30f}) {
    put<float>(data, v);
  }
  put<double>(data, -0.125);
  for (unsigned char v : {1, 0, 1}) {
    data.push_back(v);
  }
  TempDir dir;
  write_file(dir.path("m.safetensors"), file_from(header, data));
  auto [tensors, metadata] = load_safetensors(dir.path("m.safetensors"));
  EXPECT_EQ(metadata.size(), 2u);
  EXPECT_EQ(metadata.at("format"), "pt");
  EXPECT_EQ(metadata.at("note"), "caf\xc3\xa9 \"q\"");
  EXPECT_EQ(tensors.size(), 5u);
  EXPECT_EQ(tensors.at("b").item<int>(), 200);
  EXPECT_TRUE(array_equal(tensors.at("w"), array({1.5f, -2.0f, 3.25f, 1e30f}, {2, 2})).item<bool>());
  EXPECT_EQ(tensors.at("d").dtype(), float64);
  EXPECT_EQ(tensors.at("d").item<double>(), -0.125);
  EXPECT_TRUE(array_equal(tensors.at("m"), array({true, false, true})).item<bool>());
  EXPECT_EQ(tensors.at("e").shape(), Shape({0, 4}));
  EXPECT_EQ(tensors.at("e").dtype(), int64);
}

TEST(Safetensors, EveryDtypeRoundTripsWithMetadata) {
  TempDir dir;
  std::mt19937 rng(21);
  std::unordered_map<std::string, array> arrays;
  for (Dtype dtype : all_dtypes) {
    arrays.insert_or_assign(std::string(dtype_name(dtype)), random_array(random_shape(3, rng), dtype, rng));
    arrays.insert_or_assign(std::string(dtype_name(dtype)) + ".scalar", random_array({}, dtype, rng));
    arrays.insert_or_assign(std::string(dtype_name(dtype)) + ".empty", zeros({3, 0}, dtype));
  }
  arrays.insert_or_assign("view", transpose(reshape(arange(6, float32), {2, 3})));
  arrays.insert_or_assign("unicode \xe2\x9c\x93 \"quoted\"\n", array({1, 2}));
  std::unordered_map<std::string, std::string> metadata = {{"format", "mlx"}, {"multi\nline", "a\tb\\c"}};
  save_safetensors(dir.path("x"), arrays, metadata);  // ".safetensors" is appended, as MLX does
  for (int via_reader = 0; via_reader < 2; ++via_reader) {
    auto [loaded, meta] = via_reader ? load_safetensors(std::make_shared<io::FileReader>(dir.path("x.safetensors")))
                                     : load_safetensors(dir.path("x.safetensors"));
    EXPECT_EQ(meta, metadata);
    ASSERT_EQ(loaded.size(), arrays.size());
    for (const auto& [name, a] : arrays) {
      const array& b = loaded.at(name);
      EXPECT_EQ(b.dtype(), a.dtype()) << name;
      EXPECT_EQ(b.shape(), a.shape()) << name;
      EXPECT_EQ(raw_bytes(b), raw_bytes(a)) << name;
    }
  }
  // The Writer interface gives the same bytes as the file path.
  save_safetensors(std::make_shared<io::FileWriter>(dir.path("y.safetensors")), arrays, metadata);
  EXPECT_EQ(read_file(dir.path("y.safetensors")), read_file(dir.path("x.safetensors")));
}

TEST(Safetensors, SavedFilesFollowTheSpecification) {
  // Python's json module reads nuvec's header; every tensor's bytes are where the header says and aligned.
  TempDir dir;
  save_safetensors(dir.path("a.safetensors"),
                   {{"x", array({1.0f, 2.0f}, float64)}, {"y", array({7}, int8)}, {"z", array({3, 4}, int16)}},
                   {{"k", "v"}});
  std::string out =
      run_python("import json, struct\nb = open('" + dir.path("a.safetensors") +
                 "', 'rb').read()\n"
                 "n = struct.unpack('<Q', b[:8])[0]\nh = json.loads(b[8:8 + n])\nassert (8 + n) % 8 == 0\n"
                 "assert h.pop('__metadata__') == {'k': 'v'}\n"
                 "for k in sorted(h):\n"
                 "    s, e = h[k]['data_offsets']\n"
                 "    dt = {'F64': '<f8', 'I8': '<i1', 'I16': '<i2'}[h[k]['dtype']]\n"
                 "    assert s % np.dtype(dt).itemsize == 0\n"
                 "    print(k, h[k]['shape'], np.frombuffer(b[8 + n + s:8 + n + e], dt).tolist())\n");
  EXPECT_EQ(out, "x [2] [1.0, 2.0]\ny [1] [7]\nz [2] [3, 4]\n");
}

TEST(Safetensors, LoadingMapsTheFileInsteadOfCopying) {
  TempDir dir;
  array big = astype(arange(4 << 20), float32);  // 16 MiB
  save_safetensors(dir.path("big.safetensors"), {{"big", big}});
  big = array(0.0f);
  clear_cache();
  size_t before = get_active_memory();
  auto [loaded, meta] = load_safetensors(dir.path("big.safetensors"));
  EXPECT_LT(get_active_memory() - before, size_t{1} << 20);  // no 16 MiB buffer was allocated
  EXPECT_EQ(loaded.at("big").shape(), Shape({4 << 20}));
  EXPECT_EQ(sum(loaded.at("big") == astype(arange(4 << 20), float32)).item<int64_t>(), 4 << 20);
  // The mapping outlives the load result through the arrays that view it.
  array kept = loaded.at("big");
  loaded.clear();
  EXPECT_EQ(kept.data<float>()[(4 << 20) - 1], static_cast<float>((4 << 20) - 1));
}

TEST(Safetensors, OpsMayWriteIntoALoadedTensorWithoutTouchingTheFile) {
  // A loaded tensor held by nothing but the graph may be donated: the result is written into its mapped pages,
  // which are private copies, so the file keeps its bytes.
  TempDir dir;
  save_safetensors(dir.path("d.safetensors"), {{"x", astype(arange(4096), float32)}});
  auto before = read_file(dir.path("d.safetensors"));
  array y = [&] {
    auto loaded = load_safetensors(dir.path("d.safetensors"));
    array x = std::move(loaded.first.at("x"));
    loaded.first.clear();
    return exp(std::move(x) * 0.0f);
  }();
  EXPECT_EQ(sum(y).item<float>(), 4096.0f);
  EXPECT_EQ(read_file(dir.path("d.safetensors")), before);
}

TEST(Safetensors, MalformedFilesNameTheFileAndTheProblem) {
  TempDir dir;
  std::string path = dir.path("bad.safetensors");
  auto error_for = [&](const std::vector<unsigned char>& bytes) {
    write_file(path, bytes);
    std::string message = error_of([&] { load_safetensors(path); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("[load_safetensors]"), std::string::npos) << message;
    // The Reader path reports the same problem.
    std::string streamed = error_of([&] { load_safetensors(std::make_shared<io::FileReader>(path)); });
    EXPECT_EQ(streamed, message);
    return message;
  };
  auto tensor = [](const std::string& body) { return "{\"t\":" + body + "}"; };
  std::vector<unsigned char> four(4, 0);
  EXPECT_NE(error_for({1, 2, 3}).find("truncated file"), std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"), {}))
                .find("lie outside the data buffer"),
            std::string::npos);
  std::vector<unsigned char> huge;
  put<uint64_t>(huge, uint64_t{1} << 40);
  EXPECT_NE(error_for(huge).find("exceeds the limit"), std::string::npos);
  std::vector<unsigned char> past;
  put<uint64_t>(past, 1000);
  past.push_back('{');
  EXPECT_NE(error_for(past).find("runs past the end"), std::string::npos);
  EXPECT_NE(error_for(file_from("{\"t\":", {})).find("invalid JSON header"), std::string::npos);
  EXPECT_NE(error_for(file_from("[]", {})).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_for(file_from("{\"\xff\":{}}", {})).find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(error_for(file_from("{\"\xc0\x80\":{}}", {})).find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]})"), four))
                .find("unknown or unsupported dtype \"F8_E4M3\""),
            std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"), four)).find("needs 8"),
            std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"F32","shape":[2147483647,2147483647,2147483647],)"
                                       R"("data_offsets":[0,4]})"),
                                four))
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"F32","shape":[0,2147483647,2147483647,2147483647],)"
                                       R"("data_offsets":[0,0]})"),
                                {}))
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(
      error_for(file_from(tensor(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), four)).find("shape entries"),
      std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551616]})"), four))
                .find("two non-negative integers"),
            std::string::npos);
  EXPECT_NE(error_for(file_from(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                                four))
                .find("overlap or hole"),
            std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"U8","shape":[2],"data_offsets":[0,2]})"), four))
                .find("cover 2 bytes of a 4-byte"),
            std::string::npos);
  EXPECT_NE(
      error_for(file_from(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"a":{}})", {})).find("duplicate key"),
      std::string::npos);
  EXPECT_NE(error_for(file_from(tensor(R"({"dtype":"U8","shape":[0]})"), {})).find("needs dtype, shape"),
            std::string::npos);
  EXPECT_NE(error_for(file_from(R"({"__metadata__":{"k":1}})", {})).find("is not a string"), std::string::npos);
  std::string deep(100, '[');
  EXPECT_NE(error_for(file_from("{\"t\":" + deep, {})).find("nested deeper"), std::string::npos);
  EXPECT_NE(error_of([&] { load_safetensors(dir.path("missing.safetensors")); }).find("cannot open the file"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              save_safetensors(dir.path("s"), {{"__metadata__", array(1)}});
            }).find("reserved"),
            std::string::npos);
}

}  // namespace
}  // namespace nuvec::test
