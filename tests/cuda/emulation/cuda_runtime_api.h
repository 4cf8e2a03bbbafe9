// See cuda_runtime.h (the CPU stand-in of the emulated run).
#pragma once
#include "cuda_runtime.h"
