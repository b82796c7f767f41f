#pragma once

// nuvec's neural-network library (mlx.nn in C++): modules, layers, initializers, losses and optimizers.

#include "nuvec/nn/activations.h"
#include "nuvec/nn/average_gradients.h"
#include "nuvec/nn/containers.h"
#include "nuvec/nn/conv.h"
#include "nuvec/nn/distributed_linear.h"
#include "nuvec/nn/dropout.h"
#include "nuvec/nn/fully_shard.h"
#include "nuvec/nn/init.h"
#include "nuvec/nn/linear.h"
#include "nuvec/nn/losses.h"
#include "nuvec/nn/module.h"
#include "nuvec/nn/normalization.h"
#include "nuvec/nn/optimizers.h"
#include "nuvec/nn/pooling.h"
#include "nuvec/nn/positional_encoding.h"
#include "nuvec/nn/quantized.h"
#include "nuvec/nn/schedulers.h"
#include "nuvec/nn/transformer.h"
#include "nuvec/nn/value_and_grad.h"
