#include "nuvec/io/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "nuvec/core/dtype.h"
#include "nuvec/core/ops.h"
#include "nuvec/io/bytes.h"

namespace nuvec {

namespace {

constexpr std::string_view kLoad = "load";
constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

struct NpyType {
  std::string_view code;  // NumPy's type character and size, without the byte-order character
  Dtype dtype;
};
constexpr NpyType kTypes[] = {{"b1", bool_},   {"u1", uint8},   {"u2", uint16},   {"u4", uint32},   {"u8", uint64},
                              {"i1", int8},    {"i2", int16},   {"i4", int32},    {"i8", int64},    {"f2", float16},
                              {"f4", float32}, {"f8", float64}, {"V2", bfloat16}, {"c8", complex64}};

// A reader for the Python literal NumPy writes as the header: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const io::detail::ByteCursor& cursor) : s_(text), cursor_(cursor) {}

  void space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool accept(char c) {
    space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) {
      fail(std::string("expected '") + c + "'");
    }
  }
  std::string string() {
    space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) {
      fail("expected a string");
    }
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string_view::npos) {
      fail("unterminated string");
    }
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      std::string_view w(word);
      if (s_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  Shape shape() {
    expect('(');
    Shape out;
    while (!accept(')')) {
      space();
      uint64_t v = 0;
      size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        v = v * 10 + static_cast<uint64_t>(s_[pos_++] - '0');
        if (v > static_cast<uint64_t>(INT32_MAX)) {
          fail("shape entry larger than 2^31 - 1");
        }
      }
      if (pos_ == start) {
        fail("expected a non-negative integer in the shape");
      }
      accept('L');  // Python 2 long literals in old files
      out.push_back(static_cast<int32_t>(v));
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& why) const {
    cursor_.fail("invalid header (" + why + " at character " + std::to_string(pos_) + "): " + std::string(s_));
  }
  [[nodiscard]] bool at_end() {
    space();
    return pos_ == s_.size();
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  const io::detail::ByteCursor& cursor_;
};

}  // namespace

namespace io {

array load_npy(const std::shared_ptr<const Blob>& blob, size_t offset, size_t size, std::string_view op) {
  detail::ByteCursor in(blob->data() + offset, size, op, blob->label());
  const unsigned char* magic = in.take(6, "the magic string");
  if (std::memcmp(magic, kMagic, 6) != 0) {
    in.fail("wrong magic: not a .npy file (it starts with \\x93NUMPY)");
  }
  auto major = in.read<uint8_t>("the format version");
  in.read<uint8_t>("the format version");
  size_t header_size = 0;
  if (major == 1) {
    header_size = in.read<uint16_t>("the header length");
  } else if (major == 2 || major == 3) {
    header_size = in.read<uint32_t>("the header length");
  } else {
    in.fail("unsupported format version " + std::to_string(major) + " (known: 1, 2, 3)");
  }
  const unsigned char* text = in.take(header_size, "the header");
  HeaderParser p(std::string_view(reinterpret_cast<const char*>(text), header_size), in);
  std::string descr;
  bool fortran = false;
  Shape shape;
  int seen = 0;
  p.expect('{');
  while (!p.accept('}')) {
    std::string key = p.string();
    p.expect(':');
    if (key == "descr") {
      descr = p.string();
      seen |= 1;
    } else if (key == "fortran_order") {
      fortran = p.boolean();
      seen |= 2;
    } else if (key == "shape") {
      shape = p.shape();
      seen |= 4;
    } else {
      p.fail("unexpected key '" + key + "'");
    }
    if (!p.accept(',')) {
      p.expect('}');
      break;
    }
  }
  if (seen != 7) {
    p.fail("the header needs 'descr', 'fortran_order' and 'shape'");
  }
  if (!p.at_end()) {
    p.fail("text after the header dictionary");
  }
  if (descr.size() < 2) {
    in.fail("unsupported dtype descr '" + descr + "'");
  }
  char order = descr[0];
  std::string_view code = std::string_view(descr).substr(1);
  const NpyType* type = nullptr;
  for (const auto& t : kTypes) {
    if (t.code == code) {
      type = &t;
    }
  }
  if (type == nullptr || (order != '<' && order != '>' && order != '|' && order != '=')) {
    in.fail("unsupported dtype descr '" + descr + "'");
  }
  bool big = order == '>' || (order == '=' && std::endian::native == std::endian::big);
  size_t count = 1;
  for (int d : shape) {
    count = detail::checked_mul(count, static_cast<size_t>(d), in, "the element count");
  }
  if (!detail::strides_fit(shape)) {
    in.fail("shape " + shape_string(shape) + " overflows");
  }
  size_t bytes = detail::checked_mul(count, size_of(type->dtype), in, "the data size");
  if (in.remaining() < bytes) {
    in.fail("truncated data: shape " + shape_string(shape) + " of " + descr + " needs " + std::to_string(bytes) +
            " bytes, the file has " + std::to_string(in.remaining()));
  }
  Shape stored = shape;
  if (fortran) {
    std::reverse(stored.begin(), stored.end());
  }
  size_t data_offset = offset + in.position();
  array out = big && size_of(type->dtype) > 1 ? detail::allocate(stored, type->dtype)
                                              : detail::adopt(blob, data_offset, stored, type->dtype);
  if (big && size_of(type->dtype) > 1 && bytes > 0) {
    std::memcpy(out.raw_data(), blob->data() + data_offset, bytes);
    size_t width = type->dtype == complex64 ? 4 : size_of(type->dtype);
    detail::byteswap_elements(out.raw_data(), bytes / width, width);
  }
  return fortran ? transpose(out) : out;
}

array load_npy(const std::shared_ptr<const Blob>& blob) { return load_npy(blob, 0, blob->size(), kLoad); }

std::vector<unsigned char> npy_bytes(const array& a, NpyOptions options) {
  std::string_view code;
  for (const auto& t : kTypes) {
    if (t.dtype == a.dtype()) {
      code = t.code;
    }
  }
  char order = size_of(a.dtype()) == 1 ? '|' : options.big_endian ? '>' : '<';
  std::string header = "{'descr': '" + std::string(1, order) + std::string(code) +
                       "', 'fortran_order': " + (options.fortran_order ? "True" : "False") + ", 'shape': (";
  for (int i = 0; i < a.ndim(); ++i) {
    header += std::to_string(a.shape(i)) + (a.ndim() == 1 ? "," : i + 1 < a.ndim() ? ", " : "");
  }
  header += "), }";
  // Version 1.0 while the header length fits 16 bits; the whole preamble is padded to a multiple of 64.
  bool v2 = header.size() + 1 + 10 > 65535;
  size_t preamble = v2 ? 12 : 10;
  while ((preamble + header.size() + 1) % 64 != 0) {
    header += ' ';
  }
  header += '\n';
  std::vector<unsigned char> out(kMagic, kMagic + 6);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  uint32_t n = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) {
    out.push_back(static_cast<unsigned char>((n >> (8 * i)) & 0xFF));
  }
  out.insert(out.end(), header.begin(), header.end());
  auto data = detail::contiguous_bytes(options.fortran_order && a.ndim() > 1 ? transpose(a) : a);
  if (options.big_endian) {
    size_t width = a.dtype() == complex64 ? 4 : size_of(a.dtype());
    detail::byteswap_elements(data.data(), data.size() / width, width);
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void save_npy(const std::string& path, const array& a, NpyOptions options) {
  auto bytes = npy_bytes(a, options);
  FileWriter(path).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace io

array load(std::string file, StreamOrDevice) { return io::load_npy(io::map_file(file, kLoad)); }

array load(std::shared_ptr<io::Reader> in_stream, StreamOrDevice) {
  return io::load_npy(io::read_all(*in_stream, kLoad));
}

void save(std::shared_ptr<io::Writer> out_stream, array a) {
  auto bytes = io::npy_bytes(a);
  out_stream->write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void save(std::string file, array a) {
  if (file.size() < 4 || file.substr(file.size() - 4) != ".npy") {
    file += ".npy";
  }
  save(std::make_shared<io::FileWriter>(file), std::move(a));
}

}  // namespace nuvec
