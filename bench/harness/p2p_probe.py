"""How the GPUs of a machine are linked, read from PyTorch: peer access between every
pair and the time of device-to-device copies of face-sized and large buffers (CUDA
events, the median of 20 after 5 warm-ups). Prints one line per pair and size."""
import torch

n = torch.cuda.device_count()
print(f"GPUs: {n}")
for a in range(n):
    print("peer access from", a, [torch.cuda.can_device_access_peer(a, b) for b in range(n) if b != a])
sizes = [786_432, 3 << 20, 64 << 20]
for a, b in [(0, 1), (0, n - 1)] if n > 1 else []:
    for size in sizes:
        src = torch.empty(size, dtype=torch.uint8, device=f"cuda:{a}")
        dst = torch.empty(size, dtype=torch.uint8, device=f"cuda:{b}")
        times = []
        for i in range(25):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.device(a):
                start.record()
                dst.copy_(src, non_blocking=True)
                stop.record()
            torch.cuda.synchronize(a)
            torch.cuda.synchronize(b)
            if i >= 5:
                times.append(start.elapsed_time(stop) * 1e3)
        t = sorted(times)[len(times) // 2]
        print(f"copy {a}->{b} {size / 2**20:8.2f} MiB: {t:9.1f} us  {size / t / 1e3:7.1f} GB/s")
