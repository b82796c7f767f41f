#pragma once

// The fortunes corpus (Debian's `fortunes`): every plain-text file of /usr/share/games/fortunes, as bytes.

#include <string>
#include <vector>

namespace nuvec::gpt {

/// The text of every fortune file in `dir` (the .dat indexes and .u8 links left out), in name order; throws
/// naming the folder when it holds none.
std::string load_corpus(const std::string& dir = "/usr/share/games/fortunes");

/// The fortunes of a corpus: the texts between lines holding only "%", without empty ones.
std::vector<std::string> split_fortunes(const std::string& corpus);

}  // namespace nuvec::gpt
