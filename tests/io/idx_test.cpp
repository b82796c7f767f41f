#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "nuvec/nuvec.h"
#include "tests/io/io_test_util.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

// A 2x3 int16 IDX file written byte by byte from the format's description (big-endian header and elements).
std::vector<unsigned char> int16_file() {
  std::vector<unsigned char> bytes = {0, 0, 0x0B, 2};
  put<uint32_t>(bytes, 2, true);
  put<uint32_t>(bytes, 3, true);
  for (int16_t v : {1, -2, 300, -32768, 32767, 0}) {
    put<int16_t>(bytes, v, true);
  }
  return bytes;
}

TEST(Idx, LoadsBytesWrittenFromTheSpecification) {
  TempDir dir;
  write_file(dir.path("a.idx"), int16_file());
  array a = io::load_idx(dir.path("a.idx"));
  EXPECT_EQ(a.dtype(), int16);
  EXPECT_EQ(a.shape(), Shape({2, 3}));
  EXPECT_TRUE(array_equal(a, array({1, -2, 300, -32768, 32767, 0}, {2, 3}, int16)).item<bool>());
}

TEST(Idx, GzipIsDetectedByMagicNotName) {
  TempDir dir;
  write_file(dir.path("plain.bin"), int16_file());
  // Python's gzip module is an independent compressor.
  run_python("import gzip\nopen('" + dir.path("packed.idx") + "', 'wb').write(gzip.compress(open('" +
             dir.path("plain.bin") + "', 'rb').read()))\n");
  array a = io::load_idx(dir.path("packed.idx"));
  EXPECT_TRUE(array_equal(a, io::load_idx(dir.path("plain.bin"))).item<bool>());
}

TEST(Idx, MnistShapedImagesAndLabelsRoundTrip) {
  TempDir dir;
  std::mt19937 rng(7);
  array images = astype(random::randint(0, 256, {5, 28, 28}), uint8);
  array labels = astype(random::randint(0, 10, {5}), uint8);
  for (bool gzip : {false, true}) {
    io::save_idx(dir.path("images"), images, gzip);
    io::save_idx(dir.path("labels"), labels, gzip);
    array images2 = io::load_idx(dir.path("images"));
    array labels2 = io::load_idx(dir.path("labels"));
    EXPECT_EQ(images2.dtype(), uint8);
    EXPECT_EQ(images2.shape(), Shape({5, 28, 28}));
    EXPECT_EQ(labels2.shape(), Shape({5}));
    EXPECT_TRUE(array_equal(images, images2).item<bool>());
    EXPECT_TRUE(array_equal(labels, labels2).item<bool>());
  }
}

TEST(Idx, EveryIdxDtypeRoundTripsThroughNumpy) {
  TempDir dir;
  std::mt19937 rng(3);
  for (Dtype dtype : {uint8, int8, int16, int32, float32, float64}) {
    array a = random_array({3, 4}, dtype, rng, -100, 100);
    std::string path = dir.path("x.idx");
    io::save_idx(path, a, dtype == float32);
    array b = io::load_idx(path);
    EXPECT_EQ(b.dtype(), dtype);
    EXPECT_TRUE(array_equal(a, b).item<bool>()) << dtype_name(dtype);
    // NumPy reads the same bytes with the format's big-endian dtype.
    std::string np_dtype = std::string(">") + (dtype == uint8     ? "u1"
                                               : dtype == int8    ? "i1"
                                               : dtype == int16   ? "i2"
                                               : dtype == int32   ? "i4"
                                               : dtype == float32 ? "f4"
                                                                  : "f8");
    std::string expected = run_python("import gzip\nraw = open('" + path +
                                      "', 'rb').read()\n"
                                      "raw = gzip.decompress(raw) if raw[:2] == b'\\x1f\\x8b' else raw\n"
                                      "x = np.frombuffer(raw[12:], dtype='" +
                                      np_dtype +
                                      "')\n"
                                      "print(' '.join('%.17g' % v for v in x.astype(np.float64)))\n");
    array f = astype(b, float64);
    f.eval();
    std::string mine;
    for (size_t i = 0; i < f.size(); ++i) {
      char buf[64];
      std::snprintf(buf, sizeof buf, i == 0 ? "%.17g" : " %.17g", f.data<double>()[i]);
      mine += buf;
    }
    EXPECT_EQ(expected, mine + "\n") << dtype_name(dtype);
  }
}

TEST(Idx, EmptyAndZeroDimensionalFiles) {
  TempDir dir;
  array empty = zeros({0, 28}, uint8);
  io::save_idx(dir.path("e"), empty);
  array e = io::load_idx(dir.path("e"));
  EXPECT_EQ(e.shape(), Shape({0, 28}));
  for (Dtype dtype : {int16, float32}) {  // multi-byte empties have no buffer to swap into (found by the fuzzer)
    io::save_idx(dir.path("e"), zeros({3, 0}, dtype), true);
    EXPECT_EQ(io::load_idx(dir.path("e")).shape(), Shape({3, 0}));
  }
  io::save_idx(dir.path("s"), array(2.5f));
  array s = io::load_idx(dir.path("s"));
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.item<float>(), 2.5f);
}

TEST(Idx, FashionMnistFromTheDatasetPackage) {
  std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)";
  }
  array images = io::load_idx(dir + "t10k-images-idx3-ubyte.gz");
  array labels = io::load_idx(dir + "t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(images.dtype(), uint8);
  EXPECT_EQ(images.shape(), Shape({10000, 28, 28}));
  EXPECT_EQ(labels.shape(), Shape({10000}));
  EXPECT_EQ(max(labels, false).item<int>(), 9);
}

TEST(Idx, MalformedFilesNameTheFileAndTheProblem) {
  TempDir dir;
  auto error_for = [&](const std::vector<unsigned char>& bytes) {
    std::string path = dir.path("bad.idx");
    write_file(path, bytes);
    std::string message = error_of([&] { io::load_idx(path); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("[load_idx]"), std::string::npos) << message;
    return message;
  };
  auto good = int16_file();
  EXPECT_NE(error_for({1, 0, 8, 1}).find("wrong magic"), std::string::npos);
  EXPECT_NE(error_for({0, 0, 7, 1}).find("unknown IDX type code 7"), std::string::npos);
  EXPECT_NE(error_for({0, 0}).find("truncated"), std::string::npos);
  EXPECT_NE(error_for({0, 0, 8, 2, 0, 0}).find("truncated"), std::string::npos);
  EXPECT_NE(error_for({good.begin(), good.end() - 1}).find("promises 12 bytes"), std::string::npos);
  std::vector<unsigned char> huge = {0, 0, 8, 3};
  for (int i = 0; i < 3; ++i) {
    put<uint32_t>(huge, 0x7FFFFFFF, true);
  }
  EXPECT_NE(error_for(huge).find("overflows"), std::string::npos);
  // An empty array whose other axes multiply past int64 (found by the fuzzer: strides count empty axes as 1).
  std::vector<unsigned char> empty_huge = {0, 0, 8, 4};
  put<uint32_t>(empty_huge, 0, true);
  for (int i = 0; i < 3; ++i) {
    put<uint32_t>(empty_huge, 0x7FFFFFFF, true);
  }
  EXPECT_NE(error_for(empty_huge).find("overflows"), std::string::npos);
  std::vector<unsigned char> too_big = {0, 0, 8, 1};
  put<uint32_t>(too_big, 0x80000000u, true);
  EXPECT_NE(error_for(too_big).find("more than nuvec's"), std::string::npos);
  auto packed = run_python("import gzip,sys\nsys.stdout.write(gzip.compress(bytes(range(200))).hex())\n");
  std::vector<unsigned char> gz;
  for (size_t i = 0; i + 1 < packed.size(); i += 2) {
    gz.push_back(static_cast<unsigned char>(std::stoi(packed.substr(i, 2), nullptr, 16)));
  }
  EXPECT_NE(error_for({gz.begin(), gz.begin() + 20}).find("truncated compressed data"), std::string::npos);
  auto corrupt = gz;
  corrupt[12] ^= 0xFF;
  corrupt[13] ^= 0xFF;
  EXPECT_NE(error_for(corrupt).find("compressed data"), std::string::npos);
  EXPECT_NE(error_of([&] { io::load_idx(dir.path("missing")); }).find("cannot open the file"), std::string::npos);
  EXPECT_NE(error_of([&] { io::save_idx(dir.path("c"), array({true})); }).find("IDX holds"), std::string::npos);
}

}  // namespace
}  // namespace nuvec::test
