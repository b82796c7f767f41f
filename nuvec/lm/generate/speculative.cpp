#include "nuvec/lm/generate/speculative.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <utility>

#include "nuvec/core/allocator.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/cache/prompt_cache.h"
#include "nuvec/lm/generate/sequence.h"

namespace nuvec::lm {
namespace {

/// Drops the last `n` positions of every layer's cache.
void trim_cache(Cache& cache, int n) {
  if (n == 0) {
    return;
  }
  for (const auto& layer : cache) {
    if (!layer->is_trimmable() || layer->trim(n) != n) {
      throw_invalid(std::string("[speculative] a ") + layer->type_name() +
                    " cannot drop rejected draft tokens; speculative decoding needs trimmable caches.");
    }
  }
}

/// Logits (1, V) of position `i` of logits (1, L, V).
array position(const array& logits, int i) {
  const int vocab = logits.shape(-1);
  return reshape(slice(logits, {0, i, 0}, {1, i + 1, vocab}), {1, vocab});
}

/// The model's forward pass over `tokens`, as logits (1, L, V).
array run(LanguageModel& model, Cache& cache, const std::vector<int32_t>& tokens) {
  return model.forward(array(tokens.begin(), {1, static_cast<int>(tokens.size())}, int32), &cache);
}

/// The draft's proposals for one round and the distributions they were drawn from (sampling only).
struct Proposal {
  std::vector<int32_t> tokens;
  std::vector<array> distributions;
};

/// Runs `pending` (the tokens the draft's cache lacks) and then each proposal through the draft, `count` proposals
/// in all; the draft's cache ends holding `pending` and all proposals but the last.
Proposal propose(LanguageModel& draft, Cache& cache, detail::SequenceSampler& sampler,
                 const std::vector<int32_t>& pending, int count) {
  Proposal proposal;
  std::vector<int32_t> input = pending;
  for (int i = 0; i < count; ++i) {
    const array logits = run(draft, cache, input);
    const array last = position(logits, static_cast<int>(input.size()) - 1);
    int32_t token = 0;
    if (sampler.greedy()) {
      token = sampler.choose(last).token;
    } else {
      proposal.distributions.push_back(sampler.distribution(last));
      token = sampler.draw(proposal.distributions.back());
      sampler.push(token);
    }
    proposal.tokens.push_back(token);
    input = {token};
  }
  return proposal;
}

/// The model's verdict on a proposal: the responses to emit, the draft tokens first.
std::vector<GenerationResponse> verify(const array& logits, detail::SequenceSampler& sampler,
                                       const Proposal& proposal) {
  std::vector<GenerationResponse> out;
  const int count = static_cast<int>(proposal.tokens.size());
  for (int i = 0; i < count; ++i) {
    const array here = position(logits, i);
    const int32_t drafted = proposal.tokens[i];
    if (sampler.greedy()) {
      GenerationResponse response = sampler.choose(here);
      response.from_draft = response.token == drafted;
      out.push_back(std::move(response));
      if (!out.back().from_draft) {
        return out;
      }
      continue;
    }
    const array p = sampler.distribution(here);
    const array& q = proposal.distributions[i];
    const float p_token = take(p, drafted).item<float>();
    const float q_token = take(q, drafted).item<float>();
    if (sampler.uniform() * q_token < p_token) {
      GenerationResponse response = sampler.describe(here, drafted);
      sampler.push(drafted);
      response.from_draft = true;
      out.push_back(std::move(response));
      continue;
    }
    // Rejected: draw from where the model puts more mass than the draft (from the model's own distribution when
    // rounding leaves no such mass, as when the two distributions are equal).
    const array residual = maximum(subtract(p, q), array(0.0F));
    const int32_t token = sampler.draw(sum(residual).item<float>() > 0 ? residual : p);
    GenerationResponse response = sampler.describe(here, token);
    sampler.push(token);
    out.push_back(std::move(response));
    return out;
  }
  out.push_back(sampler.choose(position(logits, count)));
  return out;
}

void check_models(const LanguageModel& model, const LanguageModel& draft, const std::vector<int32_t>& prompt,
                  const GenerateOptions& options) {
  if (model.vocab_size() != draft.vocab_size()) {
    std::ostringstream msg;
    msg << "[speculative] the draft model's vocabulary (" << draft.vocab_size() << ") differs from the model's ("
        << model.vocab_size() << ").";
    throw_invalid(msg.str());
  }
  // The caches never hold more than the prompt and the generated tokens but the last (drafts stop at max_tokens),
  // so a window that holds those never wraps and can always drop rejected drafts.
  const int64_t needed = static_cast<int64_t>(prompt.size()) + options.max_tokens - 1;
  if (options.max_kv_size && needed > *options.max_kv_size) {
    std::ostringstream msg;
    msg << "[speculative] max_kv_size " << *options.max_kv_size << " is smaller than the " << needed
        << " positions this request needs (prompt + max_tokens - 1): a rotating cache that has wrapped cannot drop "
           "rejected draft tokens. Raise max_kv_size, lower max_tokens, or generate without a draft model.";
    throw_unsupported(msg.str());
  }
}

/// Readies the prompt cache's caches for `prompt` (see PromptCache): both keep the prefix the prompt shares with its
/// tokens, the draft's at most what the model's holds. Returns how many prompt tokens each holds.
std::pair<int, int> reuse_prefix(PromptCache& reused, const LanguageModel& model, const LanguageModel& draft,
                                 const std::vector<int32_t>& prompt, std::optional<int> max_kv_size) {
  const int reusable = detail::reusable_prefix(reused, prompt, "speculative");
  const int held = detail::keep_prefix(reused.cache, reusable, [&] { return make_prompt_cache(model, max_kv_size); });
  reused.tokens.resize(held);
  const int draft_held =
      detail::keep_prefix(reused.draft_cache, held, [&] { return make_prompt_cache(draft, max_kv_size); });
  return {held, draft_held};
}

/// Drops the positions of the draft's cache past the `held` positions of the model's.
void keep_draft_within(Cache& draft_cache, int held) {
  trim_cache(draft_cache, std::max(0, draft_cache.front()->offset() - held));
}

}  // namespace

void speculative_stream_generate(LanguageModel& model, LanguageModel& draft, const Tokenizer& tokenizer,
                                 const std::vector<int32_t>& prompt, const GenerateOptions& options,
                                 const GenerateCallback& callback) {
  GenerateOptions checked = options;
  checked.draft_model = &draft;
  detail::check_options(checked, "speculative");
  detail::check_prompt(model, prompt, "speculative");
  check_models(model, draft, prompt, options);
  if (options.max_tokens == 0) {
    return;
  }
  reset_peak_memory();
  const int prompt_tokens = static_cast<int>(prompt.size());
  PromptCache fresh;
  PromptCache& state = options.prompt_cache != nullptr ? *options.prompt_cache : fresh;
  const auto [cached, draft_cached] = reuse_prefix(state, model, draft, prompt, options.max_kv_size);
  // A round holds up to num_draft positions more before its rejected ones are dropped.
  const int64_t positions = static_cast<int64_t>(prompt_tokens) + options.max_tokens - 1 + options.num_draft;
  detail::reserve(state.cache, model, positions);
  detail::reserve(state.draft_cache, draft, positions);
  detail::SequenceOutput output(tokenizer, options, prompt_tokens, cached);
  detail::SequenceSampler sampler(options.sampling, model.vocab_size(), prompt);
  // The draft's draws must be independent of the acceptance draws, so a seeded draft gets a seed of its own.
  SamplingParams draft_params = options.sampling;
  if (draft_params.seed) {
    *draft_params.seed ^= 0x9E3779B97F4A7C15ULL;
  }
  detail::SequenceSampler draft_sampler(draft_params, draft.vocab_size(), prompt);
  Cache& cache = state.cache;
  Cache& draft_cache = state.draft_cache;
  detail::prefill(model, cache, prompt.data() + cached, prompt_tokens - cached - 1, options.prefill_chunk_size);
  detail::prefill(draft, draft_cache, prompt.data() + draft_cached, prompt_tokens - draft_cached - 1,
                  options.prefill_chunk_size);
  state.tokens.insert(state.tokens.end(), prompt.begin() + cached, prompt.end() - 1);

  // The last emitted token, which the model's cache lacks, and the tokens the draft's cache lacks.
  int32_t last = prompt.back();
  std::vector<int32_t> draft_pending = {last};
  while (true) {
    // Every round emits at least one token of the model's own, so never draft past max_tokens.
    const int count = std::min(options.num_draft, options.max_tokens - output.generated() - 1);
    const size_t drafted_from = draft_sampler.generated();
    const Proposal proposal = propose(draft, draft_cache, draft_sampler, draft_pending, count);

    std::vector<int32_t> input = {last};
    input.insert(input.end(), proposal.tokens.begin(), proposal.tokens.end());
    const array logits = run(model, cache, input);
    std::vector<GenerationResponse> responses = verify(logits, sampler, proposal);
    const int accepted = static_cast<int>(responses.size()) - 1;

    // Keep what was accepted before anything is emitted, so the caches and their token list agree whatever the
    // callback does: the model fed `last` and every proposal, the draft `pending` and all but the last proposal.
    trim_cache(cache, count - accepted);
    state.tokens.push_back(last);
    state.tokens.insert(state.tokens.end(), proposal.tokens.begin(), proposal.tokens.begin() + accepted);
    if (count > 0) {
      trim_cache(draft_cache, count - 1 - std::min(accepted, count - 1));
    }

    for (int i = 0; i <= accepted; ++i) {
      output.complete(responses[i]);
      if (!callback(responses[i]) || output.finished()) {
        // Forget the accepted drafts that came after the last token emitted.
        const int unused = std::max(0, accepted - i - 1);
        trim_cache(cache, unused);
        state.tokens.resize(state.tokens.size() - unused);
        keep_draft_within(draft_cache, static_cast<int>(state.tokens.size()));
        return;
      }
    }

    last = responses.back().token;
    if (count == 0) {
      draft_pending.push_back(last);
    } else {
      draft_pending =
          accepted == count ? std::vector<int32_t>{proposal.tokens.back(), last} : std::vector<int32_t>{last};
    }
    draft_sampler.truncate(drafted_from + accepted);
    draft_sampler.push(last);
  }
}

}  // namespace nuvec::lm
