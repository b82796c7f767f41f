#include "apps/cli/commands.h"

namespace nuvec::cli {

namespace {

Options& add_sampling(Options& options, lm_cli::SamplingOptions& s) {
  return options.add("--temp", s.temperature)
      .add("--top-k", s.top_k)
      .add("--top-p", s.top_p)
      .add("--min-p", s.min_p)
      .add("--repetition-penalty", s.repetition_penalty)
      .add("--seed", s.seed);
}

}  // namespace

Options train_options(train::TrainOptions& o) {
  Options options;
  options.add("--model", o.model)
      .add("--epochs", o.epochs)
      .add("--batch-size", o.batch_size)
      .add("--lr", o.learning_rate)
      .add("--data", o.data_dir)
      .add("--output", o.output_dir)
      .add("--resume", o.resume)
      .add("--stop-after", o.stop_after_epochs)
      .add("--seed", o.seed)
      .add("--limit", o.train_limit)
      .flag("--distributed", o.distributed);
  return options;
}

Options gpt_options(gpt::GptOptions& o) {
  Options options;
  options.add("--steps", o.steps)
      .add("--batch-size", o.batch_size)
      .add("--context", o.model.context)
      .add("--layers", o.model.layers)
      .add("--dims", o.model.dims)
      .add("--heads", o.model.heads)
      .add("--lr", o.learning_rate)
      .add("--corpus", o.corpus_dir)
      .add("--output", o.output_dir)
      .add("--prompt", o.prompt)
      .add("--sample", o.sample_tokens)
      .add("--temperature", o.temperature)
      .add("--seed", o.seed)
      .flag("--eager", o.eager);
  return options;
}

Options tokenize_options(tokenize::TokenizeOptions& o) {
  Options options;
  options.add("--tokenizer", o.tokenizer).flag("--add-special-tokens", o.add_special_tokens).flag("--jsonl", o.jsonl);
  return options;
}

Options detokenize_options(tokenize::DetokenizeOptions& o) {
  Options options;
  options.add("--tokenizer", o.tokenizer)
      .flag("--skip-special-tokens", o.skip_special_tokens)
      .flag("--clean-up-spaces", o.clean_up_spaces)
      .flag("--jsonl", o.jsonl);
  return options;
}

Options chat_template_options(tokenize::ChatTemplateCommandOptions& o) {
  Options options;
  options.add("--tokenizer", o.tokenizer)
      .add("--messages", o.messages)
      .add("--tools", o.tools)
      .add("--vars", o.vars)
      .add("--template", o.name)
      .flag("--add-generation-prompt", o.add_generation_prompt);
  return options;
}

Options generate_options(lm_cli::GenerateCommandOptions& o) {
  Options options;
  options.add("--model", o.model)
      .add("--prompt", o.prompt)
      .add("--prompt-ids", o.prompt_ids)
      .add("--system", o.system)
      .add("--max-tokens", o.max_tokens)
      .add("--draft-model", o.draft_model)
      .add("--num-draft", o.num_draft)
      .flag("--chat", o.chat)
      .flag("--json", o.json)
      .flag("--pipeline", o.pipeline);
  add_sampling(options, o.sampling);
  return options;
}

Options chat_options(lm_cli::ChatCommandOptions& o) {
  Options options;
  options.add("--model", o.model).add("--system", o.system).add("--max-tokens", o.max_tokens);
  add_sampling(options, o.sampling);
  return options;
}

Options bench_options(lm_cli::BenchCommandOptions& o) {
  Options options;
  options.add("--model", o.model)
      .add("-p", o.prompt_tokens)
      .add("-n", o.generation_tokens)
      .add("-t", o.threads)
      .add("-r", o.repetitions);
  return options;
}

Options launch_options(launch::LaunchOptions& o) {
  Options options;
  options.add("-n", o.processes)
      .add("--hosts", o.hosts)
      .add("--hostfile", o.hostfile)
      .add("--backend", o.backend)
      .add("--starting-port", o.starting_port)
      .add("--ssh", o.ssh)
      .add("--env", o.env)
      .add("--grace", o.grace_seconds);
  return options;
}

}  // namespace nuvec::cli
