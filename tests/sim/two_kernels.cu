// two_kernels.cu: an ordinary CUDA program built by nvcc (-cudart shared)
// that runs unmodified on the simulator with LD_LIBRARY_PATH=<build>/sim.
// It launches two kernels with <<<...>>> and reads CUPTI kernel records back:
// both mangled kernel names must appear, with the correlation id of their
// launch and the stream they ran on.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cupti.h>

__global__ void scale(float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        a[i] *= 2;
}

__global__ void add_one(float *a) { a[0] += 1; }

static int seen_scale, seen_add_one;

static void CUPTIAPI on_request(uint8_t **buffer, size_t *size, size_t *max)
{
    *size = 64 * 1024;
    *buffer = (uint8_t *)aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid)
{
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            continue;
        CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
        printf("kernel %s grid %d block %d correlation %u stream %u %llu ns\n", k->name, k->gridX,
               k->blockX, k->correlationId, k->streamId, (unsigned long long)(k->end - k->start));
        seen_scale += strcmp(k->name, "_Z5scalePfi") == 0;
        seen_add_one += strcmp(k->name, "_Z7add_onePf") == 0;
    }
    free(buffer);
}

int main()
{
    cuptiActivityRegisterCallbacks(on_request, on_complete);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        printf("no device\n");
        return 1;
    }
    printf("device: %s\n", prop.name);
    float *d;
    cudaMalloc(&d, 1 << 20);
    cudaStream_t s;
    cudaStreamCreate(&s);
    scale<<<1024, 256>>>(d, 1 << 18);
    add_one<<<1, 1, 0, s>>>(d);
    cudaDeviceSynchronize();
    cudaError_t err = cudaGetLastError();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cudaFree(d);
    printf("%s, scale seen %d, add_one seen %d\n", cudaGetErrorString(err), seen_scale, seen_add_one);
    return err == cudaSuccess && seen_scale == 1 && seen_add_one == 1 ? 0 : 1;
}
