#pragma once

#include <atomic>
#include <complex>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <type_traits>
#include <vector>

#include "nuvec/core/allocator.h"
#include "nuvec/core/device.h"
#include "nuvec/core/dtype.h"
#include "nuvec/core/error.h"
#include "nuvec/core/primitives.h"
#include "nuvec/core/shape.h"

namespace nuvec {

class array;
using Deleter = std::function<void(allocator::Buffer)>;

/// C++ values an array can be built from (besides complex64_t).
template <class T>
concept ScalarValue = std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

/// The dtype an array constructor gives a C++ value: as MLX, double means float32.
template <class T>
constexpr Dtype default_dtype() {
  if constexpr (std::is_same_v<T, double>) {
    return float32;
  } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return complex64;
  } else if constexpr (std::is_same_v<T, long>) {
    return int64;
  } else if constexpr (std::is_same_v<T, unsigned long>) {
    return uint64;
  } else {
    return dtype_v<T>;
  }
}

namespace detail {

/// Converts one host value to the storage type of `dtype` and writes it at `out`.
void store_value(Dtype dtype, void* out, double value);
void store_value(Dtype dtype, void* out, int64_t value);
void store_value(Dtype dtype, void* out, uint64_t value);
void store_value(Dtype dtype, void* out, complex64_t value);

template <class T>
void store_as(Dtype dtype, void* out, const T& value) {
  if constexpr (std::is_same_v<T, complex64_t>) {
    store_value(dtype, out, value);
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    store_value(dtype, out, complex64_t(value));
  } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
    store_value(dtype, out, static_cast<uint64_t>(value));
  } else if constexpr (std::is_integral_v<T>) {
    store_value(dtype, out, static_cast<int64_t>(value));
  } else {
    store_value(dtype, out, static_cast<double>(value));
  }
}

struct Node;
struct ArrayRecord;

/// While one is alive on a thread, arrays marked as tracers there report is_tracer() (a transform is tracing).
class TracingScope {
 public:
  TracingScope();
  ~TracingScope();
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;
};
bool in_tracing();
/// Throws, as MLX does, when one of `outputs` is a tracer: vmap's traced values stand for a whole batch and have no
/// value of their own to compute.
void check_no_tracers(const std::vector<array>& outputs, const char* op);

/// A scratch slot on an array's graph node for traversals that hold the
/// evaluation lock (-1 when unmarked; a traversal restores it). The array
/// must have a primitive.
int& traversal_mark(const array& a);

/// Replaces the contents of `into` with a.outputs(), reusing its storage: evaluation fills one list per thread
/// instead of allocating one for each node.
void outputs_into(const array& a, std::vector<array>& into);

}  // namespace detail

/// Evaluation state of an array.
enum class Status : uint8_t {
  unscheduled,  // has a primitive, not yet computed
  scheduled,    // handed to async_eval, being computed
  available,    // has data
  failed,       // evaluation failed; reading it rethrows the error
};

/// How an array's elements sit in its buffer.
struct Flags {
  bool contiguous = true;      // the elements fill [data, data + data_size) without holes
  bool row_contiguous = true;  // C order
  bool col_contiguous = true;  // Fortran order
};

namespace detail {

/// The part of an array's record that its accessors read, defined here so that they inline: building a small op
/// reads its operands' shapes and dtypes many times. Array.cpp's ArrayRecord adds what owns the graph node and the
/// buffer.
struct ArrayDesc {
  Shape shape;
  Strides strides;
  size_t size;
  Dtype dtype;
  bool is_tracer = false;
  Flags flags;
  std::atomic<Status> status{Status::unscheduled};
  Node* node = nullptr;  // the graph node, owned by the record (null for data, and once detached)
  void* data_ptr = nullptr;
  size_t data_size = 0;

  ArrayDesc(Shape s, Dtype t);
  ArrayDesc(const ArrayDesc&) = delete;
  ArrayDesc& operator=(const ArrayDesc&) = delete;

 protected:
  ~ArrayDesc() = default;  // destroyed as the ArrayRecord it is part of
};

}  // namespace detail

/// A lazy n-dimensional array: a cheap handle to a graph node or to data.
class array {
 public:
  /// A scalar (0-d) array.
  template <ScalarValue T>
  explicit array(T value, Dtype dtype = default_dtype<T>()) : array(Shape{}, dtype) {
    init_from(&value, 1);
  }
  explicit array(const complex64_t& value, Dtype dtype = complex64);

  /// Copies `shape`'s worth of elements from an iterator.
  template <std::input_iterator It>
  array(It data, const Shape& shape, Dtype dtype = default_dtype<typename std::iterator_traits<It>::value_type>())
      : array(shape, dtype) {
    using T = typename std::iterator_traits<It>::value_type;
    std::vector<T> values(data, std::next(data, static_cast<std::ptrdiff_t>(shape_size(shape))));
    init_from(values.data(), values.size());
  }

  /// A 1-d array from values.
  template <class T>
  array(std::initializer_list<T> data, Dtype dtype = default_dtype<T>())  // NOLINT(google-explicit-constructor)
      : array(Shape{checked_dim(static_cast<int64_t>(data.size()), "array")}, dtype) {
    init_from(data.begin(), data.size());
  }
  /// As MLX: a float32 array from `{}` or from a list mixing float and double values (`{inf, 2.0}`), which deduce
  /// no single element type. Without it such a list would bind to the complex64 scalar constructor.
  explicit array(std::initializer_list<float> data);
  /// As MLX: `array({}, dtype)` is an empty array of `dtype`.
  explicit array(std::initializer_list<int> data, Dtype dtype);

  /// An array of `shape` from values in row-major order.
  template <class T>
  array(std::initializer_list<T> data, const Shape& shape, Dtype dtype = default_dtype<T>()) : array(shape, dtype) {
    check_init_size(data.size());
    init_from(data.begin(), data.size());
  }

  /// Adopts an allocator buffer; `deleter` releases it when the last view goes.
  array(allocator::Buffer data, Shape shape, Dtype dtype, Deleter deleter = allocator::free);
  /// Adopts foreign memory (zero copy).
  array(void* data, Shape shape, Dtype dtype, const std::function<void(void*)>& deleter);

  /// A lazy output of a primitive (used by ops).
  array(Shape shape, Dtype dtype, Primitive primitive, std::vector<array> inputs, Stream stream);
  /// All outputs of one multi-output primitive.
  static std::vector<array> make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                        Primitive primitive, std::vector<array> inputs, Stream stream);

  array(const array&) = default;
  array(array&&) noexcept = default;
  array& operator=(const array&) & = default;
  array& operator=(array&&) & noexcept = default;
  ~array() = default;

  // Assigning to a temporary is almost always a bug (MLX deletes these too).
  array& operator=(const array&) && = delete;
  array& operator=(array&&) && = delete;

  [[nodiscard]] size_t itemsize() const { return size_of(dtype()); }
  [[nodiscard]] size_t size() const { return desc_->size; }
  [[nodiscard]] size_t nbytes() const { return size() * itemsize(); }
  [[nodiscard]] int ndim() const { return static_cast<int>(shape().size()); }
  [[nodiscard]] const Shape& shape() const { return desc_->shape; }
  /// Size of one axis; negative axes count from the end.
  [[nodiscard]] int shape(int axis) const;
  [[nodiscard]] const Strides& strides() const { return desc_->strides; }
  [[nodiscard]] int64_t strides(int axis) const;
  [[nodiscard]] Dtype dtype() const { return desc_->dtype; }

  /// Computes the array (and its graph) now; throws the error of a failed evaluation.
  void eval();

  /// The value of a one-element array, converted to T; evaluates first.
  template <class T>
  T item();
  /// As MLX's: the array must already be scheduled or evaluated.
  template <class T>
  T item() const;

  /// Pointer to the first element; the array must have been evaluated.
  template <class T>
  T* data() {
    return static_cast<T*>(checked_data());
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(checked_data());
  }

  /// Iteration over the first axis: each element is an array of one fewer dimension.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = array;
    using reference = array;
    using difference_type = std::ptrdiff_t;
    explicit iterator(const array& a, int index = 0) : arr_(&a), index_(index) {}
    array operator*() const;
    array operator[](difference_type n) const { return *(*this + n); }
    iterator& operator++() {
      ++index_;
      return *this;
    }
    iterator operator++(int) {
      auto before = *this;
      ++index_;
      return before;
    }
    iterator& operator--() {
      --index_;
      return *this;
    }
    iterator& operator+=(difference_type n) {
      index_ += static_cast<int>(n);
      return *this;
    }
    iterator& operator-=(difference_type n) { return *this += -n; }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const iterator& a, const iterator& b) { return a.index_ - b.index_; }
    friend bool operator==(const iterator& a, const iterator& b) { return a.arr_ == b.arr_ && a.index_ == b.index_; }
    friend auto operator<=>(const iterator& a, const iterator& b) { return a.index_ <=> b.index_; }

   private:
    const array* arr_;
    int index_;
  };
  /// MLX's name for the iterator.
  using ArrayIterator = iterator;
  [[nodiscard]] iterator begin() const { return iterator(*this, 0); }
  [[nodiscard]] iterator end() const { return iterator(*this, ndim() == 0 ? 0 : shape(0)); }

  /// Owns an adopted or allocated buffer and releases it with `d` when the last view of it goes (as MLX's).
  struct Data {
    allocator::Buffer buffer;
    Deleter d;
    /// Where `buffer` lives. A GPU buffer's elements are read on the host through a copy (see raw_data).
    Device device = Device::cpu;
    /// The GPU backend's record of the buffer: the stream that writes it, its copies on the other side. Null for
    /// host data no GPU has read.
    std::shared_ptr<void> gpu_state;
    Data(allocator::Buffer buffer, Deleter d = allocator::free);  // NOLINT(google-explicit-constructor)
    Data(allocator::Buffer buffer, Deleter d, Device device, std::shared_ptr<void> gpu_state);
    Data(const Data&) = delete;
    Data& operator=(const Data&) = delete;
    Data(Data&& other) noexcept;
    Data& operator=(Data&&) = delete;
    ~Data();
  };
  /// The shared owner of the array's buffer (null before evaluation).
  [[nodiscard]] const std::shared_ptr<Data>& data_shared_ptr() const;

  /// Marks the array as a tracer: an input (or a value computed from one) of a function being transformed.
  void set_tracer(bool is_tracer);
  /// Whether the array is a tracer while its thread is tracing a function: the inputs that vjp, grad,
  /// value_and_grad, jvp, vmap, compile and export_function hand the function, and every array computed from them
  /// inside it. Those of vmap, compile and export_function stand for values not known yet and throw when evaluated,
  /// as in MLX; those of vjp and jvp are real values and evaluate. Once the thread traces nothing, it is false.
  [[nodiscard]] bool is_tracer() const { return desc_->is_tracer && detail::in_tracing(); }

  // ---- graph and buffer access, for transforms and backends ----
  [[nodiscard]] uintptr_t id() const { return reinterpret_cast<uintptr_t>(desc_.get()); }
  [[nodiscard]] Status status() const { return desc_->status.load(std::memory_order_acquire); }
  [[nodiscard]] bool is_available() const { return status() == Status::available; }
  [[nodiscard]] bool has_primitive() const { return desc_->node != nullptr; }
  /// Identity of the graph node (shared by siblings); the array's own id when it has none.
  [[nodiscard]] uintptr_t node_id() const { return desc_->node ? reinterpret_cast<uintptr_t>(desc_->node) : id(); }
  [[nodiscard]] const Primitive& primitive() const;
  [[nodiscard]] Stream stream() const;
  [[nodiscard]] const std::vector<array>& inputs() const;
  /// The other outputs of this array's primitive (empty for single-output primitives).
  [[nodiscard]] std::vector<array> siblings() const;
  /// All outputs of this array's primitive, itself included, in order.
  [[nodiscard]] std::vector<array> outputs() const;
  /// The error of a failed array (null otherwise).
  [[nodiscard]] std::exception_ptr error() const;
  /// Drops the primitive and inputs of this array and its siblings (after evaluation).
  void detach();

  [[nodiscard]] const Flags& flags() const { return desc_->flags; }
  /// Elements in the underlying contiguous range (smaller than size() for broadcasts).
  [[nodiscard]] size_t data_size() const { return desc_->data_size; }
  /// The first element on the host (for an array whose buffer lives on a GPU: in its host copy, made on first use).
  [[nodiscard]] void* raw_data() const;
  /// The first element in the buffer itself, wherever it lives (a device address for a GPU buffer).
  [[nodiscard]] void* buffer_data() const { return desc_->data_ptr; }
  /// Where the array's buffer lives (the CPU before evaluation).
  [[nodiscard]] Device data_device() const;
  [[nodiscard]] allocator::Buffer buffer() const;
  /// Owners of the underlying buffer (1: no other array views it).
  [[nodiscard]] long buffer_use_count() const;
  /// Handles to this array (1: no one else holds it).
  [[nodiscard]] long use_count() const { return desc_.use_count(); }

  /// Gives the array a fresh row-contiguous buffer.
  void set_data(allocator::Buffer buffer, Deleter deleter = allocator::free);
  void set_data(allocator::Buffer buffer, size_t data_size, Strides strides, Flags flags,
                Deleter deleter = allocator::free);
  /// Gives the array a row-contiguous buffer that `data` owns (a GPU backend's output).
  void set_data(std::shared_ptr<Data> data);
  /// Makes this array a view of `other`'s buffer with its own layout; `offset` in elements.
  void copy_shared_buffer(const array& other, const Strides& strides, Flags flags, size_t data_size,
                          int64_t offset = 0);
  void copy_shared_buffer(const array& other);
  /// Takes over `other`'s buffer (donation), keeping this array's shape.
  void move_shared_buffer(array other);
  /// Marks the array as failed with `err` (evaluation does this; consumers inherit it).
  void set_failed(std::exception_ptr err);
  void set_status(Status s);
  /// Whether this array's buffer may be reused in place by a consumer.
  [[nodiscard]] bool is_donatable() const;

 private:
  array(Shape shape, Dtype dtype);  // a data array awaiting init_from
  void check_init_size(size_t n) const;
  [[nodiscard]] void* checked_data() const;

  template <class T>
  void init_from(const T* values, size_t n) {
    allocate_row_contiguous();
    auto* out = static_cast<char*>(raw_data());
    for (size_t i = 0; i < n; ++i) {
      detail::store_as(dtype(), out + i * itemsize(), values[i]);
    }
  }
  void allocate_row_contiguous();

  explicit array(std::shared_ptr<detail::ArrayDesc> desc) : desc_(std::move(desc)) {}

  std::shared_ptr<detail::ArrayDesc> desc_;
  friend struct detail::ArrayRecord;
  friend int& detail::traversal_mark(const array& a);
  friend void detail::outputs_into(const array& a, std::vector<array>& into);
};

namespace detail {

/// Reads element 0 of an evaluated array converted to double / int64 / complex.
double read_double(const array& a);
int64_t read_int64(const array& a);
uint64_t read_uint64(const array& a);
complex64_t read_complex(const array& a);

}  // namespace detail

template <class T>
T array::item() const {
  if (status() == Status::unscheduled && has_primitive()) {
    throw_invalid("[item] item() const can only be called on evaluated arrays.");
  }
  return const_cast<array*>(this)->item<T>();
}

template <class T>
T array::item() {
  if (size() != 1) {
    throw_invalid("[item] item can only be called on arrays of size 1.");
  }
  eval();
  if constexpr (std::is_same_v<T, complex64_t>) {
    return detail::read_complex(*this);
  } else if constexpr (std::is_same_v<T, bool>) {
    return detail::read_double(*this) != 0.0 || detail::read_int64(*this) != 0;
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    return static_cast<T>(detail::read_uint64(*this));
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(detail::read_int64(*this));
  } else {
    return static_cast<T>(detail::read_double(*this));
  }
}

}  // namespace nuvec
