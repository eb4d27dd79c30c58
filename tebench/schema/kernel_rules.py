"""The one table of kernel-name rules: which category a GPU kernel's time belongs to, and a GEMM's precision.

Rules are regular expressions over the lower-cased kernel name, tried in order;
the first that matches decides. They were written against the kernel names
recorded on an H200 (``tests/fixtures/kernels/h200.json``) and are tested on
them: cuBLASLt's Hopper GEMMs are ``nvjet_sm90_tst_*`` in BF16 and
``nvjet_sm90_qqtst_*``/``qrtst_*`` in FP8 (the ``q`` marks quantized inputs), so
a name test for "e4m3" alone would count most FP8 GEMMs as BF16. Records keep
the kernels by name, so a better table re-classifies stored runs when their
report is rendered again.
"""

from __future__ import annotations

import re
from functools import lru_cache

RULES_VERSION = "2026-12-02.2"

CATEGORIES: tuple[tuple[str, str, str], ...] = (
    # (key, label, colour)
    ("gemm_fp32", "GEMM fp32/tf32", "#08306b"),
    ("gemm_bf16", "GEMM bf16/fp16", "#2171b5"),
    ("gemm_fp8", "GEMM fp8", "#6baed6"),
    ("gemm_fp4", "GEMM fp4", "#c6dbef"),
    ("gemm_unknown", "GEMM (precision unknown)", "#9ecae1"),
    ("attention", "attention", "#2ca02c"),
    ("fp8_cast", "FP8 quantize/cast/transpose/amax", "#d62728"),
    ("norm", "normalization", "#9467bd"),
    ("elementwise", "element-wise and activations", "#ff7f0e"),
    ("optimizer", "optimizer", "#8c564b"),
    ("communication", "communication (NCCL)", "#e377c2"),
    ("memory", "memory copies and sets", "#bcbd22"),
    ("other", "other", "#7f7f7f"),
)
"""Every category, in the order reports stack them; idle time is added after them."""
LABELS = {key: label for key, label, _ in CATEGORIES}
COLORS = {key: color for key, _, color in CATEGORIES}
GEMM_PRECISIONS = ("fp32", "bf16", "fp8", "fp4", "unknown")

ANNOTATION = "annotation"
"""Not a kernel (a record_function region on the GPU timeline): left out of every sum."""

_GEMM = r"nvjet|gemm|xmma|wgmma_|cutlass|cublas|matmul|triton_tem_fused_(?:mm|addmm|bmm)|_mm_kernel"
_PRECISION: tuple[tuple[str, str], ...] = (
    ("fp4", r"e2m1|nvfp4|fp4|f4f4"),
    ("fp8", r"nvjet_sm\d+_q|e4m3|e5m2|fp8|f8f8|f8_|_f8"),
    ("bf16", r"nvjet_sm\d+_(?:tst|hst|bst)|bf16|bfloat16|f16|fp16|half|hgemm|bgemm|_h884|_h1688|_h16816|s16816gemm_bf16"),
    ("fp32", r"sgemm|tf32|f32f32|fp32|nvjet_sm\d+_sst|_s1688|_s884|cutlass_80_simt|splitkreduce_kernel<\d+, \d+, int, float, float"),
)
_CAST_OPS = ("_to_copy|_scaled_mm|abs|amax|max|clamp|clone|mul|reciprocal|t|view|transpose|exp2|floor|log2|stack"
             "|sum|new_ones|div|permute|expand|unsqueeze|fill|copy|where|full|zeros|ones|lift_fresh")
_INDUCTOR_CAST = (r"^triton_(?:poi|red|per)_fused_(?=.*(?:amax|abs_max|_scaled_mm|exp2_floor_log2))"
                  rf"(?:_?(?:{_CAST_OPS}))+_\d+$")
_RULES: tuple[tuple[str, str], ...] = (
    # "Optimizer.step#AdamW.step", "ProfilerStep#3": a dotted name around '#' (C++ lambdas have
    # "{lambda()#3}" inside a signature, with spaces and brackets).
    (ANNOTATION, r"^[a-z_][\w.]*#[\w.]*$"),
    ("communication", r"nccl"),
    ("memory", r"^memcpy|^memset"),
    ("attention", r"flash|fmha|sdpa|attention|_attn|cudnn::fusion|dot_do_o|convert_dq"),
    ("gemm", _GEMM),
    # Inductor's kernels (torch.compile, torchao's float8) are named by the ops fused into them. One made
    # only of the scaling ops (amax, scale, clamp, cast: torchao's dynamic scaling) is FP8's own work;
    # one that also holds a norm or an activation is that work, as TE's fused casts are.
    ("fp8_cast", _INDUCTOR_CAST),
    # A norm or an activation that writes FP8 (TE fuses the cast into it) is the norm's or the
    # activation's work: it runs in BF16 too. Casts, transposes and amax/scale bookkeeping are FP8's own.
    ("norm", r"norm|welford|ln_fwd|ln_bwd|rmsnorm|gammabeta"),
    ("elementwise", r"^triton_(?:poi|red|per)_fused"),
    ("elementwise", r"transformer_engine::(?:d?gated_act|unary(?:_grad)?_kernel<[^&]*&\(float transformer_engine::"
                    r"(?:d?gelu|d?silu|d?relu|d?qgelu|d?srelu))"),
    ("fp8_cast", r"transformer_engine.*(?:cast|transpose|quantiz|amax|scale)|cast_transpose|quantiz|amax"
                 r"|e4m3|e5m2|fp8|compute_scale|delayed_scaling|scale_inv"),
    ("optimizer", r"adam|fusedoptimizer|fused_optimizer|multi_tensor_apply|sgd_|_sgd|lamb_|_lamb\b"),
    ("elementwise", r"elementwise|vectorized|unrolled|gelu|silu|swiglu|relu|softmax|dropout|reduce|cross_entropy"
                    r"|nll_loss|embedding|index|gather|scatter|copy|fill|cat_|catarray|triton_(?:poi|red|per)_"
                    r"|activation|bias|where|arange|sum_|mean|cumsum|distribution|sort|topk|pow|sqrt"
                    r"|grad_weight|segment|unique_by_key|cub::|scan|rope|triu|tril"),
)
_COMPILED = tuple((key, re.compile(rx)) for key, rx in _RULES)
_PRECISION_COMPILED = tuple((key, re.compile(rx)) for key, rx in _PRECISION)


@lru_cache(maxsize=4096)
def classify(name: str) -> str:
    """The category key of kernel ``name`` (one of :data:`CATEGORIES`' keys, or :data:`ANNOTATION`)."""
    low = name.lower()
    for key, rx in _COMPILED:
        if rx.search(low):
            return f"gemm_{gemm_precision(low)}" if key == "gemm" else key
    return "other"


def gemm_precision(name: str) -> str:
    """The precision of a GEMM kernel from its name: fp32 (incl. tf32), bf16 (incl. fp16), fp8, fp4 or unknown."""
    low = name.lower()
    for key, rx in _PRECISION_COMPILED:
        if rx.search(low):
            return key
    return "unknown"
