// Each error kind is thrown as the standard exception MLX throws for that case, and all of them are nuvec::error.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "nuvec/core/op_prefix.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

constexpr int big = 1 << 30;  // two of these overflow int32

/// Runs `call`, expects it to throw `Std`, and checks the nuvec kind of the same exception.
template <class Std, class F>
void expect_error(F call, ErrorKind kind, const std::string& fragment) {
  try {
    call();
    FAIL() << "expected an error containing " << fragment;
  } catch (const Std& e) {
    const auto* err = dynamic_cast<const nuvec::error*>(&e);
    ASSERT_NE(err, nullptr) << e.what();
    EXPECT_EQ(err->kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Error, InvalidArgumentsAreInvalidArgument) {
  expect_error<std::invalid_argument>(
      [] {
        (void)reshape(array({1, 2, 3}), {2, 2});
      },
      ErrorKind::invalid_argument, "[reshape]");
  expect_error<std::invalid_argument>([] { (void)bitwise_and(array(1.0F), array(2.0F)); }, ErrorKind::invalid_argument,
                                      "bitwise_and");
}

TEST(Error, AxesOutOfRangeAreOutOfRange) {
  auto a = zeros({2, 3});
  expect_error<std::out_of_range>([&] { (void)a.shape(-3); }, ErrorKind::out_of_range, "[shape]");
  expect_error<std::out_of_range>([&] { (void)a.strides(-3); }, ErrorKind::out_of_range, "[strides]");
  expect_error<std::out_of_range>([&] { (void)sum(a, 2); }, ErrorKind::out_of_range, "[sum]");
  expect_error<std::out_of_range>([&] { (void)moveaxis(a, 0, 2); }, ErrorKind::out_of_range, "[moveaxis]");
  expect_error<std::out_of_range>([&] { (void)swapaxes(a, -3, 0); }, ErrorKind::out_of_range, "[swapaxes]");
  expect_error<std::out_of_range>([&] { (void)diagonal(a, 0, 0, 2); }, ErrorKind::out_of_range, "[diagonal]");
}

TEST(Error, ShapesPastInt32AreOverflowErrors) {
  // Views only: nothing is allocated, the shapes alone overflow.
  auto row = broadcast_to(array(1.0F), {1, big});
  const auto overflow = ErrorKind::overflow;
  expect_error<std::overflow_error>([&] { (void)tile(row, {1, 2}); }, overflow, "[tile] Shape dimension 2147483648");
  expect_error<std::overflow_error>([&] { (void)repeat(row, 2, 1); }, overflow, "[repeat]");
  expect_error<std::overflow_error>([&] { (void)pad(row, std::vector<int>{1}, Shape{big}, Shape{0}); }, overflow, "[pad]");
  expect_error<std::overflow_error>([&] { (void)concatenate({row, row}, 1); }, overflow, "[concatenate]");
  expect_error<std::overflow_error>([&] { (void)flatten(broadcast_to(array(1.0F), {4, big})); }, overflow, "[flatten]");
  expect_error<std::overflow_error>(
      [&] {
        (void)reshape(broadcast_to(array(1.0F), {4, big}), {-1});
      },
      overflow, "[reshape]");
  expect_error<std::overflow_error>([&] { (void)kron(row, array({1.0F, 2.0F}, {1, 2})); }, overflow, "[kron]");
  // A 1-d convolution whose input dilation makes the output longer than int32.
  auto x = broadcast_to(array(1.0F), {1, big, 1});
  auto w = ones({1, 1, 1});
  expect_error<std::overflow_error>([&] { (void)conv_general(x, w, {1}, {0}, {0}, {1}, std::vector<int>{4}); },
                                    overflow, "[conv]");
}

TEST(Error, FileAndFormatErrorsAreRuntimeErrors) {
  const std::filesystem::path missing = test::temp_path("error_test_missing.safetensors");
  std::filesystem::remove(missing);
  expect_error<std::runtime_error>([&] { (void)load_safetensors(missing.string()); }, ErrorKind::io, "");
  const std::filesystem::path garbage = test::temp_path("error_test_garbage.npy");
  std::ofstream(garbage) << "not an npy file";
  expect_error<std::runtime_error>([&] { (void)load(garbage.string()); }, ErrorKind::io, "");
  std::filesystem::remove(garbage);
}

TEST(Error, CatchableAsOneType) {
  // One handler with kind() covers every kind.
  for (auto kind : {ErrorKind::invalid_argument, ErrorKind::out_of_range, ErrorKind::overflow, ErrorKind::unsupported,
                    ErrorKind::out_of_memory, ErrorKind::io, ErrorKind::internal}) {
    try {
      throw_error(kind, "message");
    } catch (const nuvec::error& e) {
      EXPECT_EQ(e.kind(), kind);
      EXPECT_STREQ(e.what(), "message");
    }
    EXPECT_THROW(throw_error(kind, "message"), std::exception);
  }
}

TEST(Error, OpPrefixNamesTheOpOnce) {
  // One helper writes "[op] " for the ops, nn, lm and the shape checks alike.
  EXPECT_EQ(detail::op_prefix("sum"), "[sum] ");
  EXPECT_EQ(detail::op_prefix(std::string("mse_loss")).append("given"), "[mse_loss] given");
  expect_error<std::invalid_argument>(
      [] {
        squeeze(zeros({1, 2}), std::vector<int>{0, 0});
      },
      ErrorKind::invalid_argument, "[squeeze] Received duplicate axes.");
}

}  // namespace
}  // namespace nuvec
