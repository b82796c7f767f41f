// Crafted exported files: a real export whose bytes are edited where one node's parameters or arguments are written
// (trace_io.h lays them out), then given a correct checksum again (FNV-1a, written out here from its definition),
// so only import_function's check of each node stands between the file and the kernels. Each edit must give a
// std::invalid_argument naming the node's primitive, never a crash.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

constexpr size_t trace_start = 8 + 4 + 1 + 4 + 8;  // magic, version, shapeless flag, trace count, empty metadata

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("nuvec_node_check_" + std::to_string(getpid()) + "_" + name))
      .string();
}

std::string exported(const std::string& name, const std::function<V(const Args&)>& fun, const Args& inputs) {
  const std::string path = temp_path(name);
  export_function(path, fun, inputs);
  std::ifstream f(path, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::filesystem::remove(path);
  return bytes;
}

uint64_t fnv1a(const std::string& data) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : data) {
    h = (h ^ c) * 1099511628211ULL;
  }
  return h;
}

template <class T>
T read_at(const std::string& bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}
template <class T>
void write_at(std::string& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

/// The first trace's content rewritten by `edit`, with its length and checksum made right again.
std::string edit_trace(const std::string& bytes, const std::function<void(std::string&)>& edit) {
  const auto length = read_at<uint64_t>(bytes, trace_start);
  std::string content = bytes.substr(trace_start + 8, length);
  edit(content);
  std::string out = bytes.substr(0, trace_start);
  out.append(8, '\0');
  write_at<uint64_t>(out, trace_start, content.size());
  out += content;
  out.append(8, '\0');
  write_at<uint64_t>(out, out.size() - 8, fnv1a(content));
  out += bytes.substr(trace_start + 8 + length + 8);
  return out;
}

/// Where the parameters of the first node of primitive `name` begin (after its name, a u64 length and the bytes).
size_t parameters_of(const std::string& content, const std::string& name) {
  std::string key(8, '\0');
  write_at<uint64_t>(key, 0, name.size());
  key += name;
  const size_t at = content.find(key);
  EXPECT_NE(at, std::string::npos) << name;
  return at + key.size();
}

/// The message of the std::invalid_argument that importing `bytes` throws.
std::string import_error(const std::string& bytes) {
  const std::string path = temp_path("crafted.nuvecfn");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string message = "(no error)";
  try {
    auto fn = import_function(path);
  } catch (const std::invalid_argument& e) {
    message = e.what();
  } catch (const std::exception& e) {
    message = std::string("(another exception) ") + e.what();
  }
  std::filesystem::remove(path);
  return message;
}

TEST(ExportNodeCheck, UneditedFilesImport) {
  const auto bytes = exported("plain.nuvecfn",
                              [](const Args& a) {
                                return V{transpose(a[0], {1, 0}) + 1.0F};
                              },
                              {ones({2, 3})});
  EXPECT_EQ(import_error(edit_trace(bytes, [](std::string&) {})), "(no error)");
}

TEST(ExportNodeCheck, AnAxisOutOfRange) {
  const auto bytes = exported("axis.nuvecfn", [](const Args& a) { return V{transpose(a[0], {1, 0})}; }, {ones({2, 3})});
  // Transpose's axes: a u64 count, then int32 values; the first becomes 5 of a 2-d input.
  const auto message = import_error(edit_trace(bytes, [](std::string& c) {
    const size_t at = parameters_of(c, "Transpose");
    ASSERT_EQ(read_at<uint64_t>(c, at), 2U);
    write_at<int32_t>(c, at + 8, 5);
  }));
  EXPECT_EQ(message.rfind("[import_function] Node ", 0), 0U) << message;
  EXPECT_NE(message.find("(Transpose) does not fit its inputs: axis 5 is out of range for an input of shape (2,3)."),
            std::string::npos)
      << message;
  // A sum over an axis the input lacks.
  const auto sum_bytes = exported("sum.nuvecfn", [](const Args& a) { return V{sum(a[0], 1, true)}; }, {ones({2, 3})});
  const auto sum_message = import_error(edit_trace(sum_bytes, [](std::string& c) {
    // Reduce: the type (its enum's bytes), then the axes (u64 count, int32 values), then the dtype.
    const size_t at = parameters_of(c, "Reduce") + sizeof(ReduceType);
    ASSERT_EQ(read_at<uint64_t>(c, at), 1U);
    write_at<int32_t>(c, at + 8, -4);
  }));
  EXPECT_NE(sum_message.find("(Reduce) does not fit its inputs: axis -4 is out of range"), std::string::npos)
      << sum_message;
}

TEST(ExportNodeCheck, ANegativeSize) {
  const auto bytes = exported("reshape.nuvecfn",
                              [](const Args& a) {
                                return V{reshape(a[0], {3, 2})};
                              },
                              {ones({2, 3})});
  const auto message = import_error(edit_trace(bytes, [](std::string& c) {
    const size_t at = parameters_of(c, "Reshape");
    ASSERT_EQ(read_at<uint64_t>(c, at), 2U);
    write_at<int32_t>(c, at + 8, -3);
  }));
  EXPECT_NE(message.find("(Reshape) does not fit its inputs: its shape (-3,2) has a negative size."), std::string::npos)
      << message;
  // A slice that starts past the end of its input.
  const auto slice_bytes = exported("slice.nuvecfn",
                                    [](const Args& a) {
                                      return V{slice(a[0], {0, 1}, {2, 3})};
                                    },
                                    {ones({2, 3})});
  const auto slice_message = import_error(edit_trace(slice_bytes, [](std::string& c) {
    // Slice: start, strides, shape, each a u64 count and int32 values.
    const size_t at = parameters_of(c, "Slice");
    write_at<int32_t>(c, at + 8 + 4, 7);
  }));
  EXPECT_NE(slice_message.find("(Slice) does not fit its inputs: its window on axis 1"), std::string::npos)
      << slice_message;
}

TEST(ExportNodeCheck, AWrongInputCount) {
  const auto bytes =
      exported("add.nuvecfn", [](const Args& a) { return V{a[0] * a[1]}; }, {ones({2, 3}), ones({2, 3})});
  // Multiply has no parameters: its argument list (u64 count, int32 values) follows its name. Drop the second.
  const auto message = import_error(edit_trace(bytes, [](std::string& c) {
    const size_t at = parameters_of(c, "Multiply");
    ASSERT_EQ(read_at<uint64_t>(c, at), 2U);
    write_at<uint64_t>(c, at, 1);
    c.erase(at + 8 + 4, 4);
  }));
  EXPECT_NE(message.find("(Multiply) does not fit its inputs: it takes 2 inputs; the file gives 1."), std::string::npos)
      << message;
}

TEST(ExportNodeCheck, ARecordedOutputTheRulesDoNotGive) {
  // The parameters agree with the input, but the output recorded is not what they give.
  const auto bytes = exported("sort.nuvecfn", [](const Args& a) { return V{sort(a[0], 1)}; }, {ones({2, 3})});
  const auto message = import_error(edit_trace(bytes, [](std::string& c) {
    const size_t at = parameters_of(c, "Sort");
    write_at<int32_t>(c, at, 0);  // sort along axis 0 keeps the shape: accepted
  }));
  EXPECT_EQ(message, "(no error)");
  const auto cast_bytes =
      exported("astype.nuvecfn", [](const Args& a) { return V{astype(a[0], int32)}; }, {ones({2, 3})});
  const auto cast_message = import_error(edit_trace(cast_bytes, [](std::string& c) {
    const size_t at = parameters_of(c, "AsType");
    c[at] = static_cast<char>(static_cast<int>(c[at]) + 1);  // the next dtype (int64) than the value recorded
  }));
  EXPECT_NE(cast_message.find("(AsType) does not fit its inputs: its inputs give an output of shape (2,3) and int64; "
                              "the file records (2,3) and int32."),
            std::string::npos)
      << cast_message;
}

}  // namespace
}  // namespace nuvec
