#pragma once

// The fortunes corpus (Debian's `fortunes`): every plain-text file of /usr/share/games/fortunes, as bytes.

#include <string>

namespace nuvec::gpt {

/// The text of every fortune file in `dir` (the .dat indexes and .u8 links left out), in name order; throws
/// naming the folder when it holds none.
std::string load_corpus(const std::string& dir = "/usr/share/games/fortunes");

}  // namespace nuvec::gpt
