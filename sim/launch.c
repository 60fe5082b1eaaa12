/*
 * launch.c: kernel registration and launches.
 *
 * nvcc-generated host code registers every kernel at load time with
 * __cudaRegisterFunction(handle, hostFun, deviceFun, deviceName, ...): the
 * host stub's address and the kernel's mangled name.  A launch names the
 * kernel by its host stub (cudaLaunchKernel) or, since CUDA 13, by a
 * cudaKernel_t obtained from __cudaGetKernel; here that handle is simply the
 * registration entry.  `kernel<<<g, b, s, st>>>(...)` compiles to
 * __cudaPushCallConfiguration (in the caller) then __cudaPopCallConfiguration
 * + __cudaLaunchKernel (in the stub), so the configuration is kept on a small
 * per-thread stack.
 *
 * Kernels do not run (there is no device code to run); they take the time
 * of the model: threads / SIM_THREADS_PER_US, starting no earlier than the
 * launch + SIM_LAUNCH_LATENCY_US.  Each launch call keeps the host
 * SIM_LAUNCH_CALL_US on the CPU before it queues the kernel (a slow launch
 * path: the kernel is queued when the call is nearly done).
 */
#include "cudart_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_CONFIG_STACK 16

struct sim_kernel {
    const void *host_fun;
    const char *name; /* owned copy: the registration's string may go away */
    struct sim_kernel *next;
};

static pthread_mutex_t sim_kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_kernel *sim_kernels;

struct sim_call_config {
    dim3 grid, block;
    size_t shared_mem;
    cudaStream_t stream;
};

static _Thread_local struct sim_call_config sim_configs[SIM_CONFIG_STACK];
static _Thread_local int sim_nconfigs;

static struct sim_kernel *sim_kernel_find(const void *host_fun)
{
    pthread_mutex_lock(&sim_kernels_lock);
    struct sim_kernel *k = sim_kernels;
    while (k && k->host_fun != host_fun)
        k = k->next;
    pthread_mutex_unlock(&sim_kernels_lock);
    return k;
}

void **__cudaRegisterFatBinary(void *fatCubin)
{
    void **handle = calloc(1, sizeof(void *));
    if (handle)
        *handle = fatCubin;
    return handle;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) { (void)fatCubinHandle; }

void __cudaUnregisterFatBinary(void **fatCubinHandle) { free(fatCubinHandle); }

char __cudaInitModule(void **fatCubinHandle)
{
    (void)fatCubinHandle;
    return 1;
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)fatCubinHandle, (void)deviceFun, (void)thread_limit, (void)tid, (void)bid;
    (void)bDim, (void)gDim, (void)wSize;
    struct sim_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return;
    k->host_fun = hostFun;
    k->name = strdup(deviceName ? deviceName : "unnamed_kernel");
    pthread_mutex_lock(&sim_kernels_lock);
    k->next = sim_kernels;
    sim_kernels = k;
    pthread_mutex_unlock(&sim_kernels_lock);
}

void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant, int global)
{
    (void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName;
    (void)ext, (void)size, (void)constant, (void)global;
}

void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global)
{
    (void)fatCubinHandle, (void)hostVarPtrAddress, (void)deviceAddress, (void)deviceName;
    (void)ext, (void)size, (void)constant, (void)global;
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream)
{
    if (sim_nconfigs == SIM_CONFIG_STACK)
        return 1;
    sim_configs[sim_nconfigs++] = (struct sim_call_config){gridDim, blockDim, sharedMem, stream};
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream)
{
    if (sim_nconfigs == 0)
        return sim_set_error(cudaErrorMissingConfiguration);
    struct sim_call_config *c = &sim_configs[--sim_nconfigs];
    *gridDim = c->grid;
    *blockDim = c->block;
    *sharedMem = c->shared_mem;
    *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    struct sim_kernel *k = sim_kernel_find(hostFun);
    if (!kernel || !k)
        return sim_set_error(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)k;
    return cudaSuccess;
}

/* Queues one kernel of registration K on STREAM. */
static cudaError_t sim_launch(struct sim_kernel *k, dim3 grid, dim3 block, size_t shared_mem,
                              cudaStream_t stream)
{
    uint32_t corr = sim_api_enter();
    if (!k)
        return sim_set_error(cudaErrorInvalidDeviceFunction);
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
        return sim_set_error(cudaErrorInvalidConfiguration);
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!st)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    double call_us = sim_model()->launch_call_us;
    if (call_us > 0) {
        uint64_t until = sim_now_ns() + (uint64_t)(call_us * SIM_NS_PER_US);
        while (sim_now_ns() < until)
            ;
    }
    struct sim_op *op = sim_op_new(SIM_OP_KERNEL);
    op->ready_ns += (uint64_t)(sim_model()->launch_latency_us * SIM_NS_PER_US);
    op->duration_ns = sim_model_kernel_ns(grid, block);
    struct sim_activity *a = &op->act;
    a->kind = SIM_ACT_KERNEL;
    a->name = k->name;
    a->correlation = corr;
    a->grid[0] = grid.x, a->grid[1] = grid.y, a->grid[2] = grid.z;
    a->block[0] = block.x, a->block[1] = block.y, a->block[2] = block.z;
    a->shared_mem = (uint32_t)shared_mem;
    sim_stream_submit(stream, st, op);
    return cudaSuccess;
}

/* nvcc's stubs pass the handle __cudaGetKernel gave them (cached in a static
 * per call site): it is the registration entry itself, no lookup needed. */
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return sim_launch((struct sim_kernel *)kernel, gridDim, blockDim, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return sim_launch((struct sim_kernel *)kernel, gridDim, blockDim, sharedMem,
                      stream ? stream : cudaStreamPerThread);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return sim_launch(sim_kernel_find(func), gridDim, blockDim, sharedMem, stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return sim_launch(sim_kernel_find(func), gridDim, blockDim, sharedMem,
                      stream ? stream : cudaStreamPerThread);
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    (void)args;
    if (!config)
        return sim_set_error(cudaErrorInvalidValue);
    return sim_launch(sim_kernel_find(func), config->gridDim, config->blockDim,
                      config->dynamicSmemBytes, config->stream);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    (void)args;
    if (!config)
        return sim_set_error(cudaErrorInvalidValue);
    return sim_launch(sim_kernel_find(func), config->gridDim, config->blockDim,
                      config->dynamicSmemBytes,
                      config->stream ? config->stream : cudaStreamPerThread);
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return sim_launch(sim_kernel_find(func), gridDim, blockDim, sharedMem, stream);
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                             void **args, size_t sharedMem, cudaStream_t stream)
{
    (void)args;
    return sim_launch(sim_kernel_find(func), gridDim, blockDim, sharedMem,
                      stream ? stream : cudaStreamPerThread);
}
