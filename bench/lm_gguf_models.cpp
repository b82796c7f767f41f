// nuvec_lm_models: the language models of the llama.cpp comparison (bench/run_lm.py), written as GGUF files in
// llama.cpp's layout, and the memory bandwidth their decoding is judged against.
//
//   nuvec_lm_models write --shape 1b|small --type F16|Q8_0|Q4_0|Q4_K_M --out FILE [--seed S]
//       A random-weight llama model (N(0, 0.02), norms 1) with the tensor names, shapes and metadata keys
//       convert_hf_to_gguf.py writes for Llama and a byte-level BPE vocabulary ("gpt2", tokens and merges) of the
//       model's size. Shapes (BENCHMARKS.md): "1b" is Llama-3.2-1B (dim 2048, 16 layers, 32 heads, 8 KV heads,
//       FFN 8192, vocabulary 128256, RoPE theta 500000 with Llama 3's scaling as the rope_freqs tensor, tied
//       embeddings); "small" has dim 512, 8 layers, 8 heads, 2 KV heads, FFN 1536, vocabulary 32000 and its own
//       output matrix. The weights are random, so the converter's Q/K row permutation is left out.
//       Types, as the converter (F16, Q8_0) and llama-quantize (Q4_0, Q4_K_M) choose them (llama-quant.cpp's
//       llama_tensor_get_type): 1-d tensors stay F32; F16 and Q8_0 store every matrix in that type; Q4_0 stores the
//       output matrix (the token embedding when tied) in Q6_K and the rest in Q4_0; Q4_K_M stores the output
//       matrix (the tied embedding) in Q6_K, attn_v and ffn_down in Q6_K in the layers use_more_bits picks (i < n/8,
//       i >= 7n/8 or (i - n/8) % 3 == 2: half of them) and the rest, a separate token embedding included, in Q4_K.
//       Blocks come from io::quantize_blocks (scales from each block's extremes, no search): the bytes and the
//       work per token are llama-quantize's, the rounding error is not.
//       Memory: every tensor is kept in its final form until io::save_gguf writes them, which copies them once
//       more: about twice the file's size plus one tensor in float32 (measured: 2.6 GB of resident memory for the
//       1B model in Q8_0, 2.3 GB in Q4_0 and Q4_K_M, 7.1 GB in F16 before the allocator's cache was turned off).
//
//   nuvec_lm_models bandwidth [-t THREADS] [--mib N] [-r REPS]
//       Copy and read bandwidth over arrays of N MiB (default 512) on THREADS threads (default 2), the median of
//       REPS (default 5) after a warm-up: "copy_gbs=C read_gbs=R" (copy counts the bytes read and written, as
//       STREAM does; read sums 64-bit words, nothing written).

#include <nuvec/io/gguf.h>
#include <nuvec/io/stream.h>
#include <nuvec/nuvec.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <numbers>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using nuvec::array;
using nuvec::io::GGMLType;
using Metadata = std::unordered_map<std::string, nuvec::GGUFMetaData>;
using Clock = std::chrono::steady_clock;

struct Shape {
  int dim, layers, heads, kv_heads, ffn, vocab;
  double rope_theta;
  bool llama3_rope;  // Llama 3's RoPE scaling (factor 8, low 1, high 4, original context 8192)
  bool tied;         // the output matrix is the token embedding
  int context;
  int specials;  // control tokens at the end of the vocabulary
};

const std::map<std::string, Shape>& shapes() {
  static const std::map<std::string, Shape> all = {
      {"1b", {2048, 16, 32, 8, 8192, 128256, 500000.0, true, true, 131072, 256}},
      {"small", {512, 8, 8, 2, 1536, 32000, 10000.0, false, false, 4096, 3}},
  };
  return all;
}

/// llama.cpp's general.file_type of each type the program writes (llama_ftype).
const std::map<std::string, int>& file_types() {
  static const std::map<std::string, int> all = {{"F16", 1}, {"Q8_0", 7}, {"Q4_0", 2}, {"Q4_K_M", 15}};
  return all;
}

/// GPT-2's printable stand-in for each byte (the byte-level BPE alphabet), as UTF-8.
std::string byte_symbol(int byte) {
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
  int code = byte;
  if (!printable(byte)) {
    code = 256;
    for (int b = 0; b < byte; ++b) {
      code += printable(b) ? 0 : 1;
    }
  }
  std::string utf8;
  if (code < 0x80) {
    utf8 += static_cast<char>(code);
  } else {
    utf8 += static_cast<char>(0xC0 | (code >> 6));
    utf8 += static_cast<char>(0x80 | (code & 0x3F));
  }
  return utf8;
}

/// A byte-level BPE vocabulary of exactly `size` tokens: the 256 byte symbols, the pairs of them, then pairs followed
/// by a third symbol (each a merge of two tokens before it), and `specials` control tokens at the end (Llama 3's
/// names: <|begin_of_text|> is the BOS, <|end_of_text|> the EOS, <|eot_id|> the ninth when there are enough).
Metadata vocabulary(int size, int specials) {
  std::vector<std::string> symbols;
  for (int b = 0; b < 256; ++b) {
    symbols.push_back(byte_symbol(b));
  }
  const int normal = size - specials;
  std::vector<std::string> tokens = symbols;
  std::vector<std::string> merges;
  for (int a = 0; a < 256 && static_cast<int>(tokens.size()) < normal; ++a) {
    for (int b = 0; b < 256 && static_cast<int>(tokens.size()) < normal; ++b) {
      merges.push_back(symbols[a] + " " + symbols[b]);
      tokens.push_back(symbols[a] + symbols[b]);
    }
  }
  for (int ab = 0; ab < 256 * 256 && static_cast<int>(tokens.size()) < normal; ++ab) {
    for (int c = 0; c < 256 && static_cast<int>(tokens.size()) < normal; ++c) {
      const std::string pair = symbols[ab / 256] + symbols[ab % 256];
      merges.push_back(pair + " " + symbols[c]);
      tokens.push_back(pair + symbols[c]);
    }
  }
  std::vector<int32_t> types(tokens.size(), 1);
  for (int s = 0; s < specials; ++s) {
    const std::string name = s == 0   ? "<|begin_of_text|>"
                             : s == 1 ? "<|end_of_text|>"
                             : s == 9 ? "<|eot_id|>"
                                      : "<|reserved_special_token_" + std::to_string(s) + "|>";
    tokens.push_back(name);
    types.push_back(3);
  }
  Metadata m;
  m["tokenizer.ggml.model"] = std::string("gpt2");
  m["tokenizer.ggml.pre"] = std::string("llama-bpe");
  m["tokenizer.ggml.tokens"] = tokens;
  m["tokenizer.ggml.token_type"] = array(types.begin(), {static_cast<int32_t>(types.size())}, nuvec::int32);
  m["tokenizer.ggml.merges"] = merges;
  m["tokenizer.ggml.bos_token_id"] = array(static_cast<uint32_t>(normal));
  m["tokenizer.ggml.eos_token_id"] = array(static_cast<uint32_t>(normal + 1));
  return m;
}

/// The metadata convert_hf_to_gguf.py writes for a Llama model of this shape.
Metadata model_metadata(const Shape& s, const std::string& shape_name, const std::string& type) {
  auto u32 = [](int v) { return array(static_cast<uint32_t>(v)); };
  const int head_dim = s.dim / s.heads;
  Metadata m;
  m["general.architecture"] = std::string("llama");
  m["general.name"] = "nuvec bench " + shape_name + " random";
  m["general.file_type"] = u32(file_types().at(type));
  m["general.quantization_version"] = u32(2);
  m["llama.vocab_size"] = u32(s.vocab);
  m["llama.context_length"] = u32(s.context);
  m["llama.embedding_length"] = u32(s.dim);
  m["llama.block_count"] = u32(s.layers);
  m["llama.feed_forward_length"] = u32(s.ffn);
  m["llama.attention.head_count"] = u32(s.heads);
  m["llama.attention.head_count_kv"] = u32(s.kv_heads);
  m["llama.attention.key_length"] = u32(head_dim);
  m["llama.attention.value_length"] = u32(head_dim);
  m["llama.rope.dimension_count"] = u32(head_dim);
  m["llama.rope.freq_base"] = array(static_cast<float>(s.rope_theta));
  m["llama.attention.layer_norm_rms_epsilon"] = array(1e-5F);
  for (auto& [k, v] : vocabulary(s.vocab, s.specials)) {
    m[k] = v;
  }
  return m;
}

/// Llama 3's rope_freqs: the divisor of each frequency (convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors,
/// with factor 8, low_freq_factor 1, high_freq_factor 4, original context 8192).
array llama3_rope_factors(const Shape& s) {
  const int dim = s.dim / s.heads;
  const double factor = 8;
  const double low = 1;
  const double high = 4;
  const double old_context = 8192;
  std::vector<float> factors;
  for (int i = 0; i < dim; i += 2) {
    const double wavelen = 2 * std::numbers::pi * std::pow(s.rope_theta, static_cast<double>(i) / dim);
    if (wavelen < old_context / high) {
      factors.push_back(1.0F);
    } else if (wavelen > old_context / low) {
      factors.push_back(static_cast<float>(factor));
    } else {
      const double smooth = (old_context / wavelen - low) / (high - low);
      factors.push_back(static_cast<float>(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return array(factors.begin(), {static_cast<int32_t>(factors.size())}, nuvec::float32);
}

bool use_more_bits(int layer, int layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

/// The GGML type of a matrix of the model in a file of `type` (see the file's header).
GGMLType matrix_type(const std::string& type, const std::string& base, int layer, const Shape& s) {
  const bool output = base == "output" || (s.tied && base == "token_embd");
  if (type == "F16") {
    return GGMLType::F16;
  }
  if (type == "Q8_0") {
    return GGMLType::Q8_0;
  }
  if (output) {
    return GGMLType::Q6_K;
  }
  if (type == "Q4_0") {
    return GGMLType::Q4_0;
  }
  if ((base == "attn_v" || base == "ffn_down") && use_more_bits(layer, s.layers)) {
    return GGMLType::Q6_K;
  }
  return GGMLType::Q4_K;
}

int write_model(const std::string& shape_name, const std::string& type, const std::string& path, uint64_t seed) {
  const Shape& s = shapes().at(shape_name);
  nuvec::set_cache_limit(0);  // the float32 draws of one tensor go back to the system before the next one's
  const int head_dim = s.dim / s.heads;
  std::vector<nuvec::io::GGUFTensor> tensors;
  auto key = nuvec::random::key(seed);
  size_t bytes = 0;
  auto matrix = [&](const std::string& base, int layer, int rows, int cols) {
    const std::string name = (layer >= 0 ? "blk." + std::to_string(layer) + "." : std::string()) + base + ".weight";
    auto [next, use] = nuvec::random::split(key);
    key = next;
    const GGMLType t = matrix_type(type, base, layer, s);
    array w = nuvec::random::normal({rows, cols}, nuvec::float32, 0.0F, 0.02F, use);
    array data = t == GGMLType::F16 ? nuvec::astype(w, nuvec::float16) : nuvec::io::quantize_blocks(w, t);
    data.eval();
    bytes += data.nbytes();
    tensors.push_back({name, t, {rows, cols}, data});
  };
  auto norm = [&](const std::string& base, int layer) {
    const std::string name = (layer >= 0 ? "blk." + std::to_string(layer) + "." : std::string()) + base + ".weight";
    array ones = nuvec::ones({s.dim}, nuvec::float32);
    ones.eval();
    tensors.push_back({name, GGMLType::F32, {s.dim}, ones});
  };
  // The converter's order: embedding, blocks, final norm and output; rope_freqs first for Llama 3.
  if (s.llama3_rope) {
    array factors = llama3_rope_factors(s);
    factors.eval();
    tensors.push_back({"rope_freqs.weight", GGMLType::F32, factors.shape(), factors});
  }
  matrix("token_embd", -1, s.vocab, s.dim);
  for (int l = 0; l < s.layers; ++l) {
    norm("attn_norm", l);
    matrix("attn_q", l, s.heads * head_dim, s.dim);
    matrix("attn_k", l, s.kv_heads * head_dim, s.dim);
    matrix("attn_v", l, s.kv_heads * head_dim, s.dim);
    matrix("attn_output", l, s.dim, s.heads * head_dim);
    norm("ffn_norm", l);
    matrix("ffn_gate", l, s.ffn, s.dim);
    matrix("ffn_up", l, s.ffn, s.dim);
    matrix("ffn_down", l, s.dim, s.ffn);
  }
  norm("output_norm", -1);
  if (!s.tied) {
    matrix("output", -1, s.vocab, s.dim);
  }
  nuvec::io::FileWriter out(path);
  if (!out.is_open()) {
    std::fprintf(stderr, "nuvec_lm_models: cannot open %s for writing\n", path.c_str());
    return 1;
  }
  nuvec::io::save_gguf(out, tensors, model_metadata(s, shape_name, type));
  std::printf("wrote %s: %s %s, %zu tensors, %.1f MiB of matrices\n", path.c_str(), shape_name.c_str(), type.c_str(),
              tensors.size(), static_cast<double>(bytes) / (1 << 20));
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Runs fn(begin, end) over [0, count) split into `threads` contiguous parts, one thread each; returns seconds.
template <class Fn>
double on_threads(int threads, size_t count, Fn fn) {
  auto start = Clock::now();
  std::vector<std::thread> pool;
  const size_t part = (count + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    const size_t begin = std::min(count, t * part);
    const size_t end = std::min(count, begin + part);
    pool.emplace_back([=] { fn(t, begin, end); });
  }
  for (auto& th : pool) {
    th.join();
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int bandwidth(int threads, size_t mib, int reps) {
  const size_t words = mib * (size_t{1} << 20) / sizeof(uint64_t);
  std::vector<uint64_t> a(words);
  std::vector<uint64_t> b(words);
  for (size_t i = 0; i < words; ++i) {
    a[i] = i * 0x9E3779B97F4A7C15ULL;  // not zeros: every page is touched and holds data
  }
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  auto copy = [&](int, size_t begin, size_t end) {
    std::memcpy(b.data() + begin, a.data() + begin, (end - begin) * sizeof(uint64_t));
  };
  auto read = [&](int t, size_t begin, size_t end) {
    uint64_t lane[8] = {};
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
      for (int j = 0; j < 8; ++j) {
        lane[j] += a[i + j];
      }
    }
    for (; i < end; ++i) {
      lane[0] += a[i];
    }
    sums[static_cast<size_t>(t)] = lane[0] + lane[1] + lane[2] + lane[3] + lane[4] + lane[5] + lane[6] + lane[7];
  };
  on_threads(threads, words, copy);  // warm-up: pages of b, threads
  on_threads(threads, words, read);
  std::vector<double> copies;
  std::vector<double> reads;
  const double bytes = static_cast<double>(words * sizeof(uint64_t));
  for (int r = 0; r < reps; ++r) {
    copies.push_back(2 * bytes / on_threads(threads, words, copy) / 1e9);
    reads.push_back(bytes / on_threads(threads, words, read) / 1e9);
  }
  uint64_t check = 0;
  for (auto v : sums) {
    check += v;
  }
  std::printf("threads=%d mib=%zu copy_gbs=%.2f read_gbs=%.2f check=%llu\n", threads, mib, median(copies),
              median(reads), static_cast<unsigned long long>(check % 1000));
  return 0;
}

int usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s write --shape 1b|small --type F16|Q8_0|Q4_0|Q4_K_M --out FILE [--seed S]\n"
               "       %s bandwidth [-t THREADS] [--mib N] [-r REPS]\n",
               program, program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    return usage(argv[0]);
  }
  const std::string command = argv[1];
  std::map<std::string, std::string> options;
  for (int i = 2; i + 1 < argc; i += 2) {
    options[argv[i]] = argv[i + 1];
  }
  if ((argc - 2) % 2 != 0) {
    return usage(argv[0]);
  }
  auto option = [&](const std::string& name, const std::string& fallback) {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  };
  try {
    if (command == "write") {
      const std::string shape = option("--shape", "");
      const std::string type = option("--type", "");
      const std::string out = option("--out", "");
      if (!shapes().contains(shape) || !file_types().contains(type) || out.empty()) {
        return usage(argv[0]);
      }
      return write_model(shape, type, out, std::stoull(option("--seed", "0")));
    }
    if (command == "bandwidth") {
      const int threads = std::stoi(option("-t", "2"));
      const int mib = std::stoi(option("--mib", "512"));
      const int reps = std::stoi(option("-r", "5"));
      if (threads < 1 || mib < 1 || reps < 1) {
        return usage(argv[0]);
      }
      return bandwidth(threads, static_cast<size_t>(mib), reps);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec_lm_models: %s\n", e.what());
    return 1;
  }
  return usage(argv[0]);
}
