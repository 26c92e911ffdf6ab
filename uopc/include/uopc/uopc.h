/* uopc.h: the book's runtime, all of it. Labs include this one header. */
#ifndef UOPC_UOPC_H
#define UOPC_UOPC_H

#include "uopc/error.h"
#include "uopc/counters.h"
#include "uopc/debug.h"
#include "uopc/layout.h"
#include "uopc/tensor.h"
#include "uopc/program.h"
#include "uopc/cuda.h"

/* Bumped whenever the generated-code ABI changes; part of every cache key. */
#define UOPC_ABI_VERSION 1

#endif
