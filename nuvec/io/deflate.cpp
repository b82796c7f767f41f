#include "nuvec/io/deflate.h"

#include <zlib.h>

#include <algorithm>
#include <string>

#include "nuvec/io/errors.h"

namespace nuvec::io::detail {

namespace {

int window_bits(DeflateFormat format) { return format == DeflateFormat::gzip ? 16 + MAX_WBITS : -MAX_WBITS; }

// zlib counts in uInt: feed and drain in pieces that fit.
constexpr size_t kChunk = size_t{1} << 30;

// Gives zlib the next pieces of input and output, runs `step(last)` (last: this piece ends the input) and counts
// what it consumed and produced.
template <class Step>
int run_piece(z_stream& zs, const unsigned char* src, size_t size, size_t& in_done, std::vector<unsigned char>& out,
              size_t& out_done, Step&& step) {
  size_t in_chunk = std::min(size - in_done, kChunk);
  size_t out_chunk = std::min(out.size() - out_done, kChunk);
  zs.next_in = const_cast<unsigned char*>(src + in_done);
  zs.avail_in = static_cast<uInt>(in_chunk);
  zs.next_out = out.data() + out_done;
  zs.avail_out = static_cast<uInt>(out_chunk);
  int ret = step(in_done + in_chunk == size);
  in_done += in_chunk - zs.avail_in;
  out_done += out_chunk - zs.avail_out;
  return ret;
}

}  // namespace

std::vector<unsigned char> inflate_bytes(const unsigned char* src, size_t size, DeflateFormat format, size_t limit,
                                         std::string_view op, std::string_view label) {
  z_stream zs{};
  if (inflateInit2(&zs, window_bits(format)) != Z_OK) {
    fail(op, label, "cannot start zlib");
  }
  std::vector<unsigned char> out(std::min<size_t>(std::max<size_t>(size * 4, 4096), limit));
  size_t in_done = 0;
  size_t out_done = 0;
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    if (out_done == out.size()) {
      if (out.size() >= limit) {
        inflateEnd(&zs);
        fail(op, label, "compressed data expands past " + std::to_string(limit) + " bytes");
      }
      out.resize(std::min(limit, out.size() * 2));
    }
    ret = run_piece(zs, src, size, in_done, out, out_done, [&](bool) { return inflate(&zs, Z_NO_FLUSH); });
    if (ret == Z_BUF_ERROR && in_done == size && zs.avail_out != 0) {
      inflateEnd(&zs);
      fail(op, label, "truncated compressed data");
    }
    if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
      std::string why = zs.msg != nullptr ? zs.msg : "error " + std::to_string(ret);
      inflateEnd(&zs);
      fail(op, label, "corrupt compressed data (" + why + ")");
    }
  }
  inflateEnd(&zs);
  out.resize(out_done);
  return out;
}

std::vector<unsigned char> deflate_bytes(const unsigned char* src, size_t size, DeflateFormat format,
                                         std::string_view op, std::string_view label) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits(format), 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    fail(op, label, "cannot start zlib");
  }
  std::vector<unsigned char> out(deflateBound(&zs, static_cast<uLong>(std::min(size, kChunk))) + 64);
  size_t in_done = 0;
  size_t out_done = 0;
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    if (out.size() - out_done < 4096) {
      out.resize(out.size() * 2);
    }
    ret = run_piece(zs, src, size, in_done, out, out_done,
                    [&](bool last) { return deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH); });
    if (ret == Z_STREAM_ERROR) {
      deflateEnd(&zs);
      fail(op, label, "zlib failed to compress");
    }
  }
  deflateEnd(&zs);
  out.resize(out_done);
  return out;
}

}  // namespace nuvec::io::detail
