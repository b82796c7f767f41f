#include "tests/support/numpy_oracle.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX leaves it undeclared

namespace nuvec::test {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// Element types and the one dtype dispatch
// ---------------------------------------------------------------------------------------------------------------

/// Storage of the two 16-bit float formats, kept as bits: C++20 has neither type.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
static_assert(sizeof(bool) == 1 && sizeof(Float16) == 2 && sizeof(BFloat16) == 2 &&
              sizeof(std::complex<float>) == 8);

/// Calls `f(std::type_identity<T>{})` with the storage type of a dtype name; the closed set lives here only.
template <class F>
decltype(auto) dispatch(std::string_view dtype, F&& f) {
  using std::type_identity;
  if (dtype == "bool") return f(type_identity<bool>{});
  if (dtype == "uint8") return f(type_identity<uint8_t>{});
  if (dtype == "uint16") return f(type_identity<uint16_t>{});
  if (dtype == "uint32") return f(type_identity<uint32_t>{});
  if (dtype == "uint64") return f(type_identity<uint64_t>{});
  if (dtype == "int8") return f(type_identity<int8_t>{});
  if (dtype == "int16") return f(type_identity<int16_t>{});
  if (dtype == "int32") return f(type_identity<int32_t>{});
  if (dtype == "int64") return f(type_identity<int64_t>{});
  if (dtype == "float16") return f(type_identity<Float16>{});
  if (dtype == "float32") return f(type_identity<float>{});
  if (dtype == "float64") return f(type_identity<double>{});
  if (dtype == "bfloat16") return f(type_identity<BFloat16>{});
  if (dtype == "complex64") return f(type_identity<std::complex<float>>{});
  throw std::invalid_argument("[numpy oracle] unknown dtype '" + std::string(dtype) +
                              "'; expected one of bool, uint8, uint16, uint32, uint64, int8, int16, int32, int64, "
                              "float16, float32, float64, bfloat16, complex64");
}

template <class T>
constexpr bool is_complex_v = std::is_same_v<T, std::complex<float>>;

/// Rounds `v` to nearest even in a binary format with `exp_bits` exponent and `mant_bits` fraction bits.
uint16_t round_to_small_float(double v, int exp_bits, int mant_bits) {
  const uint32_t sign = std::signbit(v) ? 1U << (exp_bits + mant_bits) : 0U;
  const uint32_t inf_bits = ((1U << exp_bits) - 1) << mant_bits;
  if (std::isnan(v)) return static_cast<uint16_t>(sign | inf_bits | (1U << (mant_bits - 1)));
  const double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | inf_bits);
  if (a == 0.0) return static_cast<uint16_t>(sign);
  const int bias = (1 << (exp_bits - 1)) - 1;
  int frexp_exp = 0;
  std::frexp(a, &frexp_exp);
  // Scale so one unit is one step of the target at this exponent (subnormals share the smallest normal's step);
  // scaling by a power of two is exact, so nearbyint does the only rounding. A carry into the exponent field, and
  // past it into infinity, falls out of the addition.
  const int exponent = std::max(frexp_exp - 1, 1 - bias);
  const double steps = std::nearbyint(std::ldexp(a, mant_bits - exponent));
  const double field = static_cast<double>(exponent - (1 - bias)) * std::ldexp(1.0, mant_bits) + steps;
  const uint32_t bits = field >= inf_bits ? inf_bits : static_cast<uint32_t>(field);
  return static_cast<uint16_t>(sign | bits);
}

double float16_to_double(uint16_t bits) {
  const int exp_field = (bits >> 10) & 0x1F;
  const int mant = bits & 0x3FF;
  const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exp_field == 0x1F) return mant != 0 ? std::nan("") : sign * HUGE_VAL;
  if (exp_field == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(mant + 1024, exp_field - 25);
}

double bfloat16_to_double(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f = 0.0F;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

/// Reads element `i` of a storage type as a complex number (real types: zero imaginary part).
template <class T>
std::complex<double> load(const std::byte* data, std::size_t i) {
  T value;
  std::memcpy(&value, data + i * sizeof(T), sizeof(T));
  if constexpr (std::is_same_v<T, Float16>) {
    return float16_to_double(value.bits);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bfloat16_to_double(value.bits);
  } else if constexpr (is_complex_v<T>) {
    return {value.real(), value.imag()};
  } else {
    return static_cast<double>(value);
  }
}

/// Converts one value of a family (int64_t, uint64_t, double, complex<double>) to a storage type.
template <class T, class Wide>
T convert(const Wide& v, const std::string& dtype) {
  if constexpr (std::is_same_v<Wide, std::complex<double>>) {
    if constexpr (is_complex_v<T>) {
      return T(static_cast<float>(v.real()), static_cast<float>(v.imag()));
    } else {
      throw std::invalid_argument("[numpy oracle] host_array: complex values need dtype complex64; got dtype " +
                                  dtype);
    }
  } else if constexpr (is_complex_v<T>) {
    return T(static_cast<float>(v), 0.0F);
  } else if constexpr (std::is_same_v<T, Float16>) {
    return T{round_to_small_float(static_cast<double>(v), 5, 10)};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T{round_to_small_float(static_cast<double>(v), 8, 7)};
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != Wide{0};
  } else if constexpr (std::is_integral_v<T> && std::is_same_v<Wide, double>) {
    // A float that does not fit is undefined behaviour in a cast; say so instead.
    constexpr int bits = 8 * static_cast<int>(sizeof(T));
    const double lo = std::is_signed_v<T> ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double hi = std::ldexp(1.0, std::is_signed_v<T> ? bits - 1 : bits);
    const double t = std::trunc(v);
    if (!(t >= lo && t < hi)) {
      throw std::invalid_argument("[numpy oracle] host_array: value " + std::to_string(v) +
                                  " does not fit dtype " + dtype);
    }
    return static_cast<T>(t);
  } else {
    return static_cast<T>(v);  // integers wrap modulo 2^N as in NumPy's astype
  }
}

template <class Wide>
void store_all(HostArray& array, const Wide* values) {
  dispatch(array.dtype, [&]<class T>(std::type_identity<T>) {
    const std::size_t n = array.bytes.size() / sizeof(T);
    for (std::size_t i = 0; i < n; ++i) {
      const T value = convert<T>(values[i], array.dtype);
      std::memcpy(array.bytes.data() + i * sizeof(T), &value, sizeof(T));
    }
  });
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// Checks that the bytes match dtype and shape, so a bad input never reaches the child half-sent.
void check_array(const HostArray& array, const std::string& what) {
  const std::size_t size = dtype_size(array.dtype);
  for (int64_t d : array.shape) {
    if (d < 0) throw std::invalid_argument("[numpy oracle] " + what + " has a negative dimension in shape " +
                                           shape_text(array.shape));
  }
  const auto expected = static_cast<std::size_t>(element_count(array.shape)) * size;
  if (array.bytes.size() != expected) {
    throw std::invalid_argument("[numpy oracle] " + what + " (" + array.dtype + ", shape " +
                                shape_text(array.shape) + ") needs " + std::to_string(expected) +
                                " bytes; has " + std::to_string(array.bytes.size()));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The child process and its pipes
// ---------------------------------------------------------------------------------------------------------------

constexpr const char* python_path = "/usr/bin/python3";
constexpr const char* python_packages = "/usr/lib/python3/dist-packages";
constexpr std::size_t max_header = 4096;
constexpr std::size_t inline_payload = std::size_t{64} << 10;  // smaller inputs ride in one write with the headers

std::filesystem::path script_path() {
#ifdef NUVEC_TEST_SUPPORT_DIR
  return std::filesystem::path(NUVEC_TEST_SUPPORT_DIR) / "numpy_oracle.py";
#else
  return std::filesystem::path(__FILE__).parent_path() / "numpy_oracle.py";
#endif
}

/// Blocks SIGPIPE in this thread while writing to the child, so a dead child gives EPIPE rather than killing the
/// test binary, and swallows the SIGPIPE such a write leaves pending.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_set_);
    sigaddset(&pipe_set_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_mask_);
  }
  ~SigpipeGuard() {
    if (saw_epipe_ && !was_pending_) {
      const timespec zero{};
      while (sigtimedwait(&pipe_set_, nullptr, &zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;
  void saw_epipe() { saw_epipe_ = true; }

 private:
  sigset_t pipe_set_{};
  sigset_t old_mask_{};
  bool was_pending_ = false;
  bool saw_epipe_ = false;
};

/// Moves a descriptor above 0..2 so the child's dup2 onto stdin/stdout cannot clobber it.
int above_stdio(int fd) {
  if (fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int saved = errno;
  close(fd);
  errno = saved;
  return moved;
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

std::string status_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  return "stopped with wait status " + std::to_string(status);
}

/// One Python child serving requests in order; every public entry holds the mutex.
class Oracle {
 public:
  Oracle() = default;
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;
  ~Oracle() {
    // Closing stdin asks the child to finish; a forked copy of this process must leave the parent's child alone.
    if (pid_ > 0 && owner_ == getpid()) shut_down();
  }

  std::vector<HostArray> call(const std::string& code, const std::vector<HostArray>& inputs) {
    for (std::size_t i = 0; i < inputs.size(); ++i) check_array(inputs[i], "input " + std::to_string(i));
    const std::lock_guard lock(mutex_);
    if (pid_ > 0 && owner_ != getpid()) forget();  // after fork(): the pipes belong to the parent's requests
    if (pid_ <= 0) start();
    send(code, inputs);
    return receive(code);
  }

 private:
  void start() {
    const std::filesystem::path script = script_path();
    if (access(script.c_str(), R_OK) != 0) {
      throw std::runtime_error("[numpy oracle] cannot read the oracle script " + script.string() +
                               "; define NUVEC_TEST_SUPPORT_DIR as the path of tests/support");
    }
    if (access(python_path, X_OK) != 0) throw std::runtime_error(errno_text("[numpy oracle] /usr/bin/python3"));

    // Everything the child needs is built before fork(): between fork and exec only async-signal-safe calls.
    std::vector<std::string> env;
    bool has_openblas = false;
    bool has_omp = false;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      if (entry.starts_with("PYTHONPATH=") || entry.starts_with("PYTHONHOME=")) continue;
      has_openblas = has_openblas || entry.starts_with("OPENBLAS_NUM_THREADS=");
      has_omp = has_omp || entry.starts_with("OMP_NUM_THREADS=");
      env.emplace_back(entry);
    }
    env.push_back(std::string("PYTHONPATH=") + python_packages);
    // One BLAS thread: references stay deterministic and parallel test binaries do not oversubscribe the cores.
    if (!has_openblas) env.emplace_back("OPENBLAS_NUM_THREADS=1");
    if (!has_omp) env.emplace_back("OMP_NUM_THREADS=1");
    std::vector<char*> envp;
    envp.reserve(env.size() + 1);
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string arg0 = python_path;
    std::string arg1 = "-s";  // no user site-packages
    std::string arg2 = script.string();
    char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};

    int to_child[2];
    int from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0) throw std::runtime_error(errno_text("[numpy oracle] pipe2"));
    if (pipe2(from_child, O_CLOEXEC) != 0) {
      const std::string message = errno_text("[numpy oracle] pipe2");
      close(to_child[0]);
      close(to_child[1]);
      throw std::runtime_error(message);
    }
    for (int* fd : {&to_child[0], &to_child[1], &from_child[0], &from_child[1]}) *fd = above_stdio(*fd);
    sigset_t empty;
    sigemptyset(&empty);

    const pid_t pid = fork();
    if (pid == 0) {
      // The CLOEXEC pipe ends close on exec; dup2 gives fresh descriptors without the flag.
      if (dup2(to_child[0], 0) < 0 || dup2(from_child[1], 1) < 0) _exit(126);
      sigprocmask(SIG_SETMASK, &empty, nullptr);
      execve(python_path, argv, envp.data());
      _exit(127);
    }
    const int fork_errno = errno;
    close(to_child[0]);
    close(from_child[1]);
    if (pid < 0) {
      close(to_child[1]);
      close(from_child[0]);
      errno = fork_errno;
      throw std::runtime_error(errno_text("[numpy oracle] fork"));
    }
    pid_ = pid;
    owner_ = getpid();
    to_child_ = to_child[1];
    from_child_ = from_child[0];
    begin_ = end_ = 0;

    const std::string greeting = read_line("starting the Python child");
    if (!greeting.starts_with("NUVEC-ORACLE 1 ")) {
      fail("starting the Python child", "unexpected greeting '" + greeting + "'");
    }
  }

  void send(const std::string& code, const std::vector<HostArray>& inputs) {
    SigpipeGuard guard;
    std::string pending = "CALL " + std::to_string(inputs.size()) + " " + std::to_string(code.size()) + "\n" + code;
    for (const HostArray& input : inputs) {
      pending += input.dtype + " " + std::to_string(input.shape.size()) + " ";
      for (int64_t d : input.shape) pending += std::to_string(d) + " ";
      pending += std::to_string(input.bytes.size()) + "\n";
      if (input.bytes.size() <= inline_payload) {
        pending.append(reinterpret_cast<const char*>(input.bytes.data()), input.bytes.size());
      } else {
        write_all(pending.data(), pending.size(), guard, code);
        pending.clear();
        write_all(input.bytes.data(), input.bytes.size(), guard, code);
      }
    }
    write_all(pending.data(), pending.size(), guard, code);
  }

  std::vector<HostArray> receive(const std::string& code) {
    const std::string context = "evaluating `" + code + "`";
    const std::vector<std::string> fields = split(read_line(context));
    if (fields.size() == 2 && fields[0] == "ERROR") {
      std::string text(parse_count(fields[1], context), '\0');
      read_exact(text.data(), text.size(), context);
      throw std::runtime_error("[numpy oracle] Python raised while evaluating `" + code + "`:\n" + text);
    }
    if (fields.size() != 2 || fields[0] != "OK") fail(context, "unexpected answer header");
    std::vector<HostArray> outputs(parse_count(fields[1], context));
    for (HostArray& out : outputs) {
      const std::vector<std::string> header = split(read_line(context));
      if (header.size() < 3 || header.size() != parse_count(header[1], context) + 3) {
        fail(context, "malformed array header");
      }
      out.dtype = header[0];
      for (std::size_t d = 2; d + 1 < header.size(); ++d) {
        out.shape.push_back(static_cast<int64_t>(parse_count(header[d], context)));
      }
      out.bytes.resize(parse_count(header.back(), context));
      read_exact(out.bytes.data(), out.bytes.size(), context);
      try {
        check_array(out, "output");
      } catch (const std::invalid_argument& e) {
        fail(context, e.what());
      }
    }
    return outputs;
  }

  void write_all(const void* data, std::size_t size, SigpipeGuard& guard, const std::string& code) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = write(to_child_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        if (errno == EPIPE) guard.saw_epipe();
        fail("sending `" + code + "`", errno_text("write"));
      }
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  /// Reads up to `size` bytes from the child; 0 means it closed its end.
  std::size_t read_some(char* dst, std::size_t size, const std::string& context) {
    while (true) {
      const ssize_t n = read(from_child_, dst, size);
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno != EINTR) fail(context, errno_text("read"));
    }
  }

  std::string read_line(const std::string& context) {
    std::string line;
    while (true) {
      const auto* begin = buffer_.data() + begin_;
      const auto* newline = static_cast<const char*>(std::memchr(begin, '\n', end_ - begin_));
      const std::size_t take = newline != nullptr ? static_cast<std::size_t>(newline - begin) : end_ - begin_;
      line.append(begin, take);
      begin_ += take;
      if (newline != nullptr) {
        ++begin_;
        return line;
      }
      if (line.size() > max_header) fail(context, "header line too long");
      begin_ = 0;
      end_ = read_some(buffer_.data(), buffer_.size(), context);
      if (end_ == 0) fail(context, "");
    }
  }

  void read_exact(void* data, std::size_t size, const std::string& context) {
    auto* dst = static_cast<char*>(data);
    const std::size_t buffered = std::min(size, end_ - begin_);
    if (buffered > 0) std::memcpy(dst, buffer_.data() + begin_, buffered);
    begin_ += buffered;
    for (std::size_t got = buffered; got < size;) {
      const std::size_t n = read_some(dst + got, size - got, context);  // large payloads skip the buffer
      if (n == 0) fail(context, "");
      got += n;
    }
  }

  static std::vector<std::string> split(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string field; in >> field;) fields.push_back(field);
    return fields;
  }

  std::size_t parse_count(const std::string& text, const std::string& context) {
    std::size_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) fail(context, "bad number '" + text + "'");
    return value;
  }

  /// Ends the child after a broken exchange (its state is unknown) and throws; the next call starts a new one.
  [[noreturn]] void fail(const std::string& context, const std::string& problem) {
    const pid_t pid = pid_;
    const int status = shut_down();
    std::string message = "[numpy oracle] the Python child (pid " + std::to_string(pid) + ") " + status_text(status) +
                          " while " + context;
    if (!problem.empty()) message += " (" + problem + ")";
    throw std::runtime_error(message + "; its stderr above tells more");
  }

  /// Closes the pipes and reaps the child, killing it if it does not exit promptly; returns its wait status.
  int shut_down() {
    close(to_child_);
    close(from_child_);
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 200 && done == 0; ++i) {  // EOF on stdin ends a healthy child at once
      done = waitpid(pid_, &status, WNOHANG);
      if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    forget();
    return status;
  }

  void forget() {
    if (owner_ != getpid()) {  // a forked copy: drop our duplicates of the parent's pipes only
      close(to_child_);
      close(from_child_);
    }
    pid_ = -1;
    to_child_ = from_child_ = -1;
    begin_ = end_ = 0;
  }

  std::mutex mutex_;
  pid_t pid_ = -1;
  pid_t owner_ = -1;  // the process that started the child
  int to_child_ = -1;
  int from_child_ = -1;
  std::vector<char> buffer_ = std::vector<char>(std::size_t{64} << 10);
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

Oracle& oracle() {
  static Oracle instance;
  return instance;
}

}  // namespace

std::vector<HostArray> numpy(const std::string& code, const std::vector<HostArray>& inputs) {
  return oracle().call(code, inputs);
}

std::size_t dtype_size(std::string_view dtype) {
  return dispatch(dtype, []<class T>(std::type_identity<T>) { return sizeof(T); });
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

std::vector<double> as_doubles(const HostArray& array) {
  check_array(array, "as_doubles argument");
  return dispatch(array.dtype, [&]<class T>(std::type_identity<T>) {
    std::vector<double> out(array.bytes.size() / sizeof(T));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = load<T>(array.bytes.data(), i).real();
    return out;
  });
}

std::vector<std::complex<double>> as_complex(const HostArray& array) {
  check_array(array, "as_complex argument");
  return dispatch(array.dtype, [&]<class T>(std::type_identity<T>) {
    std::vector<std::complex<double>> out(array.bytes.size() / sizeof(T));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = load<T>(array.bytes.data(), i);
    return out;
  });
}

namespace detail {

HostArray allocate_host_array(std::string dtype, std::vector<int64_t> shape, std::size_t value_count) {
  HostArray array{std::move(dtype), std::move(shape), {}};
  const std::size_t size = dtype_size(array.dtype);
  if (std::any_of(array.shape.begin(), array.shape.end(), [](int64_t d) { return d < 0; }) ||
      static_cast<std::size_t>(element_count(array.shape)) != value_count) {
    throw std::invalid_argument("[numpy oracle] host_array: shape " + shape_text(array.shape) + " needs " +
                                std::to_string(element_count(array.shape)) + " values; got " +
                                std::to_string(value_count));
  }
  array.bytes.resize(value_count * size);
  return array;
}

void store_values(HostArray& array, const int64_t* values) { store_all(array, values); }
void store_values(HostArray& array, const uint64_t* values) { store_all(array, values); }
void store_values(HostArray& array, const double* values) { store_all(array, values); }
void store_values(HostArray& array, const std::complex<double>* values) { store_all(array, values); }

}  // namespace detail
}  // namespace nuvec::test
