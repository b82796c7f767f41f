#pragma once

// `nuvec serve`: an OpenAI-compatible HTTP server over the serve library (see nuvec help).

#include <cstdio>

namespace nuvec::serve_cli {

/// Parses `nuvec serve` options (argv[2] on; --model may repeat), serves until SIGTERM or SIGINT and returns the
/// exit status. Throws std::invalid_argument for bad options.
int run_serve(int argc, char** argv, std::FILE* err);

}  // namespace nuvec::serve_cli
