#include "tests/support/reference.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace nuvec::test {

Dtype dtype_from_name(const std::string& name) {
  for (auto dtype : all_dtypes) {
    if (dtype_name(dtype) == name) {
      return dtype;
    }
  }
  throw std::invalid_argument("unknown dtype " + name);
}

HostArray to_host(const array& a) {
  auto c = contiguous(a);
  c.eval();
  HostArray h;
  h.dtype = std::string(dtype_name(a.dtype()));
  h.shape.assign(a.shape().begin(), a.shape().end());
  h.bytes.resize(a.nbytes());
  if (a.nbytes() > 0) {
    std::memcpy(h.bytes.data(), c.data<std::byte>(), a.nbytes());
  }
  return h;
}

array from_host(const HostArray& h) {
  Shape shape(h.shape.begin(), h.shape.end());
  auto dtype = dtype_from_name(h.dtype);
  auto buffer = allocator::malloc(h.bytes.size());
  if (!h.bytes.empty()) {
    std::memcpy(buffer.raw_ptr(), h.bytes.data(), h.bytes.size());
  }
  return array(buffer, shape, dtype);
}

HostArray numpy_ref(const std::string& code, const std::vector<array>& inputs) {
  std::vector<HostArray> hosts;
  hosts.reserve(inputs.size());
  for (const auto& in : inputs) {
    hosts.push_back(to_host(in));
  }
  auto out = numpy(code, hosts);
  if (out.size() != 1) {
    throw std::runtime_error("numpy_ref expects one result from: " + code);
  }
  return out.front();
}

array random_array(const Shape& shape, Dtype dtype, std::mt19937& rng, double low, double high) {
  size_t n = shape_size(shape);
  std::vector<double> values(n);
  if (dtype == bool_) {
    std::bernoulli_distribution dist(0.5);
    for (auto& v : values) {
      v = dist(rng) ? 1.0 : 0.0;
    }
  } else if (is_integer(dtype)) {
    int lo = is_unsigned(dtype) ? 0 : -20;
    std::uniform_int_distribution<int> dist(lo, 20);
    for (auto& v : values) {
      v = dist(rng);
    }
  } else {
    std::uniform_real_distribution<double> dist(low, high);
    for (auto& v : values) {
      v = dist(rng);
    }
  }
  auto out = array(values.begin(), shape, float64);
  if (dtype == complex64) {
    std::vector<complex64_t> cvalues(n);
    std::uniform_real_distribution<float> dist(static_cast<float>(low), static_cast<float>(high));
    for (auto& v : cvalues) {
      v = complex64_t(dist(rng), dist(rng));
    }
    return array(cvalues.begin(), shape, complex64);
  }
  out = astype(out, dtype);
  out.eval();
  return out;
}

Shape random_shape(int ndim, std::mt19937& rng, int max_dim) {
  std::uniform_int_distribution<int> dist(1, max_dim);
  Shape shape(ndim);
  for (auto& d : shape) {
    d = dist(rng);
  }
  return shape;
}

double default_rtol(Dtype dtype) {
  if (dtype == float16) {
    return 2e-3;
  }
  if (dtype == bfloat16) {
    return 1.6e-2;
  }
  if (dtype == float64) {
    return 1e-12;
  }
  return 2e-6;
}

::testing::AssertionResult matches(const array& actual, const HostArray& expected, double rtol, double atol,
                                   bool check_dtype) {
  auto got = to_host(actual);
  if (got.shape != expected.shape) {
    std::ostringstream os;
    os << "shape " << shape_string(actual.shape()) << " differs from the reference's (";
    for (size_t i = 0; i < expected.shape.size(); ++i) {
      os << (i ? "," : "") << expected.shape[i];
    }
    os << ")";
    return ::testing::AssertionFailure() << os.str();
  }
  if (check_dtype && got.dtype != expected.dtype) {
    return ::testing::AssertionFailure() << "dtype " << got.dtype << " differs from the reference's " << expected.dtype;
  }
  auto a = as_complex(got);
  auto b = as_complex(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    for (auto [x, y] : {std::pair{a[i].real(), b[i].real()}, std::pair{a[i].imag(), b[i].imag()}}) {
      bool both_nan = std::isnan(x) && std::isnan(y);
      bool same_inf = std::isinf(x) && std::isinf(y) && (x > 0) == (y > 0);
      if (both_nan || same_inf || x == y) {
        continue;
      }
      if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) {
        return ::testing::AssertionFailure() << "element " << i << " of " << a.size() << ": got " << a[i]
                                             << ", NumPy gives " << b[i] << " (dtype " << got.dtype << ")";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

namespace {

/// The program's folder in the temporary directory, removed at exit by the process that made it (a forked child that
/// exits leaves it to its parent).
class TempFolder {
 public:
  TempFolder()
      : owner_(::getpid()), path_(std::filesystem::temp_directory_path() / ("nuvec_test_" + std::to_string(owner_))) {
    std::filesystem::create_directories(path_);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() {
    if (::getpid() == owner_) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  pid_t owner_;
  std::filesystem::path path_;
};

}  // namespace

std::string temp_path(const std::string& name) {
  static const TempFolder folder;
  return (folder.path() / name).string();
}

}  // namespace nuvec::test
