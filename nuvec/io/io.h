#pragma once

// nuvec's io library: MLX's loading and saving API (load/save for .npy, load_safetensors/save_safetensors,
// load_gguf/save_gguf) with its streaming Reader and Writer, plus .npz archives and the IDX format in nuvec::io.

#include "nuvec/io/gguf.h"
#include "nuvec/io/idx.h"
#include "nuvec/io/npy.h"
#include "nuvec/io/npz.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/io/stream.h"
