import numpy as np, time, sys
rng = np.random.default_rng(0)
x = rng.uniform(-2, 2, (4096, 4096)).astype(np.float32)
xh = x.astype(np.float16); xi = (x * 50).astype(np.int32); xd = x.astype(np.float64)
def softmax(a, ax):
    e = np.exp(a - a.max(ax, keepdims=True)); return e / e.sum(ax, keepdims=True)
def lse(a, ax):
    m = a.max(ax, keepdims=True); return np.log(np.exp(a - m).sum(ax)) + m[:, 0]
rows = {
 "sum_all": lambda: x.sum(), "sum_rows": lambda: x.sum(-1), "sum_cols": lambda: x.sum(0),
 "max_rows": lambda: x.max(-1), "max_cols": lambda: x.max(0),
 "softmax_rows": lambda: softmax(x, -1), "softmax_cols": lambda: softmax(x, 0),
 "logsumexp_rows": lambda: lse(x, -1), "argmax_rows": lambda: x.argmax(-1), "argmax_cols": lambda: x.argmax(0),
 "mean_all": lambda: x.mean(), "var_rows": lambda: x.var(-1),
 "sum_all_f16": lambda: xh.sum(), "sum_all_i32": lambda: xi.sum(), "sum_all_f64": lambda: xd.sum(),
 "sum_all_T": lambda: x.T.sum(), "sum_axis01_3d": lambda: x.reshape(64, 64, 4096).sum((0, 2)),
 "all_rows": lambda: x.all(-1),
}
only = sys.argv[1] if len(sys.argv) > 1 else ""
for name, f in rows.items():
    if only and name not in only: continue
    t = []
    for i in range(17):
        s = time.perf_counter(); f(); e = time.perf_counter()
        if i >= 2: t.append((e - s) * 1e3)
    t.sort(); print(name, "%.3f" % t[len(t)//2], flush=True)
