// MLX's array.h, called as MLX code calls it: a declaration that changes or goes missing fails to compile here.

#include <gtest/gtest.h>

#include <complex>
#include <vector>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

TEST(MlxApiArray, Constructors) {
  EXPECT_EQ(array(1).dtype(), int32);
  EXPECT_EQ(array(2.0).dtype(), float32);
  EXPECT_EQ(array(2.0F, float16).dtype(), float16);
  EXPECT_EQ(array(true).dtype(), bool_);
  EXPECT_EQ(array(std::complex<float>(1.0F, 2.0F)).dtype(), complex64);
  std::vector<int> values{1, 2, 3, 4};
  EXPECT_EQ(array(values.begin(), {2, 2}).dtype(), int32);
  EXPECT_EQ(array(values.begin(), {4}, float32).dtype(), float32);
  EXPECT_EQ(array({1, 2, 3}).shape(), Shape{3});
  EXPECT_EQ(array({1.0F, 2.0F}, float16).dtype(), float16);
  EXPECT_EQ(array({}).shape(), Shape{0});
  EXPECT_EQ(array({}, int32).dtype(), int32);
  EXPECT_EQ(array({1, 2, 3, 4}, {2, 2}).shape(), (Shape{2, 2}));
  EXPECT_EQ(array({1, 2, 3, 4}, {2, 2}, float32).dtype(), float32);
  auto* raw = new float[2]{1.0F, 2.0F};
  array adopted(raw, {2}, float32, [](void* p) { delete[] static_cast<float*>(p); });
  EXPECT_EQ(adopted.data<float>()[1], 2.0F);
  array from_buffer(allocator::malloc(8), {2}, float32);
  EXPECT_EQ(from_buffer.size(), 2U);
}

TEST(MlxApiArray, Members) {
  array a({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(a.itemsize(), 4U);
  EXPECT_EQ(a.size(), 6U);
  EXPECT_EQ(a.nbytes(), 24U);
  EXPECT_EQ(a.ndim(), 2);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.shape(-1), 3);
  EXPECT_EQ(a.strides(), (Strides{3, 1}));
  EXPECT_EQ(a.strides(0), 3);
  EXPECT_EQ(a.dtype(), int32);
  a.eval();
  EXPECT_EQ(array(5).item<int>(), 5);
  const array c = array(2.5F);
  EXPECT_EQ(c.item<float>(), 2.5F);
  EXPECT_EQ(a.data<int32_t>()[5], 6);
  const array& ca = a;
  EXPECT_EQ(ca.data<int32_t>()[0], 1);
  EXPECT_NE(a.id(), array(1).id());
  EXPECT_FALSE(a.has_primitive());
  EXPECT_TRUE(a.inputs().empty());
  EXPECT_TRUE(a.siblings().empty());
  EXPECT_EQ(a.outputs().size(), 1U);
  EXPECT_TRUE(a.flags().row_contiguous);
  EXPECT_EQ(a.data_size(), 6U);
  EXPECT_NE(a.buffer().raw_ptr(), nullptr);
  EXPECT_NE(a.data_shared_ptr(), nullptr);
  EXPECT_TRUE(a.is_available());
  EXPECT_EQ(a.status(), Status::available);
  EXPECT_FALSE(a.is_tracer());
  a.set_tracer(false);
  auto b = a + 1;
  EXPECT_TRUE(b.has_primitive());
  b.eval();
  b.detach();
  EXPECT_FALSE(b.has_primitive());
  EXPECT_TRUE(array(1.0F).is_donatable());
}

TEST(MlxApiArray, Data) {
  bool freed = false;
  {
    array::Data data(allocator::malloc(16), [&](allocator::Buffer b) {
      freed = true;
      allocator::free(b);
    });
    array::Data moved(std::move(data));
    EXPECT_NE(moved.buffer.raw_ptr(), nullptr);
    EXPECT_FALSE(freed);
  }
  EXPECT_TRUE(freed);
  array::Data plain(allocator::malloc(8));
  EXPECT_NE(plain.buffer.raw_ptr(), nullptr);
}

TEST(MlxApiArray, IteratorArithmetic) {
  auto a = reshape(arange(6), {3, 2});
  int rows = 0;
  for (auto row : a) {
    EXPECT_EQ(row.shape(), Shape{2});
    ++rows;
  }
  EXPECT_EQ(rows, 3);
  auto v = arange(10, 13);
  auto it = v.begin();
  EXPECT_EQ((*(it + 2)).item<int>(), 12);
  EXPECT_EQ(it[1].item<int>(), 11);
  EXPECT_EQ(v.end() - v.begin(), 3);
  it += 1;
  EXPECT_EQ((*it).item<int>(), 11);
  it++;
  --it;
  EXPECT_TRUE(it != v.end());
  EXPECT_TRUE(a.begin() + 3 == a.end());
  EXPECT_TRUE(a.begin() < a.end());
  array::ArrayIterator explicit_it(a, 1);
  EXPECT_EQ((*explicit_it).shape(), Shape{2});
  std::vector<array> rows_copy(a.begin(), a.end());
  EXPECT_EQ(rows_copy.size(), 3U);
}

}  // namespace
}  // namespace nuvec
