// Tests of the NumPy oracle itself: the protocol, every dtype, errors and large payloads. Expected values are
// written out by hand here (not asked of NumPy), so a broken oracle cannot vouch for itself.

#include "tests/support/numpy_oracle.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace nuvec::test {
namespace {

std::vector<std::byte> to_bytes(const void* data, std::size_t size) {
  std::vector<std::byte> bytes(size);
  std::memcpy(bytes.data(), data, size);
  return bytes;
}

uint16_t u16_at(const HostArray& array, std::size_t i) {
  uint16_t v = 0;
  std::memcpy(&v, array.bytes.data() + 2 * i, 2);
  return v;
}

TEST(NumpyOracle, EveryDtypeRoundTripsBitExact) {
  struct Case {
    std::string dtype;
    std::vector<double> values;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {"bool", {1, 0, 1, 1, 0, 0}},
      {"uint8", {0, 1, 127, 128, 200, 255}},
      {"uint16", {0, 1, 300, 32768, 65534, 65535}},
      {"uint32", {0, 1, 70000, 2147483648.0, 4000000000.0, 4294967295.0}},
      {"uint64", {0, 1, 4294967296.0, 9007199254740992.0, 1e19, 18446744073709549568.0}},
      {"int8", {-128, -1, 0, 1, 100, 127}},
      {"int16", {-32768, -300, 0, 1, 300, 32767}},
      {"int32", {-2147483648.0, -70000, 0, 1, 70000, 2147483647.0}},
      {"int64", {-9223372036854775808.0, -1e15, -1, 0, 1e15, 9007199254740993.0}},
      {"float16", {-65504, -0.0, 6e-8, 0.333, inf, nan}},
      {"float32", {-3.4e38, -0.0, 1e-45, 1.0 / 3.0, inf, nan}},
      {"float64", {-1.7e308, -0.0, 5e-324, 1.0 / 3.0, -inf, nan}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dtype);
    const HostArray in = host_array(c.values, {2, 3}, c.dtype);
    const std::vector<HostArray> out = numpy("a", {in});
    ASSERT_EQ(out.size(), 1U);
    EXPECT_EQ(out[0].dtype, c.dtype);
    EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(out[0].bytes, in.bytes);
  }
  // int64/uint64 extremes are exact when given as integers.
  const HostArray i64 = host_array<int64_t>({std::numeric_limits<int64_t>::min(), -1, 0,
                                             std::numeric_limits<int64_t>::max()},
                                            {4}, "int64");
  EXPECT_EQ(numpy("a.copy()", {i64})[0].bytes, i64.bytes);
  const HostArray u64 = host_array<uint64_t>({0, std::numeric_limits<uint64_t>::max()}, {2}, "uint64");
  EXPECT_EQ(numpy("a", {u64})[0].bytes, u64.bytes);
  const HostArray c64 = host_array<std::complex<float>>({{1.5F, -2.0F}, {0.0F, 3.25F}}, {2}, "complex64");
  const std::vector<HostArray> c_out = numpy("a", {c64});
  EXPECT_EQ(c_out[0].dtype, "complex64");
  EXPECT_EQ(c_out[0].bytes, c64.bytes);
  EXPECT_EQ(as_complex(c_out[0]), (std::vector<std::complex<double>>{{1.5, -2.0}, {0.0, 3.25}}));
  EXPECT_EQ(as_doubles(c_out[0]), (std::vector<double>{1.5, 0.0}));
}

TEST(NumpyOracle, ZeroDimensionalAndEmptyArrays) {
  const std::vector<HostArray> scalar = numpy("a * 2", {host_array<float>({2.5F}, {}, "float32")});
  EXPECT_TRUE(scalar[0].shape.empty());
  EXPECT_EQ(as_doubles(scalar[0]), std::vector<double>{5.0});
  const std::vector<HostArray> empty = numpy("a + 1", {host_array<int32_t>({}, {0, 3}, "int32")});
  EXPECT_EQ(empty[0].dtype, "int32");
  EXPECT_EQ(empty[0].shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(empty[0].bytes.empty());
}

TEST(NumpyOracle, ExpressionBroadcasts) {
  const HostArray a = host_array<float>({1, 2, 3, 4, 5, 6}, {2, 3}, "float32");
  const HostArray b = host_array<float>({10, 20, 30}, {3}, "float32");
  const std::vector<HostArray> out = numpy("a + b", {a, b});
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].dtype, "float32");
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(as_doubles(out[0]), (std::vector<double>{11, 22, 33, 14, 25, 36}));
  // NumPy's own promotion decides the result dtype.
  const HostArray i = host_array<int>({1, 2, 3}, {3}, "int32");
  EXPECT_EQ(numpy("a + b", {i, b})[0].dtype, "float64");
}

TEST(NumpyOracle, StatementsAssignOut) {
  const HostArray a = host_array<double>({1, 2, 3, 4}, {4}, "float64");
  const std::vector<HostArray> out = numpy(
      "total = 0.0\n"
      "for x in a:\n"
      "    total += x * x\n"
      "out = np.float32(total)\n",
      {a});
  EXPECT_EQ(out[0].dtype, "float32");
  EXPECT_TRUE(out[0].shape.empty());
  EXPECT_EQ(as_doubles(out[0]), std::vector<double>{30.0});
  // Inputs are writable copies: in-place updates work and do not leak into the next call.
  EXPECT_EQ(as_doubles(numpy("a += 1\nout = a", {a})[0]), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(as_doubles(numpy("a", {a})[0]), (std::vector<double>{1, 2, 3, 4}));
}

TEST(NumpyOracle, TupleAndScalarResults) {
  const HostArray a = host_array<float>({3, -1, 7, 2}, {2, 2}, "float32");
  const std::vector<HostArray> out = numpy("(a.max(), a.argmax(), a > 0, 3, 2.5, True)", {a});
  ASSERT_EQ(out.size(), 6U);
  EXPECT_EQ(out[0].dtype, "float32");
  EXPECT_EQ(as_doubles(out[0]), std::vector<double>{7});
  EXPECT_EQ(out[1].dtype, "int64");
  EXPECT_EQ(as_doubles(out[1]), std::vector<double>{2});
  EXPECT_EQ(out[2].dtype, "bool");
  EXPECT_EQ(out[2].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(as_doubles(out[2]), (std::vector<double>{1, 0, 1, 1}));
  EXPECT_EQ(out[3].dtype, "int64");
  EXPECT_EQ(out[4].dtype, "float64");
  EXPECT_EQ(out[5].dtype, "bool");
  for (std::size_t i = 3; i < 6; ++i) EXPECT_TRUE(out[i].shape.empty());
  EXPECT_EQ(numpy("[a, a]", {a}).size(), 2U);
  EXPECT_TRUE(numpy("()", {}).empty());
}

TEST(NumpyOracle, ClosedSetOfResultDtypes) {
  const HostArray a = host_array<std::complex<float>>({{1, 2}}, {1}, "complex64");
  const std::vector<HostArray> wide = numpy("a.astype(np.complex128) * 2", {a});
  EXPECT_EQ(wide[0].dtype, "complex64");
  EXPECT_EQ(as_complex(wide[0]), (std::vector<std::complex<double>>{{2, 4}}));
  EXPECT_EQ(numpy("np.ones(2, np.float16) / 3", {})[0].dtype, "float16");
  try {
    numpy("np.array(['x'], dtype=object)", {});
    FAIL() << "an object array should not come back";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("dtype object"), std::string::npos) << e.what();
  }
}

TEST(NumpyOracle, PythonErrorsCarryTheTraceback) {
  const HostArray a = host_array<float>({1, 2, 3, 4, 5, 6}, {2, 3}, "float32");
  try {
    numpy("a @ a", {a, a});
    FAIL() << "matmul of (2, 3) by (2, 3) should raise";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("ValueError"), std::string::npos) << message;
    EXPECT_NE(message.find("matmul"), std::string::npos) << message;
    EXPECT_NE(message.find("a @ a"), std::string::npos) << message;
  }
  try {
    numpy("x = 1\ny = undefined_name + x\nout = y", {});
    FAIL() << "an unknown name should raise";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("NameError: name 'undefined_name' is not defined"), std::string::npos) << message;
    EXPECT_NE(message.find("line 2"), std::string::npos) << message;
  }
  EXPECT_THROW(numpy("x = a", {a}), std::runtime_error);  // statements that forget `out`
  EXPECT_THROW(numpy("def (", {}), std::runtime_error);    // a syntax error
  EXPECT_THROW(numpy("exit(3)", {}), std::runtime_error);  // SystemExit is the code's error, not the oracle's
  // The child keeps serving after each error.
  EXPECT_EQ(as_doubles(numpy("a.sum()", {a})[0]), std::vector<double>{21});
}

TEST(NumpyOracle, PrintDoesNotCorruptTheProtocol) {
  const std::vector<HostArray> out =
      numpy("print('(expected) oracle test output on stdout goes to stderr'); import os; os.write(1, b'OK 99\\n'); out = np.int8(5)", {});
  EXPECT_EQ(as_doubles(out[0]), std::vector<double>{5});
}

TEST(NumpyOracle, DeadChildGivesAClearErrorAndRestarts) {
  try {
    numpy("__import__('os')._exit(7)", {});
    FAIL() << "the child exiting should throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 7"), std::string::npos) << e.what();
  }
  EXPECT_EQ(as_doubles(numpy("np.int32(41) + 1", {})[0]), std::vector<double>{42});
}

TEST(NumpyOracle, SixteenMebibyteRoundTrip) {
  constexpr std::size_t n = std::size_t{4} << 20;  // 16 MiB of float32
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 65536) - 32768.0F;
  const HostArray a = host_array(values, {1024, 4096}, "float32");
  ASSERT_EQ(a.bytes.size(), 16U << 20);
  const std::vector<HostArray> out = numpy("(a, -a, a.sum(dtype=np.float64))", {a});
  ASSERT_EQ(out.size(), 3U);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{1024, 4096}));
  EXPECT_TRUE(out[0].bytes == a.bytes);
  const std::vector<double> negated = as_doubles(out[1]);
  bool all_negated = true;
  for (std::size_t i = 0; i < n; ++i) all_negated = all_negated && negated[i] == -static_cast<double>(values[i]);
  EXPECT_TRUE(all_negated);
  EXPECT_EQ(as_doubles(out[2]), std::vector<double>{-32768.0 * 64});  // each of 64 periods sums to -32768
}

TEST(NumpyOracle, Bfloat16InputsWidenExactlyToFloat32) {
  // Bit patterns: 1.0, -2.5, the largest finite, the smallest subnormal, +inf, a NaN.
  const std::vector<uint16_t> bits = {0x3F80, 0xC020, 0x7F7F, 0x0001, 0x7F80, 0x7FC1};
  const HostArray a{"bfloat16", {6}, to_bytes(bits.data(), bits.size() * 2)};
  const std::vector<HostArray> out = numpy("(a, a.dtype == np.float32, a * 2)", {a});
  ASSERT_EQ(out[0].dtype, "float32");
  std::vector<uint32_t> widened(6);
  std::memcpy(widened.data(), out[0].bytes.data(), 24);
  for (std::size_t i = 0; i < bits.size(); ++i) EXPECT_EQ(widened[i], static_cast<uint32_t>(bits[i]) << 16) << i;
  EXPECT_EQ(as_doubles(out[1]), std::vector<double>{1});
  EXPECT_EQ(out[2].dtype, "float32");
  const std::vector<double> doubled = as_doubles(out[2]);
  EXPECT_EQ(doubled[0], 2.0);
  EXPECT_EQ(doubled[1], -5.0);
  EXPECT_TRUE(std::isinf(doubled[2]));  // 2 * 3.39e38 overflows float32
  EXPECT_EQ(doubled[3], std::ldexp(1.0, -132));
  // as_doubles reads bfloat16 itself.
  const std::vector<double> direct = as_doubles(a);
  EXPECT_EQ(direct[0], 1.0);
  EXPECT_EQ(direct[1], -2.5);
  EXPECT_EQ(direct[3], std::ldexp(1.0, -133));
  EXPECT_TRUE(std::isnan(direct[5]));
}

TEST(NumpyOracle, HostArrayRoundsHalfFormatsToNearestEven) {
  // 1 + 2^-8 lies halfway between bfloat16 neighbours 1 and 1 + 2^-7: ties go to the even one, 1.
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: the even one is 1 + 2^-6.
  const HostArray bf = host_array<double>({1 + std::ldexp(1, -8), 1 + 3 * std::ldexp(1, -8), 3e38, 1e39, -0.0},
                                          {5}, "bfloat16");
  EXPECT_EQ(u16_at(bf, 0), 0x3F80);
  EXPECT_EQ(u16_at(bf, 1), 0x3F82);
  EXPECT_EQ(u16_at(bf, 2), 0x7F62);
  EXPECT_EQ(u16_at(bf, 3), 0x7F80);  // past the largest finite: inf
  EXPECT_EQ(u16_at(bf, 4), 0x8000);
  // float16: 65504 is the largest finite, 65520 the tie that rounds up to inf; 2^-24 the smallest subnormal and
  // 2^-25 the tie that rounds to even (zero); 2^-14 - 2^-25 rounds up to the smallest normal.
  const HostArray h = host_array<double>(
      {65504, 65519.99, 65520, std::ldexp(1, -24), std::ldexp(1, -25), std::ldexp(1, -14) - std::ldexp(1, -25), 0.1},
      {7}, "float16");
  EXPECT_EQ(u16_at(h, 0), 0x7BFF);
  EXPECT_EQ(u16_at(h, 1), 0x7BFF);
  EXPECT_EQ(u16_at(h, 2), 0x7C00);
  EXPECT_EQ(u16_at(h, 3), 0x0001);
  EXPECT_EQ(u16_at(h, 4), 0x0000);
  EXPECT_EQ(u16_at(h, 5), 0x0400);
  EXPECT_EQ(u16_at(h, 6), 0x2E66);  // 0.1 as float16 (0.0999755859375)
  EXPECT_EQ(as_doubles(h)[6], 0.0999755859375);
}

TEST(NumpyOracle, HostArrayRejectsBadInput) {
  EXPECT_THROW(host_array<float>({1, 2, 3}, {2, 2}, "float32"), std::invalid_argument);
  EXPECT_THROW(host_array<float>({1}, {1}, "float128"), std::invalid_argument);
  EXPECT_THROW(host_array<double>({1e10}, {1}, "int32"), std::invalid_argument);
  EXPECT_THROW(host_array<std::complex<float>>({{1, 2}}, {1}, "float32"), std::invalid_argument);
  const HostArray short_bytes{"float32", {2}, std::vector<std::byte>(7)};
  EXPECT_THROW(numpy("a", {short_bytes}), std::invalid_argument);
  EXPECT_EQ(as_doubles(numpy("a", {host_array<int>({-1, 300}, {2}, "uint8")})[0]), (std::vector<double>{255, 44}));
}

TEST(NumpyOracle, ThreadsShareOneChildSafely) {
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      for (int k = 0; k < 50; ++k) {
        const HostArray a = host_array<int>({t, k}, {2}, "int64");
        const std::vector<double> got = as_doubles(numpy("a * 10 + 1", {a}).at(0));
        if (got != std::vector<double>{10.0 * t + 1, 10.0 * k + 1}) ++failures[static_cast<std::size_t>(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(NumpyOracle, SmallCallLatency) {
  const HostArray a = host_array<float>({1, 2, 3, 4}, {4}, "float32");
  const HostArray b = host_array<float>({5, 6, 7, 8}, {4}, "float32");
  numpy("a + b", {a, b});  // the child is warm from here on
  constexpr int calls = 1000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) numpy("a + b", {a, b});
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  std::printf("[ oracle   ] %.1f us per small call (a + b on 4 floats, %d calls)\n", elapsed.count() / calls, calls);
  EXPECT_LT(elapsed.count() / calls, 100000.0);  // only a gross regression fails; timing varies by machine
}

}  // namespace
}  // namespace nuvec::test
