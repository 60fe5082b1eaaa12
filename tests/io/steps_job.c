/*
 * steps_job.c - a training loop with NVTX step markers and one forked
 * data-loader worker: STEPS times, push a range named "step", read FILE N
 * times in the main process, have the worker read it N times, pop.  The
 * worker is forked before the first step, as DataLoader workers are.
 * Usage: steps_job STEPS N FILE   (run with NVTX_INJECTION64_PATH set)
 */
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void read_n_times(const char *file, int n)
{
    int fd = open(file, O_RDONLY);
    char c;
    for (int i = 0; i < n && fd >= 0; i++)
        if (read(fd, &c, 1) != 1)
            break;
    close(fd);
}

/* The worker: one token in, N reads, one token out; stop at end of file. */
static void worker(int in, int out, int n, const char *file)
{
    char c;
    while (read(in, &c, 1) == 1) {
        read_n_times(file, n);
        if (write(out, &c, 1) != 1)
            break;
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int steps = atoi(argv[1]), n = atoi(argv[2]);
    int to_worker[2], from_worker[2];
    if (pipe(to_worker) != 0 || pipe(from_worker) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        close(to_worker[1]);
        close(from_worker[0]);
        worker(to_worker[0], from_worker[1], n, argv[3]);
    }
    close(to_worker[0]);
    close(from_worker[1]);
    for (int s = 1; s <= steps; s++) {
        nvtxRangePushA("step");
        read_n_times(argv[3], n);
        char c = 's';
        if (write(to_worker[1], &c, 1) != 1 || read(from_worker[0], &c, 1) != 1)
            return 1;
        nvtxRangePop();
    }
    close(to_worker[1]);
    waitpid(pid, NULL, 0);
    printf("main %d\nworker %d\n", (int)getpid(), (int)pid);
    return 0;
}
