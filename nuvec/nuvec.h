#pragma once

// nuvec's public entry point: include this one header.

#include "nuvec/core/allocator.h"
#include "nuvec/core/array.h"
#include "nuvec/core/compile.h"
#include "nuvec/core/device.h"
#include "nuvec/core/dtype.h"
#include "nuvec/core/error.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/fast.h"
#include "nuvec/core/fft.h"
#include "nuvec/core/linalg.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/print.h"
#include "nuvec/core/profile.h"
#include "nuvec/core/random.h"
#include "nuvec/core/scheduler.h"
#include "nuvec/core/shape.h"
#include "nuvec/core/transforms.h"
#include "nuvec/distributed/distributed.h"
#include "nuvec/distributed/ops.h"
#include "nuvec/io/io.h"
