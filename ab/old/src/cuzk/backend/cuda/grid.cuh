// The one thread-index helper of the kernels: this thread's index in a one-dimensional grid,
// computed in 64 bits (blockIdx.x·blockDim.x overflows 32 bits on large launches). Device
// code only, so the .cu files include it, not the field headers (those also build on the host).
#pragma once

__device__ __forceinline__ unsigned long long global_thread() {
    return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}
