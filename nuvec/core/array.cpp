#include "nuvec/core/array.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include "nuvec/core/backend.h"
#include "nuvec/core/dispatch.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"

namespace nuvec {

namespace detail {

/// A primitive applied to its inputs; shared by all of its outputs (siblings).
/// Outputs are held weakly so siblings form no reference cycle.
struct Node {
  // Spelled out: clang 14 (the fuzzers' compiler) has no parenthesized aggregate initialization.
  Node(Primitive p, Stream s, std::vector<array> in) : primitive(std::move(p)), stream(s), inputs(std::move(in)) {}

  Primitive primitive;
  Stream stream;
  std::vector<array> inputs;
  // Empty for a node made with one output, which is then the one array holding it: most ops build such a node, and
  // the list would cost an allocation and a weak reference each.
  std::vector<std::weak_ptr<ArrayDesc>> outputs;
  // Shapes and dtypes of the outputs of a multi-output node, so a dropped one
  // can be stood in for by an array kernels may write as if it were alive.
  std::vector<Shape> output_shapes{};
  std::vector<Dtype> output_dtypes{};
  int traversal_mark = -1;
};

ArrayDesc::ArrayDesc(Shape s, Dtype t)
    : shape(std::move(s)), strides(row_major_strides(shape)), size(shape_size(shape)), dtype(t) {}

/// An array's whole record: its accessors' part and the owners of its node, buffer and error.
struct ArrayRecord : ArrayDesc {
  // The node of a single-output primitive, its output's alone, lives in the output's record: one allocation per op
  // instead of two. A multi-output primitive's node is shared by its outputs.
  std::optional<Node> own_node;
  std::shared_ptr<Node> shared_node;
  uint32_t position = 0;
  std::shared_ptr<array::Data> data;
  std::exception_ptr error;

  using ArrayDesc::ArrayDesc;
  ArrayRecord(const ArrayRecord&) = delete;
  ArrayRecord& operator=(const ArrayRecord&) = delete;

  void set_own_node(Primitive&& primitive, Stream stream, std::vector<array>&& inputs) {
    node = &own_node.emplace(std::move(primitive), stream, std::move(inputs));
  }
  void set_shared_node(std::shared_ptr<Node> n) {
    node = n.get();
    shared_node = std::move(n);
  }
  /// Whether no other array holds this array's node.
  [[nodiscard]] bool holds_node_alone() const { return own_node || shared_node.use_count() == 1; }
  void reset_node() {
    node = nullptr;
    own_node.reset();
    shared_node.reset();
  }

  // Deep graphs (a long chain of lazy ops) would overflow the stack if freed
  // recursively: unlink inputs that only this node holds and free them in a loop.
  ~ArrayRecord() {
    if (!node || !holds_node_alone()) {
      return;
    }
    std::vector<array> pending = std::move(node->inputs);
    reset_node();
    while (!pending.empty()) {
      array a = std::move(pending.back());
      pending.pop_back();
      auto& desc = static_cast<ArrayRecord&>(*a.desc_);
      if (a.desc_.use_count() == 1 && desc.node && desc.holds_node_alone()) {
        for (auto& input : desc.node->inputs) {
          pending.push_back(std::move(input));
        }
        desc.reset_node();
      }
    }
  }
};

namespace {

ArrayRecord& record(const std::shared_ptr<ArrayDesc>& desc) { return static_cast<ArrayRecord&>(*desc); }

template <class T, class V>
T convert(V value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != V{};
  } else if constexpr (std::is_same_v<T, complex64_t>) {
    if constexpr (std::is_same_v<V, complex64_t>) {
      return value;
    } else {
      return complex64_t(static_cast<float>(value), 0.0F);
    }
  } else if constexpr (std::is_same_v<V, complex64_t>) {
    return convert<T>(value.real());
  } else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return T(static_cast<double>(value));
  } else {
    return static_cast<T>(value);
  }
}

template <class V>
void store(Dtype dtype, void* out, V value) {
  dispatch(dtype, [&]<class T>(type_tag<T>) {
    T converted = convert<T>(value);
    std::memcpy(out, &converted, sizeof(T));
  });
}

template <class R>
R read(const array& a) {
  return dispatch(a.dtype(), [&]<class T>(type_tag<T>) {
    T value;
    std::memcpy(&value, a.data<char>(), sizeof(T));
    if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
      return convert<R>(static_cast<float>(value));
    } else {
      return convert<R>(value);
    }
  });
}

}  // namespace

void store_value(Dtype dtype, void* out, double value) { store(dtype, out, value); }
void store_value(Dtype dtype, void* out, int64_t value) { store(dtype, out, value); }
void store_value(Dtype dtype, void* out, uint64_t value) { store(dtype, out, value); }
void store_value(Dtype dtype, void* out, complex64_t value) { store(dtype, out, value); }

double read_double(const array& a) { return read<double>(a); }
int64_t read_int64(const array& a) { return read<int64_t>(a); }
uint64_t read_uint64(const array& a) { return read<uint64_t>(a); }
complex64_t read_complex(const array& a) { return read<complex64_t>(a); }

int& traversal_mark(const array& a) { return a.desc_->node->traversal_mark; }

namespace {
thread_local int tracing_depth = 0;
}  // namespace

TracingScope::TracingScope() { ++tracing_depth; }
TracingScope::~TracingScope() { --tracing_depth; }
bool in_tracing() { return tracing_depth > 0; }

}  // namespace detail

array::Data::Data(allocator::Buffer buffer, Deleter d) : buffer(buffer), d(std::move(d)) {}

array::Data::Data(allocator::Buffer buffer, Deleter d, Device device, std::shared_ptr<void> gpu_state)
    : buffer(buffer), d(std::move(d)), device(device), gpu_state(std::move(gpu_state)) {}

array::Data::Data(Data&& other) noexcept
    : buffer(other.buffer), d(std::move(other.d)), device(other.device), gpu_state(std::move(other.gpu_state)) {
  other.buffer = allocator::Buffer();
  other.d = nullptr;
}

array::Data::~Data() {
  if (d) {
    d(buffer);
  }
}

array::array(std::initializer_list<float> data) : array(data, float32) {}

array::array(std::initializer_list<int> data, Dtype dtype)
    : array(Shape{checked_dim(static_cast<int64_t>(data.size()), "array")}, dtype) {
  init_from(data.begin(), data.size());
}

array::array(Shape shape, Dtype dtype) : desc_(std::make_shared<detail::ArrayRecord>(std::move(shape), dtype)) {}

array::array(const complex64_t& value, Dtype dtype) : array(Shape{}, dtype) { init_from(&value, 1); }

array::array(allocator::Buffer data, Shape shape, Dtype dtype, Deleter deleter) : array(std::move(shape), dtype) {
  set_data(data, std::move(deleter));
}

array::array(void* data, Shape shape, Dtype dtype, const std::function<void(void*)>& deleter)
    : array(std::move(shape), dtype) {
  auto bytes = nbytes();
  set_data(allocator::Buffer(data, bytes), [deleter](allocator::Buffer b) { deleter(b.raw_ptr()); });
}

array::array(Shape shape, Dtype dtype, Primitive primitive, std::vector<array> inputs, Stream stream)
    : array(std::move(shape), dtype) {
  desc_->is_tracer = std::any_of(inputs.begin(), inputs.end(), [](const array& in) { return in.desc_->is_tracer; });
  detail::record(desc_).set_own_node(std::move(primitive), stream, std::move(inputs));
}

std::vector<array> array::make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes, Primitive primitive,
                                      std::vector<array> inputs, Stream stream) {
  bool is_tracer = std::any_of(inputs.begin(), inputs.end(), [](const array& in) { return in.desc_->is_tracer; });
  auto node = std::make_shared<detail::Node>(std::move(primitive), stream, std::move(inputs));
  node->output_shapes = shapes;
  node->output_dtypes = dtypes;
  std::vector<array> outputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    array out(std::move(shapes[i]), dtypes[i]);
    auto& record = detail::record(out.desc_);
    record.set_shared_node(node);
    record.position = static_cast<uint32_t>(i);
    out.desc_->is_tracer = is_tracer;
    node->outputs.emplace_back(out.desc_);
    outputs.push_back(std::move(out));
  }
  return outputs;
}

void array::check_init_size(size_t n) const {
  if (n != size()) {
    throw_invalid("[array] Data size " + std::to_string(n) + " does not match the size " + std::to_string(size()) +
                  " of shape " + shape_string(shape()) + ".");
  }
}

void array::allocate_row_contiguous() { set_data(allocator::malloc(nbytes())); }

int array::shape(int axis) const {
  return desc_->shape[normalize_axis(axis, ndim(), "shape", ErrorKind::out_of_range)];
}
int64_t array::strides(int axis) const {
  return desc_->strides[normalize_axis(axis, ndim(), "strides", ErrorKind::out_of_range)];
}

void array::eval() { nuvec::eval({*this}); }

void* array::checked_data() const {
  switch (status()) {
    case Status::available:
      return raw_data();
    case Status::failed:
      std::rethrow_exception(detail::record(desc_).error);
    case Status::unscheduled:
    case Status::scheduled:
      break;
  }
  throw_invalid("[data] The array has not been evaluated: call eval() first.");
}

array array::iterator::operator*() const {
  if (arr_->ndim() == 0) {
    throw_invalid("[array::iterator] Cannot iterate over a 0-d array.");
  }
  Shape start(arr_->ndim(), 0);
  Shape stop = arr_->shape();
  start[0] = index_;
  stop[0] = index_ + 1;
  return squeeze(slice(*arr_, start, stop), 0);
}

const Primitive& array::primitive() const {
  if (!desc_->node) {
    throw_internal("[array::primitive] The array has no primitive.");
  }
  return desc_->node->primitive;
}

Stream array::stream() const { return desc_->node ? desc_->node->stream : default_stream(default_device()); }

const std::vector<array>& array::inputs() const {
  static const std::vector<array> none;
  return desc_->node ? desc_->node->inputs : none;
}

std::vector<array> array::outputs() const {
  std::vector<array> result;
  detail::outputs_into(*this, result);
  return result;
}

void detail::outputs_into(const array& a, std::vector<array>& into) {
  into.clear();
  const auto* node = a.desc_->node;
  if (!node || node->outputs.empty()) {
    into.push_back(a);
    return;
  }
  into.reserve(node->outputs.size());
  for (size_t i = 0; i < node->outputs.size(); ++i) {
    auto desc = node->outputs[i].lock();
    // A dropped sibling becomes a stand-in of its shape and dtype, written and then freed.
    into.push_back(desc ? array(std::move(desc)) : array(node->output_shapes[i], node->output_dtypes[i]));
  }
}

std::vector<array> array::siblings() const {
  std::vector<array> result;
  if (!desc_->node) {
    return result;
  }
  for (size_t i = 0; i < desc_->node->outputs.size(); ++i) {
    if (i == detail::record(desc_).position) {
      continue;
    }
    if (auto desc = desc_->node->outputs[i].lock()) {
      result.push_back(array(std::move(desc)));
    }
  }
  return result;
}

std::exception_ptr array::error() const { return status() == Status::failed ? detail::record(desc_).error : nullptr; }

void array::detach() {
  if (!desc_->node) {
    return;
  }
  auto& record = detail::record(desc_);
  if (record.own_node) {
    record.reset_node();
    return;
  }
  auto node = std::move(record.shared_node);
  record.reset_node();
  for (auto& weak : node->outputs) {
    if (auto desc = weak.lock()) {
      detail::record(desc).reset_node();
    }
  }
}

void* array::raw_data() const {
  const auto& data = detail::record(desc_).data;
  if (data && data->device.type == Device::gpu) [[unlikely]] {
    auto offset = static_cast<char*>(desc_->data_ptr) - static_cast<char*>(data->buffer.raw_ptr());
    return static_cast<char*>(detail::gpu_host_copy(*data)) + offset;
  }
  return desc_->data_ptr;
}
Device array::data_device() const {
  const auto& data = detail::record(desc_).data;
  return data ? data->device : Device(Device::cpu);
}
allocator::Buffer array::buffer() const {
  const auto& data = detail::record(desc_).data;
  return data ? data->buffer : allocator::Buffer();
}
long array::buffer_use_count() const { return detail::record(desc_).data.use_count(); }
const std::shared_ptr<array::Data>& array::data_shared_ptr() const { return detail::record(desc_).data; }

void array::set_tracer(bool is_tracer) { desc_->is_tracer = is_tracer; }

namespace {

bool has_row_major_strides(const Shape& shape, const Strides& strides) {
  if (strides.size() != shape.size()) {
    return false;
  }
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (strides[i] != expected) {
      return false;
    }
    expected *= shape[i];
  }
  return true;
}

/// Whether a row-major buffer of `shape` is also column-major: when at most one axis has size > 1.
bool is_also_col_major(const Shape& shape) {
  return std::count_if(shape.begin(), shape.end(), [](auto dim) { return dim > 1; }) <= 1 || shape_size(shape) == 0;
}

}  // namespace

void array::set_data(allocator::Buffer buffer, Deleter deleter) {
  // An output keeps the row-major strides it was built with: computing them again would allocate on every eval.
  Strides strides =
      has_row_major_strides(shape(), desc_->strides) ? std::move(desc_->strides) : row_major_strides(shape());
  set_data(buffer, size(), std::move(strides), Flags{}, std::move(deleter));
  desc_->flags.col_contiguous = is_also_col_major(shape());
}

void array::set_data(allocator::Buffer buffer, size_t data_size, Strides strides, Flags flags, Deleter deleter) {
  detail::record(desc_).data = std::make_shared<Data>(buffer, std::move(deleter));
  desc_->data_ptr = buffer.raw_ptr();
  desc_->data_size = data_size;
  desc_->strides = std::move(strides);
  desc_->flags = flags;
  desc_->status.store(Status::available, std::memory_order_release);
}

void array::set_data(std::shared_ptr<Data> data) {
  desc_->data_ptr = data->buffer.raw_ptr();
  detail::record(desc_).data = std::move(data);
  desc_->data_size = size();
  if (!has_row_major_strides(shape(), desc_->strides)) {
    desc_->strides = row_major_strides(shape());
  }
  desc_->flags = Flags{};
  desc_->flags.col_contiguous = is_also_col_major(shape());
  desc_->status.store(Status::available, std::memory_order_release);
}

void array::copy_shared_buffer(const array& other, const Strides& strides, Flags flags, size_t data_size,
                               int64_t offset) {
  detail::record(desc_).data = detail::record(other.desc_).data;
  desc_->data_ptr = static_cast<char*>(other.desc_->data_ptr) + offset * static_cast<int64_t>(other.itemsize());
  desc_->data_size = data_size;
  desc_->strides = strides;
  desc_->flags = flags;
  desc_->status.store(Status::available, std::memory_order_release);
}

void array::copy_shared_buffer(const array& other) {
  copy_shared_buffer(other, other.strides(), other.flags(), other.data_size());
}

void array::move_shared_buffer(array other) {
  detail::record(desc_).data = std::move(detail::record(other.desc_).data);
  desc_->data_ptr = other.desc_->data_ptr;
  desc_->data_size = other.desc_->data_size;
  // A donor of another shape (the size-1 operand of an element-wise op) holds the same dense elements, which
  // this array reads with its own row-major strides.
  desc_->strides = other.desc_->shape == desc_->shape ? other.desc_->strides : row_major_strides(desc_->shape);
  desc_->flags = other.desc_->flags;
  desc_->status.store(Status::available, std::memory_order_release);
}

void array::set_failed(std::exception_ptr err) {
  detail::record(desc_).error = std::move(err);
  desc_->status.store(Status::failed, std::memory_order_release);
}

void array::set_status(Status s) { desc_->status.store(s, std::memory_order_release); }

bool array::is_donatable() const {
  // Only the consuming node holds this array and no view shares its buffer; the buffer is host memory that no GPU
  // holds a copy of (writing it would leave the copy stale). The GPU backend donates by its own rule.
  const auto& data = detail::record(desc_).data;
  return desc_.use_count() == 1 && data && data.use_count() == 1 && data->device.type == Device::cpu &&
         !data->gpu_state;
}

}  // namespace nuvec
