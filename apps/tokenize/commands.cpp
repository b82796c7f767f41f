#include "apps/tokenize/commands.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "nuvec/lm/lm.h"

namespace nuvec::tokenize {

namespace {

std::string read_all(std::FILE* in) {
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, in)) > 0) {
    text.append(buffer, n);
  }
  return text;
}

/// Calls `each(line, number)` for every line of `in` (without its newline), numbered from 1.
template <class Each>
void for_each_line(std::FILE* in, Each each) {
  std::string text = read_all(in);
  size_t start = 0;
  for (size_t number = 1; start < text.size(); ++number) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    each(std::string_view(text).substr(start, end - start), number);
    start = end + 1;
  }
}

void write(std::FILE* out, const std::string& text) { std::fwrite(text.data(), 1, text.size(), out); }

nlohmann::ordered_json parse_json(std::string_view text, const std::string& where) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(where + ": not valid JSON (" + e.what() + ")");
  }
}

nlohmann::ordered_json read_json_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw std::invalid_argument("cannot read " + path);
  }
  std::stringstream text;
  text << file.rdbuf();
  return parse_json(text.str(), path);
}

std::vector<int32_t> ids_of(const nlohmann::ordered_json& value, const std::string& where) {
  if (!value.is_array()) {
    throw std::invalid_argument(where + ": expected a JSON array of token ids");
  }
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (const auto& id : value) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      throw std::invalid_argument(where + ": " + id.dump() + " is not a token id");
    }
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

/// The tokenizer named by --tokenizer, which every command needs.
lm::Tokenizer load_tokenizer(const std::string& path) {
  if (path.empty()) {
    throw std::invalid_argument("--tokenizer PATH is required (a tokenizer.json, a model folder or a .gguf file)");
  }
  return lm::Tokenizer::load(path);
}

}  // namespace

void run_tokenize(const TokenizeOptions& options, std::FILE* in, std::FILE* out) {
  auto tokenizer = load_tokenizer(options.tokenizer);
  if (!options.jsonl) {
    write(out, nlohmann::json(tokenizer.encode(read_all(in), options.add_special_tokens)).dump() + "\n");
    return;
  }
  for_each_line(in, [&](std::string_view line, size_t number) {
    std::string where = "input line " + std::to_string(number);
    auto text = parse_json(line, where);
    if (!text.is_string()) {
      throw std::invalid_argument(where + ": expected a JSON string");
    }
    write(out, nlohmann::json(tokenizer.encode(text.get<std::string>(), options.add_special_tokens)).dump() + "\n");
  });
}

void run_detokenize(const DetokenizeOptions& options, std::FILE* in, std::FILE* out) {
  auto tokenizer = load_tokenizer(options.tokenizer);
  auto decode = [&](const std::vector<int32_t>& ids) {
    return tokenizer.decode(ids, options.skip_special_tokens, options.clean_up_spaces);
  };
  if (!options.jsonl) {
    write(out, decode(ids_of(parse_json(read_all(in), "input"), "input")));
    return;
  }
  for_each_line(in, [&](std::string_view line, size_t number) {
    std::string where = "input line " + std::to_string(number);
    // A byte that does not form UTF-8 is written as U+FFFD rather than failing the whole line.
    std::string text = decode(ids_of(parse_json(line, where), where));
    write(out, nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  });
}

void run_chat_template(const ChatTemplateCommandOptions& options, std::FILE* out) {
  if (options.messages.empty()) {
    throw std::invalid_argument("--messages FILE.json is required (a JSON list of messages)");
  }
  auto tokenizer = load_tokenizer(options.tokenizer);
  lm::ChatTemplateOptions template_options;
  template_options.add_generation_prompt = options.add_generation_prompt;
  if (options.tools) {
    template_options.tools = read_json_file(*options.tools);
  }
  if (options.vars) {
    template_options.extra = read_json_file(*options.vars);
    if (!template_options.extra.is_object()) {
      throw std::invalid_argument(*options.vars + ": expected a JSON object of variables");
    }
  }
  write(out,
        tokenizer.apply_chat_template(read_json_file(options.messages), template_options, options.name.value_or("")));
}

}  // namespace nuvec::tokenize
