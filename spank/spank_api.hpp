// Slurm's SPANK header, given C linkage: spank.h declares the plugin entry points without
// extern "C", so C++ definitions of them would otherwise conflict.
#pragma once

extern "C" {
#include <slurm/spank.h>
}
