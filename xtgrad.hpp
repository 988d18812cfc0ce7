// Everything of the autograd core in one include.
#pragma once

#include "autograd/anomaly.hpp"
#include "autograd/debug.hpp"
#include "autograd/engine.hpp"
#include "autograd/error.hpp"
#include "autograd/format.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/graphviz.hpp"
#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"
#include "autograd/random.hpp"
#include "autograd/tensor.hpp"
#include "autograd/trace_table.hpp"
