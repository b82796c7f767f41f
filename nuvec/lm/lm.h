#pragma once

// nuvec's language-model library: tokenizers (tokenizer.json, model folders, GGUF) and chat templates.

#include "nuvec/lm/chat_template.h"
#include "nuvec/lm/tokenizer/tokenizer.h"
