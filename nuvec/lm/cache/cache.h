#pragma once

// The KV caches: growing, rotating (sliding windows) and quantized, and prompt caches built from them.

#include "nuvec/lm/cache/kv_cache.h"
#include "nuvec/lm/cache/prompt_cache.h"
#include "nuvec/lm/cache/quantized_cache.h"
#include "nuvec/lm/cache/rotating_cache.h"
