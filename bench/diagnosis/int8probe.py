"""Time torch._int_mm with B row-major and column-major (and fp16 beside it): why optlog calibrate
lays int8 B out column-major (docs/gpu-proof/diagnosis/2026-12-06-h100/). Run on the GPU machine."""
import torch, time
def bench(fn, n=20):
    for _ in range(3): fn()
    torch.cuda.synchronize(); t=time.perf_counter()
    for _ in range(n): fn()
    torch.cuda.synchronize(); return (time.perf_counter()-t)/n
for s in (4096, 8192, 16384):
    A=torch.randint(-64,64,(s,s),device='cuda',dtype=torch.int8)
    Br=torch.randint(-64,64,(s,s),device='cuda',dtype=torch.int8)
    Bc=torch.randint(-64,64,(s,s),device='cuda',dtype=torch.int8).t()
    for name,B in (("B row-major",Br),("B column-major",Bc)):
        dt=bench(lambda: torch._int_mm(A,B))
        print(s, name, f"{2*s**3/dt/1e12:.1f} TOPS")
    h=A.half(); hb=Br.half()
    print(s, "fp16", f"{2*s**3/bench(lambda: h@hb)/1e12:.1f} TFLOPS")
