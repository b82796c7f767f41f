#include "nuvec/lm/tokenizer/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <thread>
#include <unordered_set>

#include "nuvec/core/error.h"
#include "nuvec/lm/tokenizer/byte_level.h"
#include "nuvec/lm/tokenizer/tokenizer_state.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm {

namespace detail {

namespace {

bool is_byte_token(std::string_view token) {
  return token.size() == 6 && token.starts_with("<0x") && token[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(token[3])) != 0 &&
         std::isxdigit(static_cast<unsigned char>(token[4])) != 0;
}

// The end-of-turn tokens of the chat models nuvec knows, for files that do not name theirs.
constexpr std::string_view end_of_turn_tokens[] = {"<|eot_id|>", "<|im_end|>", "<end_of_turn>",
                                                   "<|end|>",    "<|eot|>",    "<|EOT|>"};

}  // namespace

std::optional<std::string_view> TokenizerState::token(int32_t id) const {
  if (auto it = added_tokens.find(id); it != added_tokens.end()) {
    return it->second;
  }
  return model.vocab().token(id);
}

std::shared_ptr<const ChatTemplate> TokenizerState::chat_template(const std::string& name) const {
  std::lock_guard lock(chat_templates_mutex_);
  auto& parsed = chat_templates_[name];
  if (!parsed) {
    for (const auto& [entry_name, source] : config.chat_templates) {
      if (entry_name == name) {
        parsed = std::make_shared<const ChatTemplate>(source);
      }
    }
  }
  return parsed;
}

std::string TokenizerState::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::optional<std::string_view> text = token(id);
    if (!text) {
      throw_invalid("decode: id " + std::to_string(id) + " is outside the vocabulary (size " +
                    std::to_string(vocab_size) + ")");
    }
    if (!skip_special_tokens || !special[id]) {
      tokens.emplace_back(*text);
    }
  }
  return decoder.decode(std::move(tokens));
}

std::string TokenizerState::token_bytes(int32_t id) const {
  const std::optional<std::string_view> piece = token(id);
  if (!piece) {
    throw_invalid("token_bytes: id " + std::to_string(id) + " is outside the vocabulary (size " +
                  std::to_string(vocab_size) + ")");
  }
  if (added_tokens.contains(id)) {
    return std::string(*piece);
  }
  // A decoder may treat a token alone differently (dropping its leading space, or turning part of a character into
  // U+FFFD), so the piece is read where its form is known: <0xXX> byte tokens, GPT-2's byte alphabet and
  // SentencePiece's U+2581 for a space; decode() gives the rest.
  if (held_back[id]) {
    return std::string(1, static_cast<char>(std::stoi(std::string(piece->substr(3, 2)), nullptr, 16)));
  }
  if (decoder.maps_byte_level()) {
    if (std::optional<std::string> bytes = from_byte_level(*piece)) {
      return *bytes;
    }
  }
  static const std::string metaspace = "\xE2\x96\x81";
  if (piece->find(metaspace) != std::string::npos) {
    std::string text;
    for (size_t i = 0; i < piece->size();) {
      const bool space = piece->compare(i, metaspace.size(), metaspace) == 0;
      text += space ? std::string_view(" ") : piece->substr(i, 1);
      i += space ? metaspace.size() : 1;
    }
    return text;
  }
  const int32_t ids[] = {id};
  return decode(ids, false);
}

std::shared_ptr<const TokenizerState> build_state(const nlohmann::json& tokenizer, const std::string& source,
                                                  TokenizerConfig config, std::optional<int32_t> eot_id) {
  JsonField root(tokenizer, source);
  auto state = std::make_shared<TokenizerState>(Model::from_json(root["model"]));
  if (auto field = root.find("normalizer")) {
    state->normalizer = Normalizer::from_json(*field);
  }
  if (auto field = root.find("pre_tokenizer")) {
    state->pre_tokenizer = PreTokenizer::from_json(*field);
  }
  if (auto field = root.find("decoder")) {
    state->decoder = Decoder::from_json(*field);
  }
  if (auto field = root.find("post_processor")) {
    state->post_processor = PostProcessor::from_json(*field);
  }
  // "truncation" and "padding" shape batches for training; encode() gives each text's ids whole.

  std::vector<AddedToken> added;
  if (auto list = root.find("added_tokens")) {
    for (size_t i = 0; i < list->size(); ++i) {
      added.push_back(AddedToken::from_json(list->at(i)));
    }
  }
  // transformers also adds the tokens of added_tokens_decoder that tokenizer.json lacks.
  std::unordered_set<int32_t> known;
  for (const AddedToken& token : added) {
    known.insert(token.id);
  }
  for (const AddedToken& token : config.added_tokens) {
    if (known.insert(token.id).second) {
      added.push_back(token);
    }
  }
  size_t size = state->model.vocab().size();
  std::unordered_set<std::string> special_tokens;
  for (const AddedToken& token : added) {
    state->added_ids.insert_or_assign(token.content, token.id);
    state->added_tokens.insert_or_assign(token.id, token.content);
    size = std::max(size, static_cast<size_t>(token.id) + 1);
    if (token.special) {
      special_tokens.insert(token.content);
    }
  }
  state->added = AddedVocabulary(std::move(added));
  state->vocab_size = size;
  state->special.resize(size);
  state->held_back.resize(size);
  bool joins_bytes = state->decoder.joins_byte_tokens();
  for (size_t id = 0; id < size; ++id) {
    if (const std::optional<std::string_view> token = state->token(static_cast<int32_t>(id))) {
      state->special[id] = special_tokens.contains(std::string(*token));
      state->held_back[id] = joins_bytes && is_byte_token(*token);
    }
  }

  auto find_id = [&](const std::optional<std::string>& token) -> std::optional<int32_t> {
    if (!token) {
      return std::nullopt;
    }
    if (auto it = state->added_ids.find(*token); it != state->added_ids.end()) {
      return it->second;
    }
    return state->model.vocab().find(*token);
  };
  state->bos_id = find_id(config.bos_token);
  state->eos_id = find_id(config.eos_token);
  state->eot_id = eot_id;
  for (std::string_view name : end_of_turn_tokens) {
    if (!state->eot_id) {
      state->eot_id = find_id(std::string(name));
    }
  }
  std::vector<int32_t> specials = state->post_processor.add_special_tokens({});
  state->add_bos = config.add_bos_token.value_or(!specials.empty() && specials.front() == state->bos_id);
  state->add_eos = config.add_eos_token.value_or(!specials.empty() && specials.back() == state->eos_id);
  state->config = std::move(config);
  return state;
}

}  // namespace detail

Tokenizer make_tokenizer(std::shared_ptr<const detail::TokenizerState> state) { return Tokenizer(std::move(state)); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (size_t valid = detail::valid_utf8_prefix(text); valid != text.size()) {
    throw_invalid("encode: the text is not valid UTF-8 (at byte " + std::to_string(valid) + ")");
  }
  const detail::TokenizerState& state = *state_;
  std::vector<int32_t> ids;
  std::vector<std::string> words;
  for (const Segment& segment : state.added.split(text, state.normalizer)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    words.clear();
    state.pre_tokenizer.split(segment.text, segment.first, words);
    for (const std::string& word : words) {
      state.model.tokenize(word, ids);
    }
  }
  return add_special_tokens ? state.post_processor.add_special_tokens(std::move(ids)) : ids;
}

std::vector<std::vector<int32_t>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                          bool add_special_tokens) const {
  std::vector<std::vector<int32_t>> out(texts.size());
  size_t workers = std::min<size_t>(std::max(1U, std::thread::hardware_concurrency()), texts.size());
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < texts.size();) {
      try {
        out[i] = encode(texts[i], add_special_tokens);
      } catch (...) {
        if (!failed.exchange(true)) {
          failure = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) {
    threads.emplace_back(work);
  }
  work();
  for (std::thread& thread : threads) {
    thread.join();
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens,
                              bool clean_up_tokenization_spaces) const {
  std::string text = state_->decode(ids, skip_special_tokens);
  return clean_up_tokenization_spaces ? detail::clean_up_tokenization(std::move(text)) : text;
}

std::string Tokenizer::token_bytes(int32_t id) const { return state_->token_bytes(id); }

StreamingDetokenizer Tokenizer::detokenizer(bool skip_special_tokens) const {
  return StreamingDetokenizer(state_, skip_special_tokens);
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto it = state_->added_ids.find(token); it != state_->added_ids.end()) {
    return it->second;
  }
  return state_->model.vocab().find(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const std::optional<std::string_view> token = state_->token(id);
  return token ? std::optional<std::string>(*token) : std::nullopt;
}

size_t Tokenizer::vocab_size() const { return state_->vocab_size; }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < state_->special.size() && state_->special[id];
}

std::optional<std::string> Tokenizer::bos_token() const {
  return state_->bos_id ? id_to_token(*state_->bos_id) : std::nullopt;
}
std::optional<int32_t> Tokenizer::bos_id() const { return state_->bos_id; }
std::optional<std::string> Tokenizer::eos_token() const {
  return state_->eos_id ? id_to_token(*state_->eos_id) : std::nullopt;
}
std::optional<int32_t> Tokenizer::eos_id() const { return state_->eos_id; }
std::optional<int32_t> Tokenizer::eot_id() const { return state_->eot_id; }
bool Tokenizer::add_bos() const { return state_->add_bos; }
bool Tokenizer::add_eos() const { return state_->add_eos; }
bool Tokenizer::clean_up_tokenization_spaces() const { return state_->config.clean_up_tokenization_spaces; }

std::string Tokenizer::chat_template() const {
  for (const auto& [name, source] : state_->config.chat_templates) {
    if (name == "default") {
      return source;
    }
  }
  return {};
}

const std::vector<std::pair<std::string, std::string>>& Tokenizer::chat_templates() const {
  return state_->config.chat_templates;
}

std::string Tokenizer::apply_chat_template(const nlohmann::ordered_json& messages, ChatTemplateOptions options,
                                           std::string_view template_name) const {
  auto has = [&](std::string_view name) {
    return std::any_of(state_->config.chat_templates.begin(), state_->config.chat_templates.end(),
                       [&](const auto& entry) { return entry.first == name; });
  };
  std::string name(template_name);
  if (name.empty()) {
    bool tools = options.tools.is_array() && !options.tools.empty();
    name = tools && has("tool_use") ? "tool_use" : "default";
  }
  if (!has(name)) {
    throw_error(ErrorKind::invalid_argument,
                state_->config.chat_templates.empty()
                    ? std::string("[apply_chat_template] the tokenizer has no chat template")
                    : "[apply_chat_template] the tokenizer has no chat template named '" + name + "'");
  }
  if (options.bos_token.empty() && bos_token()) {
    options.bos_token = *bos_token();
  }
  if (options.eos_token.empty() && eos_token()) {
    options.eos_token = *eos_token();
  }
  return state_->chat_template(name)->render(messages, options);
}

}  // namespace nuvec::lm
