#pragma once

// The option tables of the nuvec subcommands, bound to their options structs: nuvec_main.cpp parses with them and
// the tests check every option's errors against them. (`nuvec serve` keeps its table in apps/serve, since its
// --model repeats.)

#include "apps/cli/options.h"
#include "apps/generate/commands.h"
#include "apps/gpt/train_gpt.h"
#include "apps/launch/launch.h"
#include "apps/tokenize/commands.h"
#include "apps/train/trainer.h"

namespace nuvec::cli {

Options train_options(train::TrainOptions& o);
Options gpt_options(gpt::GptOptions& o);
Options tokenize_options(tokenize::TokenizeOptions& o);
Options detokenize_options(tokenize::DetokenizeOptions& o);
Options chat_template_options(tokenize::ChatTemplateCommandOptions& o);
Options generate_options(lm_cli::GenerateCommandOptions& o);
Options chat_options(lm_cli::ChatCommandOptions& o);
Options bench_options(lm_cli::BenchCommandOptions& o);
/// The options before "--"; the program after it is not parsed here.
Options launch_options(launch::LaunchOptions& o);

}  // namespace nuvec::cli
