#pragma once

// The safetensors format: an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape
// and byte range, then the tensors' bytes. Loading from a path maps the file and adopts each tensor's bytes, so a
// tensor is read from disk when it is first used.

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "nuvec/core/array.h"
#include "nuvec/io/blob.h"
#include "nuvec/io/stream.h"

namespace nuvec {

using SafetensorsLoad = std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, std::string>>;

/// Loads every tensor (mapped, zero copy where aligned) and the string metadata of a .safetensors file.
SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s = {});
/// Loads through a reader: the header first, then each tensor's bytes with positioned reads.
SafetensorsLoad load_safetensors(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s = {});
/// Saves arrays of any nuvec dtype (complex64 as C64) with string metadata.
void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});
void save_safetensors(std::shared_ptr<io::Writer> out_stream, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});

namespace io {
/// Parses safetensors bytes held by a blob (the tensors adopt the blob's bytes).
SafetensorsLoad load_safetensors(const std::shared_ptr<const Blob>& blob);
}  // namespace io

}  // namespace nuvec
