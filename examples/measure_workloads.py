"""Workloads for ``interfpred measure`` beyond torchvision's models, given as ``file.py:function:BATCH[:DTYPE]``.

Each function takes ``(batch_size, dtype, device)`` and returns a function of no arguments that
runs one batch on inputs allocated once, here; ``interfpred measure`` captures that batch as a
CUDA graph. Together with torchvision models they span the kinds of batch that share a GPU
differently: many short kernels (a transformer encoder), weight-read-bound matrix-vector products
(one decode step of a large language model), one long memory-bound kernel (STREAM triad) and one
long compute-bound kernel (a large matrix product).

    interfpred measure --workload resnet50:8 --workload examples/measure_workloads.py:bert_base:8 \\
        --workload examples/measure_workloads.py:gemm:1:bf16 --out campaign

Weights are random: the shapes, not the values, decide the kernels.
"""

from __future__ import annotations

from typing import Any


def bert_base(batch_size: int, dtype: Any, device: Any) -> Any:
    """A 12-layer transformer encoder of BERT-base shape (d=768, 12 heads, ffn 3072), sequence 128."""
    import torch

    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, activation="gelu")
    net = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).to(device=device, dtype=dtype).eval()
    x = torch.randn(batch_size, 128, 768, device=device, dtype=dtype)

    def batch() -> Any:
        with torch.no_grad():
            return net(x)
    return batch


def llm_decode(batch_size: int, dtype: Any, device: Any) -> Any:
    """One decode step of ``batch_size`` sequences through 8 layers of a 7B-class stack (d=4096, ffn 11008)."""
    import torch

    d, f, layers = 4096, 11008, 8
    ws = [tuple(torch.randn(*shape, device=device, dtype=dtype) * 0.01
                for shape in ((d, 3 * d), (d, d), (d, 2 * f), (f, d))) for _ in range(layers)]
    x = torch.randn(batch_size, d, device=device, dtype=dtype)

    def batch() -> Any:
        h = x
        for wqkv, wo, wup, wdown in ws:
            h = h + (h @ wqkv)[:, :d] @ wo
            u = h @ wup
            h = h + (torch.nn.functional.silu(u[:, :f]) * u[:, f:]) @ wdown
        return h
    return batch


def triad(batch_size: int, dtype: Any, device: Any) -> Any:
    """STREAM triad a = b + 1.5 c over 2^28 elements per batch item: one long memory-bound kernel."""
    import torch

    n = batch_size << 28
    a = torch.empty(n, device=device, dtype=dtype)
    b = torch.rand(n, device=device, dtype=dtype)
    c = torch.rand(n, device=device, dtype=dtype)

    def batch() -> Any:
        return torch.add(b, c, alpha=1.5, out=a)
    return batch


def gemm(batch_size: int, dtype: Any, device: Any) -> Any:
    """``batch_size`` products of two 8192 x 8192 matrices: long compute-bound kernels."""
    import torch

    a = torch.randn(batch_size, 8192, 8192, device=device, dtype=dtype)
    b = torch.randn(batch_size, 8192, 8192, device=device, dtype=dtype)
    out = torch.empty(batch_size, 8192, 8192, device=device, dtype=dtype)

    def batch() -> Any:
        return torch.matmul(a, b, out=out)
    return batch
