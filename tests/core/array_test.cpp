#include <gtest/gtest.h>

#include <numeric>
#include <optional>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

TEST(Array, ConstructorsAndMembers) {
  array a({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.shape(-1), 3);
  EXPECT_EQ(a.strides(), (Strides{3, 1}));
  EXPECT_EQ(a.ndim(), 2);
  EXPECT_EQ(a.size(), 6U);
  EXPECT_EQ(a.nbytes(), 24U);
  EXPECT_EQ(a.itemsize(), 4U);
  EXPECT_EQ(a.dtype(), int32);
  EXPECT_EQ(a.data<int32_t>()[4], 5);

  array b({1, 2}, {2, 1});
  EXPECT_EQ(b.shape(), (Shape{2, 1}));

  std::vector<float> values{1.5F, 2.5F, 3.5F};
  array c(values.begin(), {3});
  EXPECT_EQ(c.dtype(), float32);
  EXPECT_EQ(c.data<float>()[2], 3.5F);

  array d(values.begin(), {3}, float16);
  EXPECT_EQ(d.dtype(), float16);
  EXPECT_EQ(static_cast<float>(d.data<float16_t>()[1]), 2.5F);
}

TEST(Array, ShapeOfNegativeAxisOutOfRangeThrows) {
  // MLX indexes the shape with vector::at, which throws std::out_of_range.
  array a({1, 2, 3});
  EXPECT_THROW((void)a.shape(1), std::out_of_range);
  EXPECT_THROW((void)a.shape(-2), std::out_of_range);
  EXPECT_THROW((void)a.strides(-3), std::out_of_range);
}

TEST(Array, WrongDataSizeIsRejected) {
  try {
    array a({1, 2, 3}, {2, 2});
    FAIL() << "expected an error";
  } catch (const nuvec::error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_STREQ(e.what(), "[array] Data size 3 does not match the size 4 of shape (2,2).");
  }
}

TEST(Array, AdoptsForeignMemory) {
  bool released = false;
  {
    auto* data = new float[4]{1, 2, 3, 4};
    array a(data, {2, 2}, float32, [&](void* p) {
      delete[] static_cast<float*>(p);
      released = true;
    });
    EXPECT_EQ(a.data<float>(), data);
    auto view = slice(a, {1, 0}, {2, 2});
    view.eval();
    a = array(0);
    EXPECT_FALSE(released) << "a view keeps the adopted buffer alive";
    EXPECT_EQ(view.data<float>()[1], 4.0F);
  }
  EXPECT_TRUE(released);
}

TEST(Array, ItemNeedsOneElement) {
  EXPECT_THROW((void)array({1, 2}).item<int>(), std::invalid_argument);
  EXPECT_EQ(array(7).item<int>(), 7);
  EXPECT_FLOAT_EQ(array(2.5F).item<float>(), 2.5F);
  EXPECT_EQ(array(true).item<bool>(), true);
  EXPECT_EQ(array(complex64_t(1, -2)).item<complex64_t>(), complex64_t(1, -2));
}

TEST(Array, IteratesOverFirstAxis) {
  array a({1, 2, 3, 4, 5, 6}, {3, 2});
  int row = 0;
  for (auto r : a) {
    EXPECT_EQ(r.shape(), (Shape{2}));
    r.eval();
    EXPECT_EQ(r.data<int32_t>()[0], 2 * row + 1);
    EXPECT_EQ(r.data<int32_t>()[1], 2 * row + 2);
    ++row;
  }
  EXPECT_EQ(row, 3);
}

TEST(Array, ErrorMessagesNameTheOp) {
  auto a = array({1, 2, 3, 4, 5, 6}, {2, 3});
  try {
    (void)reshape(a, {4, 2});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[reshape] Cannot reshape array of size 6 into shape (4,2).");
  }
  try {
    (void)add(a, array({1, 2}));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[broadcast_shapes] Shapes (2,3) and (2) cannot be broadcast.");
  }
  try {
    (void)transpose(a, {0, 0});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[transpose] Repeated axis 0 in (0,0).");
  }
  try {
    (void)squeeze(a, 2);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[squeeze] Axis 2 is out of bounds for array with 2 dimensions.");
  }
  EXPECT_THROW((void)negative(array(true)), std::invalid_argument);
  EXPECT_THROW((void)bitwise_and(array(1.0F), array(2.0F)), std::invalid_argument);
  EXPECT_THROW((void)broadcast_to(a, {3, 3}), std::invalid_argument);
  EXPECT_THROW((void)concatenate({a, array({1, 2})}, 0), std::invalid_argument);
}

TEST(Array, GraphBuffersReturnWithTheLastHandle) {
  // A node holds its inputs' buffers until it has run or the last handle to it goes: for a chain and a node read
  // twice dropped unevaluated, for an evaluated graph, and for a node of two outputs dropped one at a time. Active
  // memory is the allocator's count of buffers handed out and not yet returned.
  constexpr int n = 1 << 14;
  const size_t bytes = n * sizeof(float);
  auto computed = [] {
    auto a = arange(static_cast<double>(n), float32);
    eval(a);
    return a;
  };
  const size_t base = get_active_memory();

  std::optional<array> a = computed();
  std::optional<array> y = exp(*a);
  std::optional<array> z = exp(*y);
  std::optional<array> w = add(*z, *y);
  a.reset();
  EXPECT_EQ(get_active_memory(), base + bytes) << "y's node holds a's buffer";
  y.reset();
  w.reset();
  EXPECT_EQ(get_active_memory(), base + bytes) << "z's node holds y's, which holds a's buffer";
  z.reset();
  EXPECT_EQ(get_active_memory(), base);

  a = computed();
  w = add(exp(*a), *a);
  a.reset();
  eval(*w);
  EXPECT_EQ(get_active_memory(), base + bytes) << "run nodes let go of their inputs";
  w.reset();
  EXPECT_EQ(get_active_memory(), base);

  a = reshape(computed(), {128, 128});
  auto [q, r] = linalg::qr(*a);
  std::optional<array> q_handle = std::move(q);
  std::optional<array> r_handle = std::move(r);
  a.reset();
  q_handle.reset();
  EXPECT_EQ(get_active_memory(), base + bytes) << "the node is r's too";
  r_handle.reset();
  EXPECT_EQ(get_active_memory(), base);
}

}  // namespace
}  // namespace nuvec
